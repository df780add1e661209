"""minisched.messaging.monitored_dispatcher.MonitoredDispatcher: malformed messages refused up
front with one line, others dispatched."""
import logging
from unittest import mock

import oslo_messaging as messaging
import pytest

from minisched import exception
from minisched import objects
from minisched import rpc
from minisched.messaging import incoming_log
from minisched.messaging import monitored_dispatcher
from tests.unit import base


def _nested(depth):
    """``depth`` levels of lists and dicts around a string."""
    value = 'x'
    for level in range(depth):
        value = [value] if level % 2 else {'n': value}
    return value


class _Endpoint:
    target = messaging.Target(version='1.0')

    def __init__(self):
        self.received = []

    def take(self, ctxt, value):
        self.received.append(value)
        return 'ok'


class _Incoming:
    """What the dispatcher reads of an AMQPIncomingMessage."""

    def __init__(self, args, client_timeout=None):
        self.ctxt = {'request_id': 'req-0123'}
        self.message = {'method': 'take', 'args': args, 'version': '1.0'}
        self.client_timeout = client_timeout


@pytest.mark.parametrize('depth,deeper', [(1, False), (99, False), (100, False),
                                          (101, True), (5000, True)])
def test_nesting_depth_is_measured_without_recursion(depth, deeper):
    assert monitored_dispatcher._nesting_deeper_than(_nested(depth), 100) is deeper


def test_scalars_are_no_level_and_each_container_one():
    for value in (None, 'x', 1, [], {}, ['x'], {'a': 1}):
        assert not monitored_dispatcher._nesting_deeper_than(value, 1), value
    for value in ([[]], {'a': {}}, [{'a': 1}]):
        assert not monitored_dispatcher._nesting_deeper_than(value, 2), value
        assert monitored_dispatcher._nesting_deeper_than(value, 1), value


@pytest.fixture(autouse=True)
def fresh_log_limiter(monkeypatch):
    """A rate limiter of this test's own: earlier tests' reports do not silence its lines."""
    monkeypatch.setattr(incoming_log, 'INCOMING_LOG',
                        incoming_log.LogLimiter(incoming_log.LOG, 60.0))


def test_deep_arguments_are_refused_before_decoding(caplog):
    endpoint = _Endpoint()
    dispatcher = monitored_dispatcher.MonitoredDispatcher([endpoint], None, None)
    # {'value': <5000 levels>}: far past the interpreter's recursion limit when decoded.
    with caplog.at_level(logging.INFO, logger='minisched.rpc'):
        with pytest.raises(messaging.ExpectedException) as raised:
            dispatcher.dispatch(_Incoming({'value': _nested(5000)}))
    assert isinstance(raised.value.exc_info[1], exception.InvalidObjectRequest)
    assert 'nested deeper than 100 levels' in str(raised.value.exc_info[1])
    assert 'req-0123' in caplog.text and "'take'" in caplog.text
    assert endpoint.received == []


def test_arguments_within_the_limit_are_dispatched():
    endpoint = _Endpoint()
    dispatcher = monitored_dispatcher.MonitoredDispatcher([endpoint], None, None)
    value = _nested(90)
    assert dispatcher.dispatch(_Incoming({'value': value})) == 'ok'
    assert endpoint.received == [value]


class _Hidden:
    target = messaging.Target(version='1.3')

    def _private(self, ctxt):
        return 'private'


def _dispatcher(*endpoints):
    return monitored_dispatcher.MonitoredDispatcher(list(endpoints), None,
                                                    messaging.DefaultRPCAccessPolicy)


def test_endpoint_choice_follows_namespace_and_version():
    class Other:
        target = messaging.Target(namespace='other', version='2.0')

        def take(self, ctxt, value):
            return 'other'

    dispatcher = _dispatcher(Other(), _Endpoint())
    incoming = _Incoming({'value': 1})
    assert dispatcher.dispatch(incoming) == 'ok'  # Other: namespace 'other', not None
    incoming.message.update(namespace='other', version='2.0')
    assert dispatcher.dispatch(incoming) == 'other'


def test_unknown_method_and_version_are_answered_as_oslo_messaging_does():
    # The caller gets oslo.messaging's own errors, wrapped as expected (no server traceback).
    dispatcher = _dispatcher(_Endpoint(), _Hidden())
    incoming = _Incoming({})
    incoming.message.update(method='nothing')
    assert isinstance(_refusal(dispatcher, incoming), messaging.NoSuchMethod)
    incoming.message.update(method='_private', version='1.2')  # private: not allowed
    assert isinstance(_refusal(dispatcher, incoming), messaging.NoSuchMethod)
    incoming.message.update(method='take', version='3.0')
    assert isinstance(_refusal(dispatcher, incoming), messaging.UnsupportedVersion)


def _refusal(dispatcher, incoming):
    """The error ``dispatch`` answers ``incoming`` with (as an ExpectedException)."""
    with pytest.raises(messaging.ExpectedException) as raised:
        dispatcher.dispatch(incoming)
    return raised.value.exc_info[1]


def test_no_watchdog_thread_for_a_monitored_call(monkeypatch):
    started = []
    real_start = rpc.threading.Thread.start

    def counting_start(thread):
        started.append(thread.name)
        return real_start(thread)
    monkeypatch.setattr(rpc.threading.Thread, 'start', counting_start)
    dispatcher = _dispatcher(_Endpoint())
    for _ in range(3):
        assert dispatcher.dispatch(_Incoming({'value': 1}, client_timeout=60)) == 'ok'
    assert [name for name in started if name != 'call-monitor'] == []


# -- malformed messages: one WARNING, rate-limited, the error to the caller -------------------

class _Typed:
    """An endpoint whose RPC methods annotate what they take."""
    target = messaging.Target(version='1.0')

    def __init__(self):
        self.received = []

    def show(self, ctxt, instance: objects.Instance, bdms: list = None, flag=False):
        self.received.append(instance)
        return 'shown'

    def maybe(self, ctxt, spec: 'objects.RequestSpec | None', host: int | str = 0):
        return 'maybe'

    def anything(self, ctxt, **kwargs):
        return sorted(kwargs)

    def broken(self, ctxt):
        return {}['missing']


def _serializing_dispatcher(*endpoints):
    return monitored_dispatcher.MonitoredDispatcher(list(endpoints), rpc.get_serializer(),
                                                    messaging.DefaultRPCAccessPolicy,
                                                    topic='compute')


def _message(method, reply_q=None, **args):
    incoming = _Incoming(args)
    incoming.message['method'] = method
    incoming.reply_q = reply_q
    return incoming


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and r.name == 'minisched.rpc']


def test_unknown_method_gets_one_warning_naming_topic_method_and_request(caplog):
    dispatcher = _serializing_dispatcher(_Typed())
    with caplog.at_level(logging.DEBUG, logger='minisched.rpc'):
        for _ in range(5):
            assert isinstance(_refusal(dispatcher, _message('nothing')), messaging.NoSuchMethod)
    assert _warnings(caplog) == ["Rejected a malformed cast to compute (method 'nothing', "
                                 "request req-0123): no such method"]
    # The four repeats: counted, each with a DEBUG line of its own.
    assert sum('no such method' in r.getMessage() for r in caplog.records
               if r.levelno == logging.DEBUG) == 4
    assert 'Traceback' not in caplog.text


def test_arguments_of_another_type_than_annotated_are_refused_with_type_error(caplog):
    endpoint = _Typed()
    dispatcher = _serializing_dispatcher(endpoint)
    with caplog.at_level(logging.WARNING, logger='minisched.rpc'):
        error = _refusal(dispatcher, _message('show', reply_q='reply_x', instance='x'))
    assert isinstance(error, exception.Invalid)
    assert error.format_message() == "Bad request: show(): argument 'instance' is str, not " \
                                     "Instance"
    assert _warnings(caplog) == ["Rejected a malformed call to compute (method 'show', request "
                                 "req-0123): argument 'instance' is str, not Instance"]
    assert endpoint.received == []


def test_annotations_allow_none_where_the_default_or_the_union_does():
    endpoint = _Typed()
    dispatcher = _serializing_dispatcher(endpoint)
    instance = objects.Instance(uuid=base.uuids.instance)
    primitive = rpc.get_serializer().serialize_entity(None, instance)
    assert dispatcher.dispatch(_message('show', instance=primitive, bdms=None)) == 'shown'
    assert dispatcher.dispatch(_message('show', instance=primitive, bdms=[1])) == 'shown'
    assert endpoint.received[0].uuid == base.uuids.instance
    assert dispatcher.dispatch(_message('maybe', spec=None, host='h')) == 'maybe'
    assert isinstance(_refusal(dispatcher, _message('show', instance=primitive, bdms='x')),
                      exception.Invalid)
    assert isinstance(_refusal(dispatcher, _message('maybe', spec=None, host=1.5)),
                      exception.Invalid)


def test_argument_names_the_method_does_not_take_are_refused():
    dispatcher = _serializing_dispatcher(_Typed())
    error = _refusal(dispatcher, _message('show', instance=None, colour='red'))
    assert error.format_message() == "Bad request: show(): unexpected argument(s) 'colour'"
    assert _refusal(dispatcher, _message('show')).format_message() == \
        "Bad request: show(): missing argument(s) 'instance'"
    assert dispatcher.dispatch(_message('anything', a=1, b=2)) == ['a', 'b']


def test_an_object_that_does_not_load_is_one_warning_and_no_ovo_error(caplog):
    dispatcher = _serializing_dispatcher(_Typed())
    primitive = {'minisched_object.name': 'NoSuchThing', 'minisched_object.namespace':
                 'minisched', 'minisched_object.version': '1.0', 'minisched_object.data': {}}
    with caplog.at_level(logging.INFO):
        for _ in range(3):
            error = _refusal(dispatcher, _message('show', instance=primitive))
            assert isinstance(error, exception.UnsupportedObjectError)
    assert _warnings(caplog) == [
        "Rejected a malformed cast to compute (method 'show', request req-0123): argument "
        "'instance' does not load: Unsupported object type NoSuchThing"]
    # oslo.versionedobjects' own ERROR line per message is silenced while decoding.
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_shapes_no_endpoint_could_take_are_refused_with_precise_errors():
    dispatcher = _serializing_dispatcher(_Typed())
    for update, error_class in (({'method': ['show']}, messaging.NoSuchMethod),
                                ({'method': ''}, messaging.NoSuchMethod),
                                ({'version': 1.0}, messaging.UnsupportedVersion),
                                ({'namespace': 5}, messaging.UnsupportedVersion),
                                ({'version': 'x.y'}, messaging.UnsupportedVersion),
                                ({'args': [1, 2]}, exception.Invalid)):
        incoming = _message('show')
        incoming.message.update(update)
        error = _refusal(dispatcher, incoming)
        assert isinstance(error, error_class), (update, error)


def test_a_context_that_does_not_load_is_refused():
    dispatcher = _serializing_dispatcher(_Typed())
    incoming = _message('anything')
    incoming.ctxt = {'request_id': 'req-1', 'timestamp': 'not a time'}
    error = _refusal(dispatcher, incoming)
    assert isinstance(error, exception.Invalid)
    assert ("request context does not load: InvalidContext: Invalid request context: "
            "timestamp 'not a time' is not a date and time") in error.format_message()


class _CleaningUp(_Typed):
    """An endpoint told of the messages to its methods that were refused undecoded."""

    def __init__(self):
        super().__init__()
        self.refused = []

    def _clean_up_refused(self, method, args, reason):
        self.refused.append((method, args, reason))


def test_the_endpoint_cleans_up_after_a_message_refused_undecoded():
    endpoint = _CleaningUp()
    dispatcher = _serializing_dispatcher(endpoint)
    bad_context = _message('show', instance={'minisched_object.name': 'Instance'})
    bad_context.ctxt = {'request_id': 'req-1', 'read_deleted': 'sometimes'}
    _refusal(dispatcher, bad_context)
    bad_argument = _message('show', instance='not an instance')
    _refusal(dispatcher, bad_argument)
    assert [(m, a) for m, a, _reason in endpoint.refused] == [
        ('show', {'instance': {'minisched_object.name': 'Instance'}}),
        ('show', {'instance': 'not an instance'})]
    assert 'read_deleted' in endpoint.refused[0][2]
    # Unknown methods reach no endpoint; a message that loads is the method's to handle.
    _refusal(dispatcher, _message('nope'))
    dispatcher.dispatch(_message('show', instance=objects.Instance(uuid=base.uuids.i1)
                                 .obj_to_primitive()))
    assert len(endpoint.refused) == 2


def test_endpoint_failures_log_one_traceback_per_kind_then_a_count(caplog):
    pending = []
    limiter = incoming_log.LogLimiter(incoming_log.LOG, 60.0, start_timer=lambda delay, flush:
                             pending.append(flush))
    dispatcher = _serializing_dispatcher(_Typed())
    with caplog.at_level(logging.DEBUG, logger='minisched.rpc'):
        with mock.patch.object(incoming_log, 'INCOMING_LOG', limiter):
            for _ in range(4):
                assert isinstance(_refusal(dispatcher, _message('broken')), KeyError)
            pending.pop()()  # the interval is over
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 2 and errors[0].exc_info is not None and errors[1].exc_info is None
    assert errors[0].getMessage().startswith(
        "Exception during message handling (method 'broken' to compute, request req-0123)")
    assert errors[1].getMessage().startswith(
        '3 more failures of broken on compute like the one above (KeyError at ')


def test_garbage_method_names_make_one_kind_and_short_lines(caplog):
    dispatcher = _serializing_dispatcher(_Typed())
    with caplog.at_level(logging.WARNING, logger='minisched.rpc'):
        for index in range(100):
            incoming = _message('fuzz_%d_%s' % (index, 'x' * 10000), deep=_nested(500))
            assert isinstance(_refusal(dispatcher, incoming), messaging.NoSuchMethod)
        _refusal(dispatcher, _message(['y' * 10000]))
    [unknown, not_a_name] = _warnings(caplog)
    assert len(unknown) < 300 and len(not_a_name) < 300
    assert "(method 'fuzz_0_xxx" in unknown and '(10009 characters)' in unknown
    assert len(incoming_log.INCOMING_LOG._kinds) == 2
