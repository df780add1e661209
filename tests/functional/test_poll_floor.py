"""``[DEFAULT] rpc_poll_floor_ms`` on real RabbitMQ listeners: after a message, a listener
and the caller's reply waiter wait at least that long before each look-up from an empty
queue, and calls are answered as before."""
import time
import uuid

import oslo_messaging as messaging
import pytest
from oslo_config import cfg
from oslo_messaging._drivers import impl_rabbit

from minisched import context
from minisched import rpc

pytestmark = [pytest.mark.functional, pytest.mark.timeout(120)]

#: How long the listeners are watched once the call is answered.
QUIET_SECONDS = 1.0


class EchoEndpoint:
    target = messaging.Target(version='1.0')

    def echo(self, ctxt, value):
        return value


def _wakeups_after_a_call(transport_url, monkeypatch, floor_ms):
    """Per connection, how many times it looked for messages in the QUIET_SECONDS after one
    call was answered (nothing else arrives meanwhile)."""
    cfg.CONF.set_override('rpc_poll_floor_ms', floor_ms)
    rpc.set_defaults(control_exchange='poll-floor-%s' % uuid.uuid4().hex[:8])
    rpc.init(cfg.CONF, url=transport_url)
    topic = 'poll_floor_%s' % uuid.uuid4().hex[:8]
    server = rpc.get_server(messaging.Target(topic=topic, server='test'), [EchoEndpoint()])
    server.start()
    counts, watching = {}, []
    real_consume = impl_rabbit.Connection.consume

    def counted(connection, *args, **kwargs):
        if watching:
            counts[id(connection)] = counts.get(id(connection), 0) + 1
        return real_consume(connection, *args, **kwargs)
    monkeypatch.setattr(impl_rabbit.Connection, 'consume', counted)
    try:
        client = rpc.get_client(messaging.Target(topic=topic, version='1.0'))
        ctxt = context.get_admin_context()
        assert client.prepare(timeout=30).call(ctxt, 'echo', value='first') == 'first'
        watching.append(True)
        time.sleep(QUIET_SECONDS)
        watching.clear()
        assert client.prepare(timeout=30).call(ctxt, 'echo', value='again') == 'again'
        return counts
    finally:
        monkeypatch.setattr(impl_rabbit.Connection, 'consume', real_consume)
        server.stop()
        server.wait()
        rpc.cleanup()
        cfg.CONF.clear_override('rpc_poll_floor_ms')


def test_listeners_wake_up_less_often_after_a_message(transport_url, monkeypatch):
    # oslo.messaging's own 1 ms: waits of 1, 2, 4 ... 512 ms, about ten in a second.
    eager = _wakeups_after_a_call(transport_url, monkeypatch, 1)
    # 50 ms: 50, 100, 200, 400 ms, then the next wait outlasts the second: five at most.
    floored = _wakeups_after_a_call(transport_url, monkeypatch, 50)
    assert len(eager) >= 2 and len(floored) >= 2, (eager, floored)  # listener, reply waiter
    assert max(eager.values()) >= 6, eager
    assert max(floored.values()) <= 5, floored
