"""minisched.messaging.incoming: the rate-limited log, the rabbit driver's size and decoding
checks, and TLS files named in the driver's connection errors."""
import json
import logging
import types
from unittest import mock

import pytest
from kombu import message as kombu_message
from oslo_config import cfg
from oslo_messaging._drivers import impl_rabbit

from minisched import rpc
from minisched.messaging import incoming as rpc_incoming
from minisched.messaging import incoming_log
from minisched.messaging import large_messages
from minisched.messaging import monitored_dispatcher

LOG = logging.getLogger('test.limiter')


class _Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def limiter():
    """A LogLimiter with a 60 s interval, a hand-moved clock and timers kept in ``timers``."""
    clock = _Clock()
    timers = []
    made = incoming_log.LogLimiter(LOG, 60.0, clock=clock,
                          start_timer=lambda delay, flush: timers.append((delay, flush)))
    made.clock, made.timers = clock, timers
    return made


def _lines(caplog, level=logging.WARNING):
    return [r.getMessage() for r in caplog.records if r.levelno == level]


def test_limiter_logs_the_first_then_counts_and_reports_the_count(limiter, caplog):
    with caplog.at_level(logging.DEBUG, logger='test.limiter'):
        assert limiter.log('k', logging.WARNING, 'bad things', 'bad %d', 1) is True
        limiter.clock.now += 10
        for n in range(2, 6):
            assert limiter.log('k', logging.WARNING, 'bad things', 'bad %d', n) is False
        assert [delay for delay, _ in limiter.timers] == [50.0]  # one flush, at 60 s
        limiter.clock.now += 50
        limiter.timers.pop()[1]()
    assert _lines(caplog) == ['bad 1', '4 more bad things in the last 60 s (one line per 60 s)']
    assert _lines(caplog, logging.DEBUG) == ['bad 2', 'bad 3', 'bad 4', 'bad 5']


def test_limiter_logs_in_full_again_after_a_quiet_interval(limiter, caplog):
    with caplog.at_level(logging.WARNING, logger='test.limiter'):
        limiter.log('k', logging.WARNING, 'x', 'first')
        limiter.clock.now += 59
        limiter.log('k', logging.WARNING, 'x', 'counted')
        limiter.clock.now += 1
        limiter.timers.pop()[1]()           # "1 more x": the kind was seen at 60 s
        limiter.clock.now += 30
        limiter.log('k', logging.WARNING, 'x', 'counted again')  # within 60 s of that line
        limiter.clock.now += 30
        limiter.timers.pop()[1]()
        limiter.clock.now += 61
        limiter.log('k', logging.WARNING, 'x', 'after a quiet minute')
        limiter.log('other', logging.WARNING, 'y', 'another kind')
    assert _lines(caplog) == ['first', '1 more x in the last 60 s (one line per 60 s)',
                              '1 more x in the last 60 s (one line per 60 s)',
                              'after a quiet minute', 'another kind']


def test_limiter_keeps_a_bounded_number_of_kinds(limiter, monkeypatch):
    monkeypatch.setattr(incoming_log.LogLimiter, 'MAX_KINDS', 3)
    for key in range(10):
        limiter.log(key, logging.WARNING, 'x', 'line')
    assert len(limiter._kinds) <= 3


def test_limiter_starts_afresh_in_a_forked_worker(limiter, monkeypatch):
    limiter.log('k', logging.WARNING, 'x', 'in the parent')
    monkeypatch.setattr(rpc.os, 'getpid', lambda: -1)
    assert limiter.log('k', logging.WARNING, 'x', 'in the child') is True


# -- the rabbit driver's consumer callback ---------------------------------------------------

def _envelope(message):
    return json.dumps({'oslo.version': '2.0', 'oslo.message': json.dumps(message)}).encode()


def _delivery(body, content_type='application/json'):
    return kombu_message.Message(body=body, channel=mock.Mock(), delivery_tag=7,
                                 content_type=content_type, delivery_info={})


@pytest.fixture
def consumer(monkeypatch):
    """A stand-in of impl_rabbit.Consumer for ``_checked_callback``: ``received`` is what
    oslo.messaging's listener would get."""
    rpc_incoming._guard_rabbit_consumers()
    monkeypatch.setattr(incoming_log, 'INCOMING_LOG',
                        incoming_log.LogLimiter(incoming_log.LOG, 60.0))
    monkeypatch.setitem(rpc_incoming._incoming, 'max_bytes', 1000)
    monkeypatch.setitem(rpc_incoming._incoming, 'max_mb', 0)
    received = []
    return types.SimpleNamespace(queue_name='scheduler', rabbit_stream_fanout=False,
                                 queue=types.SimpleNamespace(channel=None),
                                 callback=received.append, received=received)


def test_the_driver_uses_the_checks_once_installed():
    rpc_incoming._guard_rabbit_consumers()
    rpc_incoming._guard_rabbit_consumers()  # idempotent
    assert impl_rabbit.Consumer._callback is rpc_incoming._checked_callback
    assert impl_rabbit.RabbitMessage is rpc_incoming._CheckedRabbitMessage
    assert rpc_incoming._original_callback is not rpc_incoming._checked_callback


def test_a_valid_message_reaches_the_listener(consumer):
    delivery = _delivery(_envelope({'method': 'm', 'args': {}}))
    rpc_incoming._checked_callback(consumer, delivery)
    assert consumer.received == [{'method': 'm', 'args': {}}]
    assert consumer.received[0].size == len(delivery.body)
    delivery.channel.basic_ack.assert_not_called()  # acknowledged later, by the server


def test_a_message_over_the_limit_is_acked_and_logged_without_decoding(consumer, caplog):
    delivery = _delivery(b'{"x": "' + b'y' * 2000 + b'"}')
    with mock.patch.object(kombu_message.Message, 'payload', new_callable=mock.PropertyMock) \
            as payload, caplog.at_level(logging.WARNING, logger='minisched.rpc'):
        rpc_incoming._checked_callback(consumer, delivery)
    payload.assert_not_called()
    assert consumer.received == []
    delivery.channel.basic_ack.assert_called_once_with(7)
    assert _lines(caplog) == [
        'Dropped a message of 2009 bytes from queue scheduler (too large): larger than '
        '[DEFAULT] rpc_max_message_size_mb = 0 (1000 bytes); not decoded']


def test_replies_are_not_limited(consumer):
    consumer.queue_name = 'reply_0123'
    rpc_incoming._checked_callback(consumer, _delivery(_envelope({'result': 'y' * 2000})))
    assert consumer.received == [{'result': 'y' * 2000}]


@pytest.mark.parametrize('body, content_type, kind, reason', [
    (b'\x00\xffnot json', 'application/json', 'not JSON', "'utf-8' codec can't decode"),
    (b'{"a": ', 'application/json', 'not JSON', 'Expecting value'),
    (b'[' * 100000 + b']' * 100000, 'application/json', 'not JSON',
     'maximum recursion depth exceeded'),
    (b'{"oslo.version": "2.0", "oslo.message": "' + b'[' * 100000 + b'"}', 'application/json',
     'bad envelope', 'nested too deeply'),
    (b'{}', 'application/x-python-serialize', 'not JSON', "content type "
                                                           "'application/x-python-serialize'"),
    (b'[1, 2]', 'application/json', 'not a message', 'a JSON list, not an object'),
    (b'{"oslo.version": "9.0", "oslo.message": "{}"}', 'application/json', 'bad envelope',
     'UnsupportedRpcEnvelopeVersion'),
    (b'{"oslo.version": "2.0", "oslo.message": "nope"}', 'application/json', 'bad envelope',
     'JSONDecodeError'),
], ids=['binary', 'truncated', 'deep', 'deep-envelope', 'pickle', 'list', 'envelope-version',
        'envelope-not-json'])
def test_undecodable_bodies_are_acked_with_one_line_and_no_traceback(consumer, caplog, body,
                                                                      content_type, kind,
                                                                      reason):
    delivery = _delivery(body, content_type)
    consumer.queue_name = 'compute.c1'
    rpc_incoming._incoming['max_bytes'] = 0  # no limit: the deep one is larger than 1000 bytes
    with caplog.at_level(logging.DEBUG):
        rpc_incoming._checked_callback(consumer, delivery)
    assert consumer.received == []
    delivery.channel.basic_ack.assert_called_once_with(7)
    [line] = _lines(caplog)
    assert line.startswith('Dropped a message of %d bytes from queue compute.c1 (%s): '
                           % (len(body), kind)), line
    assert reason in line
    assert not any(r.exc_info for r in caplog.records)
    assert 'Failed to process message' not in caplog.text


def test_a_large_message_lets_go_of_its_body_once_decoded(consumer):
    consumer.queue_name = 'reply_0123'  # no limit
    delivery = _delivery(_envelope({'args': {'blob': 'z' * large_messages.LARGE_MESSAGE_BYTES}}))
    rpc_incoming._checked_callback(consumer, delivery)
    assert consumer.received[0]['args']['blob'] == 'z' * large_messages.LARGE_MESSAGE_BYTES
    assert delivery.body == b'' and delivery._decoded_cache is None


def test_init_reads_the_size_limit_option(monkeypatch):
    conf = cfg.ConfigOpts()
    conf.register_opt(cfg.IntOpt('rpc_max_message_size_mb', default=3))
    conf([], default_config_files=[], default_config_dirs=[])
    monkeypatch.setattr(rpc_incoming, '_incoming', dict(rpc_incoming._incoming))
    rpc_incoming._configure_incoming(conf)
    assert rpc_incoming._incoming == {'max_bytes': 3 * 1024 * 1024, 'max_mb': 3}
    rpc_incoming._configure_incoming(cfg.ConfigOpts())  # not registered: the default
    assert rpc_incoming._incoming['max_mb'] == rpc_incoming.DEFAULT_MAX_MESSAGE_SIZE_MB


# -- TLS files in the driver's connection errors ---------------------------------------------

def test_tls_connection_errors_name_the_files(caplog):
    conf = cfg.ConfigOpts()
    conf.register_opts([cfg.BoolOpt('ssl', default=True),
                        cfg.StrOpt('ssl_ca_file', default='/etc/ms/ca.pem'),
                        cfg.StrOpt('ssl_cert_file', default=''),
                        cfg.StrOpt('ssl_key_file', default='')],
                       group='oslo_messaging_rabbit')
    conf([], default_config_files=[], default_config_dirs=[])
    logger = impl_rabbit.LOG.logger
    rpc_incoming._name_tls_files_in_connection_errors(conf)
    rpc_incoming._name_tls_files_in_connection_errors(conf)  # replaces, does not stack
    try:
        assert len([f for f in logger.filters if isinstance(f, rpc_incoming._TLSFilesNamed)]) == 1
        with caplog.at_level(logging.INFO, logger=logger.name):
            impl_rabbit.LOG.error('Connection failed: %s (retrying in %s seconds)',
                                  '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed',
                                  3.0)
            impl_rabbit.LOG.error('Connection failed: %s (retrying in %s seconds)',
                                  '[Errno 111] Connection refused', 1.0)
    finally:
        conf.set_override('ssl', False, group='oslo_messaging_rabbit')
        rpc_incoming._name_tls_files_in_connection_errors(conf)
    assert not [f for f in logger.filters if isinstance(f, rpc_incoming._TLSFilesNamed)]
    assert _lines(caplog, logging.ERROR) == [
        'Connection failed: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed '
        '(retrying in 3.0 seconds) [TLS files: ssl_ca_file = /etc/ms/ca.pem]',
        'Connection failed: [Errno 111] Connection refused (retrying in 1.0 seconds)']


def test_replayed_messages_are_one_rate_limited_warning_without_traceback(consumer, caplog):
    from oslo_messaging._drivers import amqpdriver
    from oslo_messaging._drivers import common as driver_common
    assert any(isinstance(f, rpc_incoming._DuplicatesRateLimited) for f in amqpdriver.LOG.filters)
    with caplog.at_level(logging.DEBUG):
        for _ in range(3):
            try:
                raise driver_common.DuplicateMessageError(msg_id='0123abc')
            except driver_common.DuplicateMessageError:
                amqpdriver.LOG.exception('ignoring duplicate message %s', None)
    assert _lines(caplog, logging.ERROR) == []
    assert _lines(caplog) == ['Dropped a duplicate message: Found duplicate '
                              'message(0123abc). Skipping it.']
    assert len(_lines(caplog, logging.DEBUG)) == 2


def _collection():
    """A _DeferredCollection on a clock of the test's: ``(collection, timers started,
    calls made, [now])``."""
    timers, calls, now = [], [], [100.0]
    collection = large_messages._DeferredCollection(
        start_timer=lambda delay, run: timers.append((delay, run)),
        collect=lambda: calls.append('collect'), trim=lambda: calls.append('trim'),
        clock=lambda: now[0])
    return collection, timers, calls, now


def test_one_collection_then_a_trim_follow_large_messages_once_they_are_freed():
    collection, timers, calls, now = _collection()
    collection.schedule()
    collection.schedule()  # one pending: not a second
    assert [delay for delay, _ in timers] == [large_messages._DeferredCollection.DELAY]
    now[0] += large_messages._DeferredCollection.DELAY
    timers.pop()[1]()
    assert calls == ['collect', 'trim']
    collection.schedule()
    assert len(timers) == 1


def test_a_collection_runs_a_delay_after_the_last_large_message_not_the_first():
    collection, timers, calls, now = _collection()
    delay = large_messages._DeferredCollection.DELAY
    collection.schedule()
    now[0] += delay * 0.75
    collection.schedule()  # a second message while the first one's timer runs
    now[0] += delay * 0.25
    timers.pop(0)[1]()  # the first timer fires: too early for the second message
    assert calls == []
    assert [wait for wait, _ in timers] == [pytest.approx(delay * 0.75)]
    now[0] += delay * 0.75
    timers.pop(0)[1]()
    assert calls == ['collect', 'trim'] and timers == []


def test_malloc_trim_is_glibcs_and_returns_its_answer():
    trim = large_messages._malloc_trim()
    # glibc here: 1 when memory was given back to the system, else 0; never None.
    assert trim() in (0, 1)


def test_a_large_message_is_cleared_after_dispatch_and_collected(monkeypatch):
    import oslo_messaging as messaging

    class Endpoint:
        target = messaging.Target(version='1.0')

        def take(self, ctxt, blob):
            return len(blob)

    scheduled = []
    monkeypatch.setattr(large_messages, 'COLLECTION', types.SimpleNamespace(
        schedule=lambda: scheduled.append(1)))
    dispatcher = monitored_dispatcher.MonitoredDispatcher([Endpoint()], None, None, topic='t')
    for size, cleared in ((large_messages.LARGE_MESSAGE_BYTES, True), (100, False)):
        message = rpc_incoming._CheckedRabbitMessage.__new__(rpc_incoming._CheckedRabbitMessage)
        dict.__init__(message, method='take', args={'blob': 'x'}, version='1.0')
        message.size = size
        incoming = types.SimpleNamespace(message=message, ctxt={}, client_timeout=None)
        assert dispatcher.dispatch(incoming) == 1
        assert (message == {}) is cleared
    assert scheduled == [1]


def test_init_sets_the_listeners_poll_floor(monkeypatch, caplog):
    from oslo_messaging._drivers import amqpdriver
    monkeypatch.setattr(amqpdriver, 'ACK_REQUEUE_EVERY_SECONDS_MIN', 0.001)
    monkeypatch.setattr(amqpdriver, 'ACK_REQUEUE_EVERY_SECONDS_MAX', 5.0)
    conf = cfg.ConfigOpts()
    conf.register_opt(cfg.IntOpt('rpc_poll_floor_ms', default=20))
    conf([], default_config_files=[], default_config_dirs=[])
    rpc_incoming._set_poll_floor(conf)
    assert amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN == 0.02
    # The longest wait, which a stopping service waits out per listener: 1 s, not 5.
    assert amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MAX == rpc_incoming.POLL_CEILING_SECONDS == 1.0
    conf.set_override('rpc_poll_floor_ms', 3000)
    rpc_incoming._set_poll_floor(conf)
    assert amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN == 1.0
    rpc_incoming._set_poll_floor(cfg.ConfigOpts())  # not registered: the default
    assert amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN == rpc_incoming.DEFAULT_POLL_FLOOR_MS / 1e3
    # An oslo.messaging without the constant: nothing set, and a warning says so.
    monkeypatch.delattr(amqpdriver, 'ACK_REQUEUE_EVERY_SECONDS_MIN')
    rpc_incoming.check_private_hooks()
    rpc_incoming._set_poll_floor(conf)
    assert not hasattr(amqpdriver, 'ACK_REQUEUE_EVERY_SECONDS_MIN')
    assert ('has no amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN ([DEFAULT] rpc_poll_floor_ms): '
            'that option has no effect') in caplog.text
