"""Watch minisched's RPC traffic on RabbitMQ without taking part in it.

The tap declares one queue of its own (exclusive, auto-delete: it goes away with the tap's
connection) and binds it next to the services' queues, so the broker hands it a *copy* of
each message; it never consumes from a service queue, never publishes and never declares an
exchange (it only binds to exchanges that exist, checked with passive declares, and retries
the missing ones every few seconds, so a declare can never conflict with oslo.messaging's).

Bindings (``exchange`` is ``[DEFAULT] control_exchange``):

* a plain topic ``T``: ``exchange`` (topic) with routing key ``T.#`` (``T`` itself and every
  directed ``T.<server>``, dotted host names included), and the fanout exchange ``T_fanout``;
* a pattern (``*``/``#``, e.g. ``#`` for everything): ``exchange`` with that pattern; the
  ``<topic>_fanout`` exchanges of the topics then seen in traffic are bound as they appear;
* replies: the design notes (nova-reference 2.5) describe, as older oslo.messaging did, a
  reply sent to a *direct exchange* named after the call's ``_reply_q``. When the tap sees a
  call with a new ``_reply_q`` it binds to that exchange if it exists (routing key = the same
  name). The oslo.messaging in use here (18.x, see ``impl_rabbit.Connection.direct_send``)
  publishes replies to the *default exchange* (``''``) with routing key ``_reply_q`` instead,
  and RabbitMQ refuses bindings to the default exchange (403 ACCESS_REFUSED). Those replies
  are visible only through the RabbitMQ firehose: the tap binds ``amq.rabbitmq.trace`` with
  routing key ``publish.`` (copies of what is published to the default exchange), which
  carries messages only while tracing is on for the vhost (``rabbitmqctl trace_on -p
  <vhost>``; it costs broker throughput, turn it off with ``trace_off``). Without it calls
  show no reply time.

On a RabbitMQ cluster (a transport URL naming several nodes) the tap connects to one node; its
queue is an exclusive classic queue of that node whatever type the services' queues are
(quorum, or streams for fanout with ``rabbit_stream_fanout``: the tap binds next to them, it
never declares or consumes theirs). When that node goes away the tap connects to another one
and declares and binds its queue again: what was published in between is not seen, and a note
says so. The firehose is per node: ``rabbitmqctl trace_on`` on every node of the cluster.

Every message becomes an *event*, by :mod:`minisched.messaging.tap_events` (which needs no
broker).
"""
import time
import uuid

import oslo_messaging
import pika
from oslo_config import cfg
from pika import exceptions as pika_exc

from minisched.messaging import tap_events


class TapError(Exception):
    """The tap cannot run: broker unreachable, connection lost, unsupported URL."""



# --------------------------------------------------------------------------------------------
# The broker side


def connection_parameters(url, timeout=5):
    """pika ConnectionParameters for each host of an oslo.messaging transport URL."""
    parsed = oslo_messaging.TransportURL.parse(cfg.ConfigOpts(), url)
    if parsed.transport not in ('rabbit', 'kombu'):
        raise TapError('rpc tap needs a rabbit:// transport URL, not %s://' % parsed.transport)
    vhost = parsed.virtual_host or '/'
    hosts = parsed.hosts or [oslo_messaging.TransportHost(hostname='localhost')]
    params = []
    for host in hosts:
        credentials = pika.PlainCredentials(host.username or 'guest', host.password or 'guest')
        params.append(pika.ConnectionParameters(
            host=host.hostname or 'localhost', port=host.port or 5672, virtual_host=vhost,
            credentials=credentials, connection_attempts=1, socket_timeout=timeout,
            blocked_connection_timeout=timeout * 6))
    return params


def describe_error(exc):
    """``Class: text`` of an exception (pika's connection errors say it only in their repr)."""
    if str(exc):
        return '%s: %s' % (type(exc).__name__, exc)
    return repr(exc) if repr(exc) != '%s()' % type(exc).__name__ else type(exc).__name__


def describe_url(url):
    """``host:port vhost <name>`` of a transport URL, without credentials."""
    try:
        params = connection_parameters(url)
    except Exception:
        return '?'
    return '%s vhost %s' % (','.join('%s:%s' % (p.host, p.port) for p in params),
                            params[0].virtual_host)


class Tap:
    """A live copy of the RPC traffic of ``topics`` on control exchange ``exchange``.

    ``open()`` connects, declares the tap's queue and binds what exists; ``run(emit)`` calls
    ``emit(event)`` for each message until ``stop()``, ``count`` events or ``timeout`` seconds.
    ``note(text)`` receives progress lines (bindings made or awaited, a move to another node
    of a cluster), meant for stderr.
    """

    #: Seconds the tap tries the other nodes of a cluster URL after losing its connection.
    FAILOVER_SECONDS = 30.0

    def __init__(self, url, exchange, topics=None, firehose=True, retry_interval=2.0,
                 note=None):
        self.url = url
        self.exchange = exchange
        self.topics = tuple(topics or tap_events.DEFAULT_TOPICS)
        self.firehose = firehose
        self.retry_interval = retry_interval
        self.note = note or (lambda text: None)
        self.decoder = tap_events.Decoder(exchange, self.topics)
        self.queue = 'minisched-tap-%s' % uuid.uuid4().hex[:12]
        self.wanted = []            # (exchange, routing_key), in binding order
        self.bound = set()
        self.given_up = set()       # bindings refused for a reason other than "not there yet"
        self.reply_queues = {}      # _reply_q -> 'exchange' (bound) or 'default' (not bindable)
        self.emitted = 0
        self._fanouts_seen = set()
        self._patterns = any(tap_events.is_pattern(t) for t in self.topics)
        self._connection = None
        self._channel = None
        self._control = None
        self._stopping = False
        self._emit = None
        self._count = None
        for topic in self.topics:
            if tap_events.is_pattern(topic):
                self.wanted.append((exchange, topic))
            else:
                self.wanted.append((exchange, topic + '.#'))
                self.wanted.append((topic + '_fanout', topic))
                self._fanouts_seen.add(topic)
        if firehose:
            self.wanted.append((tap_events.TRACE_EXCHANGE, tap_events.TRACE_DEFAULT_EXCHANGE_KEY))

    # -- lifecycle

    def open(self):
        try:
            self._connect(connection_parameters(self.url))
        except pika_exc.AMQPError as exc:
            self.close()
            raise TapError('cannot reach RabbitMQ at %s: %s'
                           % (describe_url(self.url), describe_error(exc)))
        return self

    def _connect(self, params):
        """Connect to the first of ``params`` that answers; declare, consume, bind."""
        self._connection = pika.BlockingConnection(params)
        self._channel = self._connection.channel()
        self._control = None
        # Exclusive (hence classic, on the node we are connected to) and auto-delete: it
        # goes away with our connection, whatever queue types the services use.
        self._channel.queue_declare(self.queue, exclusive=True, auto_delete=True)
        self._channel.basic_consume(self.queue, self._on_message, auto_ack=True)
        self._bind_missing()

    def _fail_over(self, exc):
        """After the connection was lost: connect to another node of a cluster URL within
        :attr:`FAILOVER_SECONDS` (the lost one is tried last), declare and bind the queue
        again. Raises TapError with a single node, or when none answers."""
        lost = getattr(getattr(self._connection, '_impl', None), 'params', None)
        params = connection_parameters(self.url)
        if len(params) < 2:
            raise TapError('connection to RabbitMQ lost: %s' % describe_error(exc))
        params.sort(key=lambda p: lost is not None and (p.host, p.port) == (lost.host,
                                                                            lost.port))
        self.close()
        self.bound.clear()  # the new queue has no binding yet
        self.reply_queues.clear()
        deadline = time.monotonic() + self.FAILOVER_SECONDS
        while not self._stopping:
            try:
                self._connect(params)
                break
            except pika_exc.AMQPError as retry_exc:
                self.close()
                if time.monotonic() >= deadline:
                    raise TapError('connection to RabbitMQ lost (%s), and no node of %s '
                                   'answered within %d s: %s' % (
                                       describe_error(exc), describe_url(self.url),
                                       self.FAILOVER_SECONDS, describe_error(retry_exc)))
                time.sleep(1)
        if self._connection is None:  # stopped meanwhile
            return
        now = getattr(self._connection._impl, 'params', None)
        self.note('connection to %s lost (%s); tapping through %s now: messages published '
                  'in between were not seen' % (
                      '%s:%s' % (lost.host, lost.port) if lost else 'RabbitMQ',
                      describe_error(exc), '%s:%s' % (now.host, now.port) if now else '?'))

    def close(self):
        connection, self._connection = self._connection, None
        if connection is not None and connection.is_open:
            try:
                connection.close()  # the exclusive queue goes with the connection
            except Exception:  # closing a broken connection: nothing left to release
                pass

    def stop(self):
        """Make ``run`` return at its next turn (callable from a signal handler)."""
        self._stopping = True

    def missing(self):
        return [b for b in self.wanted if b not in self.bound and b not in self.given_up]

    def run(self, emit, count=None, timeout=None):
        """Deliver events to ``emit`` until stopped; returns the number of events emitted."""
        if self._connection is None:
            self.open()
        self._emit, self._count = emit, count
        deadline = None if timeout is None else time.monotonic() + timeout
        next_retry = time.monotonic() + self.retry_interval
        while not self._stopping:
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                break
            try:
                if now >= next_retry:
                    self._bind_missing()
                    next_retry = now + self.retry_interval
                limit = 0.2 if deadline is None else max(0.0, min(0.2, deadline - now))
                self._connection.process_data_events(time_limit=limit)
            except pika_exc.AMQPError as exc:
                if self._stopping:
                    break
                self._fail_over(exc)
        return self.emitted

    # -- bindings

    def _control_channel(self):
        if self._control is None or not self._control.is_open:
            self._control = self._connection.channel()
        return self._control

    def _try_bind(self, exchange, routing_key):
        """Bind if ``exchange`` exists: True, False (not there yet), None (refused)."""
        channel = self._control_channel()
        try:
            channel.exchange_declare(exchange, passive=True)
            channel.queue_bind(self.queue, exchange, routing_key=routing_key)
        except pika_exc.ChannelClosedByBroker as exc:
            self._control = None
            if exc.reply_code == 404:
                return False
            self.note('cannot bind to exchange %s (%s): %s' % (exchange, routing_key,
                                                               exc.reply_text))
            return None
        return True

    def _bind_missing(self):
        waiting = []
        for binding in self.missing():
            result = self._try_bind(*binding)
            if result:
                self.bound.add(binding)
            elif result is None:
                self.given_up.add(binding)
            else:
                waiting.append(binding)
        return waiting

    def _watch_fanout(self, topic):
        if topic and topic not in self._fanouts_seen:
            self._fanouts_seen.add(topic)
            binding = (topic + '_fanout', topic)
            self.wanted.append(binding)
            if self._try_bind(*binding):
                self.bound.add(binding)

    def _watch_reply_queue(self, reply_q):
        if not reply_q or reply_q in self.reply_queues:
            return
        if self._try_bind(reply_q, reply_q):
            self.reply_queues[reply_q] = 'exchange'
            self.bound.add((reply_q, reply_q))
        else:
            # Recent oslo.messaging (18.x here) replies through the default exchange, which
            # cannot be bound: only the firehose shows those replies.
            self.reply_queues[reply_q] = 'default'

    # -- messages

    def _on_message(self, channel, method, properties, body):
        if self._stopping:
            return
        event = self.decoder.handle(method.exchange, method.routing_key, body,
                                    properties.headers or {}, now=time.time())
        if event is None:
            return
        if event['kind'] in ('call', 'cast') and self._patterns:
            self._watch_fanout(event['topic'])
        if event['kind'] == 'call':
            self._watch_reply_queue(event['reply_q'])
        self.emitted += 1
        self._emit(event)
        if self._count is not None and self.emitted >= self._count:
            self._stopping = True
