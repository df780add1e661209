"""``minisched.messaging.tap.Tap`` on a cluster URL: a lost node is replaced by another one,
without a broker (pika's BlockingConnection is faked)."""
import types

import pytest
from pika import exceptions as pika_exc

from minisched.messaging import tap


class FakeChannel:
    def __init__(self, log):
        self.log = log
        self.is_open = True

    def queue_declare(self, queue, **kwargs):
        self.log.append(('declare', queue, kwargs))

    def basic_consume(self, queue, callback, auto_ack):
        self.log.append(('consume', queue))

    def exchange_declare(self, exchange, passive):
        assert passive

    def queue_bind(self, queue, exchange, routing_key):
        self.log.append(('bind', exchange, routing_key))


class FakeConnection:
    """Connects to the first reachable of ``params``; ``events`` says what each
    ``process_data_events`` does."""

    made = []
    reachable = set()

    def __init__(self, params):
        FakeConnection.made.append([(p.host, p.port) for p in params])
        hosts = [p for p in params if (p.host, p.port) in FakeConnection.reachable]
        if not hosts:
            raise pika_exc.AMQPConnectionError('nobody answers')
        self._impl = types.SimpleNamespace(params=hosts[0])
        self.log = []
        self.is_open = True
        self.events = None

    def channel(self):
        return FakeChannel(self.log)

    def process_data_events(self, time_limit):
        self.on_events(self)

    def close(self):
        self.is_open = False


@pytest.fixture
def fake_pika(monkeypatch):
    FakeConnection.made = []
    FakeConnection.reachable = {('h1', 5672), ('h2', 5672)}
    monkeypatch.setattr(tap.pika, 'BlockingConnection', FakeConnection)
    monkeypatch.setattr(tap.time, 'sleep', lambda seconds: None)
    return FakeConnection


def test_a_lost_node_is_replaced_by_another_and_the_queue_bound_again(fake_pika):
    notes = []
    watcher = tap.Tap('rabbit://u:p@h1:5672,u:p@h2:5672/', 'ex', ['compute'],
                      firehose=False, note=notes.append)
    turns = []

    def on_events(connection):
        turns.append(connection._impl.params.host)
        if len(turns) == 1:  # h1 dies under the tap
            FakeConnection.reachable.discard(('h1', 5672))
            raise pika_exc.StreamLostError('Stream connection lost')
        watcher.stop()
    FakeConnection.on_events = staticmethod(on_events)
    watcher.run(lambda event: None)
    assert turns == ['h1', 'h2']
    # The lost node is tried last.
    assert fake_pika.made == [[('h1', 5672), ('h2', 5672)], [('h2', 5672), ('h1', 5672)]]
    assert watcher.bound == {('ex', 'compute.#'), ('compute_fanout', 'compute')}
    assert len(notes) == 1 and 'connection to h1:5672 lost' in notes[0] \
        and 'tapping through h2:5672 now' in notes[0] and 'were not seen' in notes[0]


def test_one_node_lost_is_an_error(fake_pika):
    watcher = tap.Tap('rabbit://u:p@h1:5672/', 'ex', ['compute'], firehose=False)
    FakeConnection.on_events = staticmethod(
        lambda connection: (_ for _ in ()).throw(pika_exc.StreamLostError('gone')))
    with pytest.raises(tap.TapError, match='connection to RabbitMQ lost'):
        watcher.run(lambda event: None)


def test_no_node_answering_within_the_failover_time_is_an_error(fake_pika, monkeypatch):
    monkeypatch.setattr(tap.Tap, 'FAILOVER_SECONDS', 0)
    watcher = tap.Tap('rabbit://u:p@h1:5672,u:p@h2:5672/', 'ex', ['compute'],
                      firehose=False)

    def on_events(connection):
        FakeConnection.reachable.clear()
        raise pika_exc.StreamLostError('Stream connection lost')
    FakeConnection.on_events = staticmethod(on_events)
    with pytest.raises(tap.TapError, match='no node of h1:5672,h2:5672 vhost / answered'):
        watcher.run(lambda event: None)
