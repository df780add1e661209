"""What a broker outage does to queues and messages: the semantics minisched relies on.

Each test stops the application of a private node (``stop_app``, see private_broker.py) and
starts it again, then looks at what is left, with ``pika`` directly:

* a durable queue keeps its persistent (confirmed) messages, a non-durable queue is gone with
  its messages;
* while the application is stopped, open connections are closed and the port refuses new
  ones; after ``start_app`` new connections work;
* messages delivered to a consumer but not acknowledged when its connection dies with the
  broker are back in their durable queue after the restart, flagged redelivered.
"""
import contextlib
import socket
import time
import uuid

import pika
import pika.exceptions
import pytest

from tests.functional.private_broker import private_broker  # noqa: F401

pytestmark = [pytest.mark.functional, pytest.mark.timeout(180)]

PERSISTENT = pika.BasicProperties(delivery_mode=pika.DeliveryMode.Persistent)
BODIES = [b'message-%d' % index for index in range(5)]
CONNECTION_FORCED = 320
NOT_FOUND = 404


def test_restart_keeps_durable_queue_and_drops_transient_one(private_broker):  # noqa: F811
    """Persistent messages survive in a durable queue; a non-durable queue is gone."""
    durable, transient = _queue_name('durable'), _queue_name('transient')
    with _connect(private_broker) as connection:
        channel = _confirming_channel(connection)
        channel.queue_declare(durable, durable=True)
        channel.queue_declare(transient, durable=False)
        _publish(channel, durable, BODIES)
        _publish(channel, transient, BODIES)
        assert channel.queue_declare(transient, passive=True).method.message_count == len(BODIES)

    _restart(private_broker)

    with _connect(private_broker) as connection:
        channel = connection.channel()
        assert _get_all(channel, durable) == [(body, False) for body in BODIES]
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as closed:
            channel.queue_declare(transient, passive=True)
        assert closed.value.reply_code == NOT_FOUND
        connection.channel().queue_delete(durable)


def test_stopped_app_closes_connections_and_refuses_new_ones(private_broker):  # noqa: F811
    """Open connections are closed by the broker, the port refuses; after start_app, it
    accepts again."""
    connection = _connect(private_broker)
    with _app_stopped(private_broker):
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
            connection.process_data_events(time_limit=10)
        assert closed.value.reply_code == CONNECTION_FORCED
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(('127.0.0.1', private_broker.port), timeout=5)

    with _connect(private_broker) as connection:
        assert connection.channel().queue_declare('', exclusive=True).method.queue


def test_unacked_messages_are_redelivered_after_restart(private_broker):  # noqa: F811
    """Messages a consumer had not acknowledged when the broker stopped are back in their
    durable queue, flagged redelivered."""
    queue = _queue_name('unacked')
    with _connect(private_broker) as connection:
        channel = _confirming_channel(connection)
        channel.queue_declare(queue, durable=True)
        _publish(channel, queue, BODIES)

    consumer = _connect(private_broker)
    delivered = _consume_without_ack(consumer.channel(), queue, len(BODIES))
    assert delivered == [(body, False) for body in BODIES]
    with _app_stopped(private_broker):
        with pytest.raises(pika.exceptions.AMQPConnectionError):
            consumer.process_data_events(time_limit=10)

    with _connect(private_broker) as connection:
        channel = connection.channel()
        assert _get_all(channel, queue) == [(body, True) for body in BODIES]
        channel.queue_delete(queue)


# -- helpers ---------------------------------------------------------------------------------

def _restart(broker):
    broker.stop_app()
    broker.start_app()


@contextlib.contextmanager
def _app_stopped(broker):
    """The broker's application stopped for the ``with`` block, and started again after it
    (even when the block fails, for the next tests of the module)."""
    broker.stop_app()
    try:
        yield
    finally:
        broker.start_app()


def _connect(broker):
    url = 'amqp' + broker.url[len('rabbit'):]
    return pika.BlockingConnection(pika.URLParameters(url + '?connection_attempts=1'))


def _queue_name(kind):
    return 'minisched-test-%s-%s' % (kind, uuid.uuid4().hex)


def _confirming_channel(connection):
    """A channel whose ``basic_publish`` returns once the broker confirmed the message
    (for a persistent message to a durable queue: once it is on disk)."""
    channel = connection.channel()
    channel.confirm_delivery()
    return channel


def _publish(channel, queue, bodies):
    for body in bodies:
        channel.basic_publish('', queue, body, PERSISTENT, mandatory=True)


def _get_all(channel, queue):
    """Get and acknowledge every message of ``queue``: ``[(body, redelivered)...]``."""
    messages = []
    while True:
        method, _properties, body = channel.basic_get(queue)
        if method is None:
            return messages
        channel.basic_ack(method.delivery_tag)
        messages.append((body, method.redelivered))


def _consume_without_ack(channel, queue, count):
    """Consume ``count`` messages, acknowledging none: ``[(body, redelivered)...]``."""
    messages = []
    channel.basic_consume(queue, lambda _channel, method, _properties, body:
                          messages.append((body, method.redelivered)))
    deadline = time.monotonic() + 10
    while len(messages) < count and time.monotonic() < deadline:
        channel.connection.process_data_events(time_limit=0.1)
    return messages
