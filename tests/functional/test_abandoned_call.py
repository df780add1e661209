"""A call abandoned during a broker outage stops reconnecting once its caller stopped waiting.

oslo.messaging alone retries the connection of a call forever: a client whose broker went
away kept a thread reconnecting for as long as the outage lasted, then published a request
nobody waited for. ``rpc.Client`` sizes the call's ``retry`` so that the thread gives up after
the backoff has slept the caller's whole wait (see ``rpc.reconnect_retries``).
"""
import functools
import time
import uuid

import oslo_messaging as messaging
import pytest
from oslo_config import cfg

from minisched import context
from minisched import rpc
from tests.functional import resilience
from tests.functional import tcp_proxy

pytestmark = [pytest.mark.functional, pytest.mark.timeout(120)]

CALL_TIMEOUT = 2


@pytest.fixture
def cut_off_client(request, transport_url):
    """A client that made one call through a TcpProxy, with the proxy then cut."""
    proxy = tcp_proxy.TcpProxy(resilience.rabbit_port(transport_url))
    request.addfinalizer(proxy.close)
    rpc.set_defaults(control_exchange='abandoned-%s' % uuid.uuid4().hex[:8])
    rpc.init(cfg.CONF, url=resilience.with_port(transport_url, proxy.port))
    request.addfinalizer(rpc.cleanup)
    for name, value in (('rabbit_retry_interval', 1), ('rabbit_retry_backoff', 0),
                        ('rabbit_interval_max', 1)):
        cfg.CONF.set_override(name, value, 'oslo_messaging_rabbit')
        request.addfinalizer(functools.partial(cfg.CONF.clear_override, name,
                                               'oslo_messaging_rabbit'))
    pool = rpc._CallThreads(name='rpc-call-abandoned')
    saved = rpc.CALL_THREADS
    rpc.CALL_THREADS = pool
    request.addfinalizer(lambda: setattr(rpc, 'CALL_THREADS', saved))
    client = rpc.get_client(messaging.Target(topic='nobody_%s' % uuid.uuid4().hex[:8],
                                             version='1.0')).prepare(timeout=CALL_TIMEOUT)
    # Nobody listens: this call times out, but leaves the transport's reply queue and a
    # pooled connection in place, as in any client that has been running for a while.
    with pytest.raises(messaging.MessagingTimeout):
        client.call(context.get_admin_context(), 'ping')
    assert pool._idle == 1
    proxy.cut()
    return client, pool


def test_abandoned_call_thread_gives_up_after_the_callers_wait(cut_off_client):
    client, pool = cut_off_client
    assert rpc.reconnect_retries(cfg.CONF, CALL_TIMEOUT + rpc.CALL_GRACE) == 3
    start = time.monotonic()
    with pytest.raises(messaging.MessagingTimeout, match='unreachable'):
        client.call(context.get_admin_context(), 'ping')
    assert time.monotonic() - start < CALL_TIMEOUT + rpc.CALL_GRACE + 2
    # Three 1 s pauses (a few seconds more with the connection attempts), then the thread
    # is free again: before, it went on reconnecting until the proxy came back.
    deadline = time.monotonic() + 20
    while pool._idle < 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pool._idle == 1, 'the abandoned call is still reconnecting'
