"""minisched.rpc.MonitoredDispatcher: deep arguments refused up front, others dispatched."""
import logging

import oslo_messaging as messaging
import pytest

from minisched import exception
from minisched import rpc


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
    assert rpc._nesting_deeper_than(_nested(depth), 100) is deeper


def test_scalars_are_no_level_and_each_container_one():
    for value in (None, 'x', 1, [], {}, ['x'], {'a': 1}):
        assert not rpc._nesting_deeper_than(value, 1), value
    for value in ([[]], {'a': {}}, [{'a': 1}]):
        assert not rpc._nesting_deeper_than(value, 2), value
        assert rpc._nesting_deeper_than(value, 1), value


def test_deep_arguments_are_refused_before_decoding(caplog):
    endpoint = _Endpoint()
    dispatcher = rpc.MonitoredDispatcher([endpoint], None, None)
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
    dispatcher = rpc.MonitoredDispatcher([endpoint], None, None)
    value = _nested(90)
    assert dispatcher.dispatch(_Incoming({'value': value})) == 'ok'
    assert endpoint.received == [value]


class _Hidden:
    target = messaging.Target(version='1.3')

    def _private(self, ctxt):
        return 'private'


def _dispatcher(*endpoints):
    return rpc.MonitoredDispatcher(list(endpoints), None, messaging.DefaultRPCAccessPolicy)


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


def test_unknown_method_and_version_are_refused_as_oslo_messaging_does():
    dispatcher = _dispatcher(_Endpoint(), _Hidden())
    incoming = _Incoming({})
    incoming.message.update(method='nothing')
    with pytest.raises(messaging.NoSuchMethod):
        dispatcher.dispatch(incoming)
    incoming.message.update(method='_private', version='1.2')  # private: not allowed
    with pytest.raises(messaging.NoSuchMethod):
        dispatcher.dispatch(incoming)
    incoming.message.update(method='take', version='3.0')
    with pytest.raises(messaging.UnsupportedVersion):
        dispatcher.dispatch(incoming)


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
