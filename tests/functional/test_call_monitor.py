"""Call-monitor heartbeats over RabbitMQ, sent by minisched.rpc's shared CallMonitor.

A caller that sets ``call_monitor_timeout`` gives up when neither the answer nor a heartbeat
arrives within that many seconds; a server running the call longer must send heartbeats.
"""
import threading
import time
import uuid

import oslo_messaging as messaging
import pytest
from oslo_config import cfg

from minisched import context
from minisched import rpc
from minisched.messaging import call_monitor

pytestmark = [pytest.mark.functional, pytest.mark.timeout(120)]


class SlowEndpoint:
    target = messaging.Target(version='1.0')

    def __init__(self):
        self.calls = 0

    def sleep(self, ctxt, seconds):
        self.calls += 1
        time.sleep(seconds)
        return seconds


@pytest.fixture
def server_and_client(transport_url):
    rpc.set_defaults(control_exchange='call-monitor-%s' % uuid.uuid4().hex[:8])
    rpc.init(cfg.CONF, url=transport_url)
    topic = 'call_monitor_%s' % uuid.uuid4().hex[:8]
    endpoint = SlowEndpoint()
    server = rpc.get_server(messaging.Target(topic=topic, server='test'), [endpoint])
    server.start()
    beats = []
    real_watch = call_monitor.CALL_MONITOR.watch

    def counting_watch(incoming):
        real_beat = incoming.heartbeat

        def beat():
            beats.append(time.monotonic())
            real_beat()
        incoming.heartbeat = beat
        return real_watch(incoming)
    call_monitor.CALL_MONITOR.watch = counting_watch
    client = rpc.get_client(messaging.Target(topic=topic, version='1.0'))
    try:
        yield endpoint, client, beats
    finally:
        call_monitor.CALL_MONITOR.watch = real_watch
        server.stop()
        server.wait()
        rpc.cleanup()


def test_call_longer_than_its_call_monitor_timeout_is_kept_alive(server_and_client):
    endpoint, client, beats = server_and_client
    ctxt = context.get_admin_context()
    started = time.monotonic()
    # Interval = 2 / 2 = 1 s: without heartbeats the caller gives up after 2 s.
    result = client.prepare(timeout=30, call_monitor_timeout=2).call(ctxt, 'sleep',
                                                                     seconds=4.5)
    assert result == 4.5
    assert time.monotonic() - started >= 4.5
    assert 3 <= len(beats) <= 5, beats  # about one a second while it ran
    gaps = [b - a for a, b in zip(beats, beats[1:])]
    assert all(0.8 <= gap <= 1.6 for gap in gaps), gaps


def test_quick_calls_send_no_heartbeat_and_share_one_monitor_thread(server_and_client):
    endpoint, client, beats = server_and_client
    ctxt = context.get_admin_context()
    prepared = client.prepare(timeout=30, call_monitor_timeout=10)
    for _ in range(20):
        assert prepared.call(ctxt, 'sleep', seconds=0) == 0
    assert beats == []
    assert endpoint.calls == 20
    monitors = [t for t in threading.enumerate() if t.name == 'call-monitor']
    assert len(monitors) == 1


def test_call_without_call_monitor_timeout_still_answers(server_and_client):
    endpoint, client, beats = server_and_client
    ctxt = context.get_admin_context()
    assert client.prepare(timeout=30).call(ctxt, 'sleep', seconds=1.2) == 1.2
    assert beats == []
