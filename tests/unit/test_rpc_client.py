"""rpc.Client: calls end at their timeout even while oslo.messaging waits for a broker.

Real oslo.messaging transports, no broker: a rabbit URL on a port nobody listens on (where
oslo.messaging's own call would hang, reconnecting under its connection lock, until a broker
appears), and the in-memory fake driver (a reachable "broker" with nobody answering).
"""
import json
import subprocess
import sys
import threading
import time

import oslo_messaging as messaging

from minisched import context
from minisched import rpc
from tests import local_ports
from tests.unit import base


class _Echo:
    target = messaging.Target(version='1.0')

    def echo(self, ctxt, value):
        return value

    def fail(self, ctxt):
        raise ValueError('bad value')


def _echo_client(test):
    """A client of an _Echo server on the in-memory fake transport (both undone after)."""
    rpc.init(test.conf, url='fake://')
    test.addCleanup(rpc.cleanup)
    server = rpc.get_server(messaging.Target(topic='echo', server='here', version='1.0'),
                            [_Echo()])
    server.start()
    test.addCleanup(server.wait)
    test.addCleanup(server.stop)
    return rpc.get_client(messaging.Target(topic='echo', version='1.0')).prepare(timeout=5)


#: Run by :func:`_call_in_child`: the first call of a new transport, timed, in a process of
#: its own. oslo.messaging sets up that call's reply queue retrying for as long as the broker
#: is away, so the call's thread outlives the caller's wait; in the test process it would
#: reconnect (and log it) for the rest of the run. The child leaves without waiting for it.
_CHILD_CALL = """
import json, os, sys, time
import oslo_messaging as messaging
from oslo_config import cfg
from minisched import context, rpc
url, prepare = sys.argv[1], json.loads(sys.argv[2])
cfg.CONF([], project='minisched', default_config_files=[], default_config_dirs=[])
rpc.init(cfg.CONF, url=url)
client = rpc.get_client(messaging.Target(topic='nobody-listens', version='1.0'))
start = time.monotonic()
try:
    client.prepare(**prepare).call(context.get_admin_context(), 'ping')
    error, message = None, ''
except Exception as exc:
    error, message = type(exc).__name__, str(exc)
sys.stdout.write(json.dumps({'seconds': time.monotonic() - start, 'error': error,
                             'message': message}))
sys.stdout.flush()
os._exit(0)
"""


def _call_in_child(url, **prepare):
    """``(seconds, error class name, message)`` of a ``ping`` call made by a new process."""
    done = subprocess.run([sys.executable, '-c', _CHILD_CALL, url, json.dumps(prepare)],
                          capture_output=True, text=True, timeout=120)
    if done.returncode or not done.stdout:
        raise AssertionError('the calling process failed (%d): %s' % (done.returncode,
                                                                      done.stderr[-2000:]))
    result = json.loads(done.stdout)
    return result['seconds'], result['error'], result['message']


class TestDeadline(base.TestCase):

    def _client(self, url, **prepare):
        rpc.init(self.conf, url=url)
        self.addCleanup(rpc.cleanup)
        target = messaging.Target(topic='nobody-listens', version='1.0')
        return rpc.get_client(target).prepare(**prepare)

    def _timed_call(self, client):
        start = time.monotonic()
        with self.assertRaises(messaging.MessagingTimeout) as raised:
            client.call(context.get_admin_context(), 'ping')
        return time.monotonic() - start, str(raised.exception)

    def test_unreachable_broker_fails_the_call_at_its_timeout(self):
        port = local_ports.closed_port()
        elapsed, error, message = _call_in_child('rabbit://guest:guest@127.0.0.1:%d/' % port,
                                                 timeout=2)
        self.assertEqual('MessagingTimeout', error, message)
        self.assertLess(elapsed, 2 + rpc.CALL_GRACE + 2)
        self.assertIn('127.0.0.1:%d is unreachable' % port, message)

    def test_call_monitor_timeout_bounds_the_wait_for_an_unreachable_broker(self):
        port = local_ports.closed_port()
        elapsed, error, message = _call_in_child('rabbit://guest:guest@127.0.0.1:%d/' % port,
                                                 timeout=600, call_monitor_timeout=1)
        self.assertEqual('MessagingTimeout', error, message)
        self.assertLess(elapsed, 1 + rpc.CALL_GRACE + 2)
        self.assertIn('unreachable', message)

    def test_reconnect_retries_follow_the_rabbit_backoff(self):
        rpc.init(self.conf, url='rabbit://guest:guest@127.0.0.1:%d/' % local_ports.closed_port())
        self.addCleanup(rpc.cleanup)  # the driver registers its options
        self.flags(group='oslo_messaging_rabbit', rabbit_retry_interval=1,
                   rabbit_retry_backoff=2, rabbit_interval_max=30)
        # pauses 1, 3, 5, 7: 16 s after four; 30 s pauses from the 15th on
        self.assertEqual(4, rpc.reconnect_retries(self.conf, 11))
        self.assertEqual(4, rpc.reconnect_retries(self.conf, 16))
        self.assertEqual(5, rpc.reconnect_retries(self.conf, 16.5))
        self.assertEqual(16 + 1, rpc.reconnect_retries(self.conf, 225 + 30 + 1))
        self.assertIsNone(rpc._retries_for(0.0, 0.0, 30.0, 5.0))  # a backoff that never sleeps

    def test_reachable_bus_waits_the_whole_timeout(self):
        # With call_monitor_timeout 1 and timeout 3 on a bus that is up, the caller is not cut
        # short at the monitor timeout: the timeout that ends it is oslo.messaging's own.
        client = self._client('fake://', timeout=3, call_monitor_timeout=1)
        elapsed, message = self._timed_call(client)
        self.assertGreater(elapsed, 2.5)
        self.assertNotIn('unreachable', message)

    def test_answers_and_errors_pass_through(self):
        client = _echo_client(self)
        ctxt = context.get_admin_context()
        self.assertEqual({'a': [1, 2]}, client.call(ctxt, 'echo', value={'a': [1, 2]}))
        with self.assertRaisesRegex(ValueError, 'bad value'):  # rebuilt from the remote one
            client.call(ctxt, 'fail')


def _pool_threads(name):
    return [t for t in threading.enumerate() if t.name == name and t.is_alive()]


class TestCallThreads(base.TestCase):
    """The threads that run Client calls: reused while free, added while busy."""

    def setUp(self):
        super().setUp()
        self.pool = rpc._CallThreads(name='rpc-call-%s' % self.id())
        self.pool.IDLE_SECONDS = 0.3

    def _threads(self):
        return len(_pool_threads(self.pool.name))

    def _run(self, job):
        done = threading.Event()

        def wrapped():
            try:
                job()
            finally:
                done.set()
        self.pool.submit(wrapped)
        return done

    def test_sequential_calls_reuse_one_thread(self):
        ran = []
        for index in range(20):
            self.assertTrue(self._run(lambda i=index: ran.append(i)).wait(5))
        self.assertEqual(list(range(20)), ran)
        self.assertEqual(1, self._threads())

    def test_a_stuck_call_does_not_hold_up_the_next(self):
        release = threading.Event()
        stuck = self._run(release.wait)
        self.addCleanup(release.set)
        self.assertTrue(self._run(lambda: None).wait(5))  # ran on a second thread
        self.assertFalse(stuck.is_set())
        self.assertEqual(2, self._threads())
        release.set()
        self.assertTrue(stuck.wait(5))

    def test_idle_threads_end(self):
        self.assertTrue(self._run(lambda: None).wait(5))
        deadline = time.monotonic() + 5
        while self._threads() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(0, self._threads())
        self.assertTrue(self._run(lambda: None).wait(5))  # and a new one starts after

    def test_client_calls_go_through_the_shared_pool(self):
        client = _echo_client(self)
        self.addCleanup(setattr, rpc, 'CALL_THREADS', rpc.CALL_THREADS)
        rpc.CALL_THREADS = self.pool
        for index in range(10):
            self.assertEqual(index, client.call(context.get_admin_context(), 'echo',
                                                value=index))
        self.assertEqual(1, self._threads())


class TestTransportURLs(base.TestCase):
    """rpc.init names the option of a URL oslo.messaging cannot use, and changes nothing."""

    def _init(self, overrides):
        from oslo_config import cfg
        conf = cfg.ConfigOpts()
        conf([], project='minisched-test', default_config_files=[], default_config_dirs=[])
        messaging.get_rpc_transport(conf, url='fake://').cleanup()  # registers the options
        messaging.get_notification_transport(conf, url='fake://').cleanup()
        for (group, name), value in overrides.items():
            conf.set_override(name, value, group=group)
        before = (rpc.TRANSPORT, rpc.NOTIFICATION_TRANSPORT, rpc.NOTIFIER)
        with self.assertRaises(rpc.TransportURLError) as caught:
            rpc.init(conf)
        self.assertEqual(before, (rpc.TRANSPORT, rpc.NOTIFICATION_TRANSPORT, rpc.NOTIFIER))
        return str(caught.exception)

    def test_a_url_without_scheme(self):
        self.assertEqual('invalid value for [DEFAULT] transport_url: No scheme specified',
                         self._init({(None, 'transport_url'): 'broker-host'}))

    def test_a_driver_that_does_not_exist(self):
        message = self._init({(None, 'transport_url'): 'nosuchbus://u:secret@host/'})
        self.assertTrue(message.startswith('invalid value for [DEFAULT] transport_url: '
                                           'Failed to load transport driver "nosuchbus"'))
        self.assertNotIn('secret', message)

    def test_the_notifications_url_is_named_when_it_is_the_bad_one(self):
        message = self._init({(None, 'transport_url'): 'fake://',
                                ('oslo_messaging_notifications', 'transport_url'):
                                'rabbit://u:secret@host:fivesixsevenfive/'})
        self.assertEqual("invalid value for [oslo_messaging_notifications] transport_url: "
                         "invalid literal for int() with base 10: 'fivesixsevenfive'", message)
