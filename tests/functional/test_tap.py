"""``minisched-manage rpc tap`` against the real RabbitMQ, watching a real oslo.messaging RPC
server and client: it prints calls, casts and fanout casts (and, with the firehose, the
replies and their times), and the server still gets every message (the tap changes nothing).

Isolation: topic queues are named after the topic alone, per vhost, so every test uses a
topic and a control exchange of its own (``tap-test-<uuid hex>``). The reply-timing test also
needs a vhost of its own with the firehose on, made with ``rabbitmqctl`` (see
``MINISCHED_TEST_RABBITMQCTL`` below); without rabbitmqctl that test is skipped loudly.

Environment: ``MINISCHED_TEST_TRANSPORT_URL`` (default ``rabbit://guest:guest@127.0.0.1:5672/``);
``MINISCHED_TEST_RABBITMQCTL`` (command running rabbitmqctl for that broker, e.g.
``docker exec rabbitmq rabbitmqctl``; default ``rabbitmqctl`` for a local broker, empty: none);
``CI=true``: an unreachable broker fails the tests instead of skipping them.
"""
import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

import oslo_messaging
import pika
import pytest
from oslo_config import cfg
from oslo_messaging import conffixture
from pika import exceptions as pika_exc

from minisched import context, objects, rpc
from minisched.messaging import tap
from minisched.messaging import tap_events
from minisched.objects import base as obj_base

pytestmark = [pytest.mark.functional, pytest.mark.timeout(240)]

TRANSPORT_URL = (os.environ.get('MINISCHED_TEST_TRANSPORT_URL')
                 or 'rabbit://guest:guest@127.0.0.1:5672/')
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: Runs ``minisched-manage`` with the ``rpc`` category enabled (until manage.py lists it).
CLI = ("import sys\n"
       "from minisched.cmd import manage\n"
       "if 'rpc' not in manage.EXTRA_CATEGORIES:\n"
       "    manage.EXTRA_CATEGORIES = tuple(manage.EXTRA_CATEGORIES) + ('rpc',)\n"
       "sys.exit(manage.main(['minisched-manage'] + sys.argv[1:]))\n")
SERVER = 'tap-host'

objects.register_all()


def unavailable(message):
    """Skip with a loud ``message``, or fail under ``CI=true``."""
    message = '*** %s ***' % message
    if os.environ.get('CI', '').lower() == 'true':
        pytest.fail(message)
    pytest.skip(message)


def wait_for(predicate, timeout=30, message=None):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError('timed out after %ss waiting for %s (last value: %r)'
                                 % (timeout, message or predicate.__name__, value))
        time.sleep(0.05)


@pytest.fixture(scope='module')
def broker_url():
    try:
        pika.BlockingConnection(tap.connection_parameters(TRANSPORT_URL)).close()
    except Exception as exc:  # pika raises many unrelated classes for "not there"
        unavailable('RabbitMQ NOT AVAILABLE at %s (set MINISCHED_TEST_TRANSPORT_URL): %s'
                    % (tap.describe_url(TRANSPORT_URL), tap.describe_error(exc)))
    return TRANSPORT_URL


def _rabbitmqctl(url):
    command = os.environ.get('MINISCHED_TEST_RABBITMQCTL')
    if command is not None:
        return shlex.split(command) or None
    parsed = urllib.parse.urlsplit(url)
    if parsed.hostname in ('127.0.0.1', 'localhost', '::1') and shutil.which('rabbitmqctl'):
        return ['rabbitmqctl']
    return None


@pytest.fixture
def traced_url(broker_url):
    """A vhost of the test's own with the firehose on (``trace_on``): its transport URL."""
    command = _rabbitmqctl(broker_url)
    parsed = urllib.parse.urlsplit(broker_url)
    if command is None or parsed.path not in ('', '/'):
        pytest.skip('*** NO rabbitmqctl for %s (set MINISCHED_TEST_RABBITMQCTL): reply times '
                    'need the firehose on a vhost of the test\'s own ***'
                    % tap.describe_url(broker_url))
    name = 'tap-test-%s' % uuid.uuid4().hex
    user = urllib.parse.unquote(parsed.username or 'guest')

    def run(*args):
        return subprocess.run(command + ['-q'] + list(args), capture_output=True, text=True,
                              timeout=60, check=True)

    try:
        run('add_vhost', name)
        run('set_permissions', '-p', name, user, '.*', '.*', '.*')
        run('trace_on', '-p', name)
    except (OSError, subprocess.SubprocessError) as exc:
        subprocess.run(command + ['-q', 'delete_vhost', name], capture_output=True)
        pytest.skip('*** %s failed (set MINISCHED_TEST_RABBITMQCTL): %s ***'
                    % (' '.join(command), getattr(exc, 'stderr', None) or exc))
    try:
        yield urllib.parse.urlunsplit(parsed._replace(path='/' + urllib.parse.quote(name)))
    finally:
        run('delete_vhost', name)


class Endpoint:
    target = oslo_messaging.Target(version='1.3')

    def __init__(self):
        self.received = []
        self._lock = threading.Lock()

    def _record(self, *item):
        with self._lock:
            self.received.append(item)

    def ping(self, ctxt, arg):
        self._record('ping', arg)
        return {'pong': arg}

    def boom(self, ctxt):
        self._record('boom')
        raise ValueError('boom on purpose')

    def note(self, ctxt, objinst):
        self._record('note', objinst.host, tuple(sorted(objinst.obj_what_changed())))

    def refresh(self, ctxt, host):
        self._record('refresh', host)


@contextlib.contextmanager
def rpc_service(url, exchange, topic):
    """An RPC server for ``topic`` (server ``SERVER``) and a client, sharing one transport."""
    conf = cfg.ConfigOpts()
    conffixture.ConfFixture(conf)  # registers oslo.messaging's options on this private conf
    conf([])
    transport = oslo_messaging.get_rpc_transport(conf, url=url)
    serializer = rpc.RequestContextSerializer(obj_base.MinischedObjectSerializer())
    endpoint = Endpoint()
    server = oslo_messaging.get_rpc_server(
        transport, oslo_messaging.Target(exchange=exchange, topic=topic, server=SERVER),
        [endpoint], serializer=serializer)
    server.start()
    client = oslo_messaging.get_rpc_client(
        transport, oslo_messaging.Target(exchange=exchange, topic=topic, version='1.3'),
        serializer=serializer)
    try:
        yield client, endpoint
    finally:
        server.stop()
        server.wait()
        transport.cleanup()


class TapProcess:
    """``minisched-manage rpc tap`` as a subprocess, its output collected line by line."""

    def __init__(self, tmp_path, url, exchange, *args):
        config = tmp_path / 'minisched.conf'
        config.write_text('[DEFAULT]\ntransport_url = %s\ncontrol_exchange = %s\n'
                          'state_path = %s\n' % (url, exchange, tmp_path))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [REPO] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
        self.proc = subprocess.Popen(
            [sys.executable, '-c', CLI, '--config-file', str(config), 'rpc', 'tap'] +
            list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
            env=env)
        self.out, self.err = [], []
        self._readers = [threading.Thread(target=self._read, args=(stream, lines), daemon=True)
                         for stream, lines in ((self.proc.stdout, self.out),
                                               (self.proc.stderr, self.err))]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream, lines):
        for line in stream:
            lines.append(line.rstrip('\n'))

    def wait_ready(self):
        wait_for(lambda: self.proc.poll() is not None or 'rpc tap: ready' in self.err,
                 message='the tap to be ready')
        assert self.proc.poll() is None, self.report()

    def wait(self, timeout=30):
        code = self.proc.wait(timeout)
        for reader in self._readers:
            reader.join(5)
        return code

    def queue(self):
        for line in self.err:
            if '(queue ' in line:
                return line.rsplit('(queue ', 1)[1].rstrip(')')
        return None

    def report(self):
        return 'stdout:\n%s\nstderr:\n%s' % ('\n'.join(self.out), '\n'.join(self.err))

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def a_service():
    service = objects.Service(host=SERVER, binary='minisched-compute', report_count=1)
    service.obj_reset_changes()
    service.report_count = 2
    return service


def queue_exists(url, name):
    connection = pika.BlockingConnection(tap.connection_parameters(url))
    try:
        connection.channel().queue_declare(name, passive=True)
        return True
    except pika_exc.ChannelClosedByBroker as exc:
        assert exc.reply_code == 404, exc
        return False
    finally:
        if connection.is_open:
            connection.close()


def test_tap_prints_calls_casts_fanouts_and_changes_nothing(tmp_path, broker_url):
    name = 'tap-test-%s' % uuid.uuid4().hex
    ctxt = context.get_admin_context()
    with rpc_service(broker_url, name, name) as (client, endpoint):
        process = TapProcess(tmp_path, broker_url, name, '--topic', name)
        try:
            process.wait_ready()
            assert client.prepare(server=SERVER).call(ctxt, 'ping', arg='hello') == \
                {'pong': 'hello'}
            client.cast(ctxt, 'note', objinst=a_service())
            client.prepare(fanout=True).cast(ctxt, 'refresh', host=SERVER)
            wait_for(lambda: len(endpoint.received) >= 3, message='the server')
            wait_for(lambda: any(' fanout ' in line for line in process.out),
                     message='the fanout line')
            process.proc.send_signal(signal.SIGTERM)
            assert process.wait() == 0, process.report()
        finally:
            process.kill()
        # The tap took nothing away: each message reached the server exactly once.
        assert sorted(endpoint.received) == sorted([
            ('ping', 'hello'), ('note', SERVER, ('report_count',)), ('refresh', SERVER)])

    lines = [line for line in process.out if ' reply ' not in line]  # if '/' is traced
    assert len(lines) == 3, process.report()
    call, cast, fanout = lines
    assert ' call   %s/%s.%s ping v1.3 arg=hello #' % (name, name, SERVER) in call, call
    assert ' cast   %s/%s ' % (name, name) in cast, cast
    assert ('note v1.3 objinst=Service 1.22 host=%s binary=minisched-compute '
            'changes=[report_count] [req-' % SERVER) in cast, cast
    assert ' fanout %s_fanout refresh v1.3 host=%s [req-' % (name, SERVER) in fanout, fanout
    queue = process.queue()
    assert queue and queue.startswith('minisched-tap-'), process.report()
    assert not queue_exists(broker_url, queue), 'the tap queue outlived the tap'


def test_tap_times_replies_through_the_firehose(tmp_path, traced_url):
    name = 'tap-test-%s' % uuid.uuid4().hex
    ctxt = context.get_admin_context()
    with rpc_service(traced_url, name, name) as (client, endpoint):
        process = TapProcess(tmp_path, traced_url, name, '--topic', name, '--json',
                             '--count', '6', '--timeout', '120')
        try:
            process.wait_ready()
            assert client.prepare(server=SERVER).call(ctxt, 'ping', arg='hi') == {'pong': 'hi'}
            with pytest.raises(ValueError, match='boom on purpose'):
                client.call(ctxt, 'boom')
            client.cast(ctxt, 'note', objinst=a_service())
            client.prepare(fanout=True).cast(ctxt, 'refresh', host=SERVER)
            assert process.wait(60) == 0, process.report()  # --count 6 reached
        finally:
            process.kill()
        assert sorted(endpoint.received) == sorted([
            ('ping', 'hi'), ('boom',), ('note', SERVER, ('report_count',)),
            ('refresh', SERVER)])

    events = [json.loads(line) for line in process.out]
    assert [e['kind'] for e in events] == ['call', 'reply', 'call', 'reply', 'cast',
                                           'fanout'], process.report()
    ping, ping_reply, boom, boom_reply, cast, fanout = events
    assert (ping['method'], ping['version'], ping['topic'], ping['server']) == \
        ('ping', '1.3', name, SERVER)
    assert ping['args'] == {'arg': 'hi'}
    assert ping['reply_q'].startswith('reply_') and len(ping['msg_id']) == 32
    assert (ping_reply['msg_id'], ping_reply['method'], ping_reply['status']) == \
        (ping['msg_id'], 'ping', 'ok')
    assert ping_reply['result'] == '{pong}'
    assert 0 < ping_reply['elapsed_ms'] < 60000
    assert (boom['method'], boom['server']) == ('boom', None)
    assert (boom_reply['msg_id'], boom_reply['status']) == (boom['msg_id'], 'failure')
    assert boom_reply['failure'] == {'class': 'ValueError', 'module': 'builtins',
                                     'message': 'boom on purpose'}
    assert 0 < boom_reply['elapsed_ms'] < 60000
    assert (cast['method'], cast['version'], cast['msg_id']) == ('note', '1.3', None)
    assert cast['args']['objinst'] == ('Service 1.22 host=%s binary=minisched-compute '
                                       'changes=[report_count]' % SERVER)
    assert (fanout['exchange'], fanout['method'], fanout['args']) == \
        ('%s_fanout' % name, 'refresh', {'host': SERVER})
    # The text form of a reply says which call it answers and how long it took.
    line = tap_events.format_text(ping_reply)
    assert ' reply to %s in ' % ping['msg_id'][:8] in line and ' ms ok ' in line


def test_tap_binds_exchanges_that_appear_later(broker_url):
    """Started before any service, the tap waits for the exchanges and never creates them."""
    name = 'tap-test-%s' % uuid.uuid4().hex
    events = []
    watcher = tap.Tap(broker_url, name, [name], firehose=False, retry_interval=0.2)
    watcher.open()
    thread = threading.Thread(target=watcher.run, args=(events.append,),
                              kwargs={'timeout': 120}, daemon=True)
    try:
        assert set(watcher.missing()) == {(name, name + '.#'), (name + '_fanout', name)}
        time.sleep(0.5)  # a few retries while nothing exists: still nothing created
        assert not watcher.bound
        thread.start()
        with rpc_service(broker_url, name, name) as (client, endpoint):
            wait_for(lambda: not watcher.missing(), message='the bindings')
            client.cast(context.get_admin_context(), 'refresh', host='h1')
            client.prepare(fanout=True).cast(context.get_admin_context(), 'refresh',
                                             host='h2')
            wait_for(lambda: len(events) >= 2 and len(endpoint.received) >= 2,
                     message='the casts')
        assert [(e['kind'], e['method'], e['args']) for e in events] == [
            ('cast', 'refresh', {'host': 'h1'}), ('fanout', 'refresh', {'host': 'h2'})]
    finally:
        watcher.stop()
        if thread.is_alive():
            thread.join(10)
        watcher.close()
