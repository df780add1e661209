"""minisched.messaging.admission.AdmittingRPCServer on RabbitMQ: the messages that start work run a
few at a time, in arrival order, while the others are answered as they come; the ones it
holds when it stops run before it has stopped, and the ones it held or ran when it was
killed are delivered again (acknowledged only once they have run)."""
import contextlib
import logging
import os
import subprocess
import sys
import threading

import oslo_messaging as messaging
import pytest
from oslo_config import cfg

from minisched import context
from minisched import rpc
from minisched.objects import base as obj_base
from tests.functional import base

pytestmark = [pytest.mark.functional, pytest.mark.timeout(120)]

TOPIC = 'admission-test'
#: What the servers here admit a few at a time: the endpoint's start_work.
ADMITTED = frozenset([(None, 'start_work')])


class Endpoint:
    target = messaging.Target(version='1.0')

    def __init__(self):
        self.gate = threading.Event()
        self.started, self.done = [], []
        self.running = self.most = 0
        self._lock = threading.Lock()

    def start_work(self, ctxt, n):
        with self._lock:
            self.started.append(n)
            self.running += 1
            self.most = max(self.most, self.running)
        self.gate.wait(60)
        with self._lock:
            self.running -= 1
            self.done.append(n)

    def progress(self, ctxt):
        return 'answered'


@contextlib.contextmanager
def _transport(url):
    transport = messaging.get_rpc_transport(cfg.CONF, url=url)
    try:
        yield transport
    finally:
        transport.cleanup()


@contextlib.contextmanager
def _server(url, endpoint, limit, stop=True):
    with _transport(url) as transport:
        server = rpc._rpc_server(transport, messaging.Target(topic=TOPIC, server='s1'),
                                 [endpoint], rpc.get_serializer(), (ADMITTED, limit))
        server.start()
        try:
            yield server
        finally:
            if stop:
                endpoint.gate.set()
                server.stop()
                server.wait()


@contextlib.contextmanager
def _client(url):
    with _transport(url) as transport:
        yield messaging.get_rpc_client(
            transport, messaging.Target(topic=TOPIC, version='1.0'),
            serializer=rpc.RequestContextSerializer(obj_base.MinischedObjectSerializer()))


def _ctxt():
    return context.RequestContext(user_id='u', project_id='p', is_admin=True)


def test_admitted_casts_run_two_at_a_time_in_order_and_calls_pass_them(transport_url, caplog):
    caplog.set_level(logging.INFO, logger='minisched.messaging.admission')
    endpoint = Endpoint()
    with _server(transport_url, endpoint, limit=2) as server, _client(transport_url) as client:
        for n in range(6):
            client.cast(_ctxt(), 'start_work', n=n)
        base.wait_for(lambda: endpoint.started == [0, 1] and server.held == 4, timeout=20,
                      message='two casts running and four held')
        # The four held casts arrived before this call: it is answered at once all the same.
        assert client.prepare(timeout=10).call(_ctxt(), 'progress') == 'answered'
        assert endpoint.started == [0, 1] and server.held == 4
        endpoint.gate.set()
        base.wait_for(lambda: len(endpoint.done) == 6, timeout=20, message='all six done')
    assert endpoint.started == list(range(6))
    assert endpoint.most == 2
    assert server.held == 0
    assert (server.admitted_count, server.held_count) == (6, 4)
    assert 0 < server.longest_hold <= server.held_seconds
    server.log_summary()
    assert '%s: 4 of 6 admitted messages (start_work) waited for their turn' % TOPIC \
        in caplog.text


def test_no_limit_runs_every_message_as_it_arrives(transport_url):
    endpoint = Endpoint()
    with _server(transport_url, endpoint, limit=0) as server, _client(transport_url) as client:
        for n in range(5):
            client.cast(_ctxt(), 'start_work', n=n)
        base.wait_for(lambda: endpoint.running == 5, timeout=20, message='five running')
        assert server.held == 0
    assert sorted(endpoint.done) == list(range(5))


def test_casts_held_when_the_server_stops_run_before_it_has_stopped(transport_url):
    """A stopping server runs them (and acknowledges them then), as its executor runs the
    messages queued for it."""
    endpoint = Endpoint()
    with _client(transport_url) as client:
        with _server(transport_url, endpoint, limit=1, stop=False) as server:
            for n in range(4):
                client.cast(_ctxt(), 'start_work', n=n)
            base.wait_for(lambda: endpoint.started == [0] and server.held == 3, timeout=20,
                          message='one cast running and three held')
            server.stop()  # no more deliveries
            assert server.held == 3
            endpoint.gate.set()
            server.wait()  # returns once the held ones ran, one at a time
            assert endpoint.done == [0, 1, 2, 3]
            assert endpoint.most == 1 and server.held == 0


def test_a_failure_running_an_admitted_message_gives_its_turn_to_the_next(transport_url,
                                                                          caplog):
    """Whatever escapes the run of one admitted message (RPCServer answers its own failures;
    this is the guard behind it) is logged, and the held messages still run."""
    endpoint = Endpoint()
    endpoint.gate.set()
    with _server(transport_url, endpoint, limit=1) as server, _client(transport_url) as client:
        process = server._process_incoming
        failed = []

        def fail_first(incoming):
            process(incoming)
            if not failed:
                failed.append(incoming)
                raise RuntimeError('injected after the message ran')
        server._process_incoming = fail_first
        for n in range(3):
            client.cast(_ctxt(), 'start_work', n=n)
        base.wait_for(lambda: len(endpoint.done) == 3, timeout=20, message='three casts done')
        assert client.prepare(timeout=10).call(_ctxt(), 'progress') == 'answered'
        client.cast(_ctxt(), 'start_work', n=3)  # the turn was given back: it runs too
        base.wait_for(lambda: len(endpoint.done) == 4, timeout=20, message='the fourth done')
    assert endpoint.done == [0, 1, 2, 3] and server.held == 0 and len(failed) == 1
    assert '%s: unexpected failure running a message' % TOPIC in caplog.text


_WORKER = '''
import sys, threading, time
from tests.functional import test_rpc_admission as t

url, path = sys.argv[1:]


class Endpoint(t.Endpoint):
    def start_work(self, ctxt, n):
        with open(path, 'a') as f:
            f.write('%d\\n' % n)
        threading.Event().wait()   # never done: killed while running


with t._server(url, Endpoint(), limit=2, stop=False):
    time.sleep(600)
'''


def _lines(path):
    """The numbers written to ``path``, sorted."""
    return sorted(path.read_text().split())


def _answers(client):
    try:
        return client.prepare(timeout=2).call(_ctxt(), 'progress') == 'answered'
    except messaging.MessagingTimeout:
        return False


def test_a_killed_server_loses_neither_held_nor_running_casts(transport_url, tmp_path):
    """Admitted messages are acknowledged once they have run: a server killed with two
    casts running and four held leaves all six in RabbitMQ, which delivers them to the
    next server. (oslo.messaging acknowledges on receipt: they were lost.)"""
    started = tmp_path / 'started'
    worker = subprocess.Popen([sys.executable, '-c', _WORKER, transport_url, str(started)],
                              cwd=os.path.dirname(os.path.dirname(os.path.dirname(
                                  os.path.abspath(__file__)))))
    try:
        with _client(transport_url) as client:
            base.wait_for(lambda: _answers(client), timeout=30,
                          message='the worker to listen')
            for n in range(6):
                client.cast(_ctxt(), 'start_work', n=n)
            # The first two casts, admitted at once: their threads write in either order.
            try:
                base.wait_for(lambda: started.exists() and _lines(started) == ['0', '1'],
                              timeout=30, message='two casts running in the worker')
            except AssertionError as exc:
                raise AssertionError('%s; started: %s' % (
                    exc, _lines(started) if started.exists() else 'none')) from None
    finally:
        worker.kill()
        worker.wait()
    endpoint = Endpoint()
    endpoint.gate.set()
    with _server(transport_url, endpoint, limit=2):
        base.wait_for(lambda: len(endpoint.done) == 6, timeout=30,
                      message='the six casts delivered again and run')
        with _client(transport_url) as client:  # nothing more comes: every one acknowledged
            assert client.prepare(timeout=10).call(_ctxt(), 'progress') == 'answered'
    assert sorted(endpoint.done) == list(range(6))
    assert _lines(started) == ['0', '1']
