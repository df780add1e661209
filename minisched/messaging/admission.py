"""An RPC server that lets the messages of work under way pass the messages that start work.

A conductor worker takes, from one queue, the casts that start builds
(``compute_task.schedule_and_build_instances``, sent by the API) and the calls that carry the
builds already placed: the computes' instance saves, action events and resource updates,
besides their state reports. oslo.messaging runs every message in arrival order on one pool
of green threads (``executor_thread_pool_size``). Under a burst of creates the calls of the
builds already placed then wait behind every cast that arrived before them, and a build
crosses that queue once more with each of its calls (five from its compute): the burst's
builds all progress slowly together instead of one after the other, and a build's
request -> ACTIVE time grows with the whole burst rather than with the builds ahead of it.

:class:`AdmittingRPCServer` runs at most ``limit`` messages of the *admitted* methods at a
time; the others of those wait in arrival order while every other message runs as it
arrives. Nothing changes on the wire: the same messages, the same answers.

What changes is when an admitted message is acknowledged. oslo.messaging's RPC listener
acknowledges every message as it receives it, before any thread runs it: a cast held here
(or running) was then gone from the broker, and a conductor killed during a burst took the
builds it held with it (39 of 60 in one test), found only by the stuck-build check hours
later. The server's listener (:class:`_AdmittingListener`) leaves admitted messages
unacknowledged and the server acknowledges each once it has run, through the listener's
consumer thread (kombu's channel is not thread-safe). A worker that dies leaves them
unacknowledged: RabbitMQ delivers them again, to another worker or to this one restarted.
The handlers of admitted messages must therefore take a second delivery (the conductor's
do: a build request already taken is skipped). oslo.messaging's duplicate-message cache is
not used for them: a message RabbitMQ delivers again after a reconnection must run if the
first copy did not. A held message waits unacknowledged, so RabbitMQ's ``consumer_timeout``
(30 minutes by default) bounds how long one may wait before the broker closes the channel
and delivers it again; a graceful stop still runs every held message before ``wait()``
returns. The other messages are acknowledged on receipt, as before.

The conductor can admit ``schedule_and_build_instances`` ``[conductor]
max_concurrent_schedule_and_build`` at a time per worker (default 8; 0: no limit, every
message in arrival order as in Nova).
"""
import collections
import logging
import threading
import time

from oslo_messaging._drivers import amqp as rpc_amqp
from oslo_messaging._drivers import amqpdriver
from oslo_messaging.rpc import server as rpc_server

LOG = logging.getLogger(__name__)


def method_of(incoming):
    """``(namespace, method)`` of an incoming batch's message; ``(None, None)`` when its
    body is not the object an RPC message is (the dispatcher refuses it later)."""
    try:
        message = incoming[0].message
    except (IndexError, TypeError, AttributeError):
        return None, None
    if not isinstance(message, dict):
        return None, None
    return message.get('namespace'), message.get('method')


_running = threading.local()


def redelivered():
    """Whether the admitted message this thread runs came again from RabbitMQ after a
    consumer that had it unacknowledged went away (AMQP's ``redelivered`` flag): the
    conductor that took it before stopped, maybe half-way through it. False for any other
    message, and outside one."""
    return getattr(_running, 'redelivered', False)


class _DeferredAck(amqpdriver.AMQPIncomingMessage):
    """An admitted message: acknowledged once it has run (:meth:`settle`), not before."""

    redelivered = False

    def acknowledge(self):
        """RPCServer's acknowledgement before dispatch: too early for an admitted message."""

    def settle(self):
        """Acknowledge the message now that it has run, on the listener's consumer thread."""
        def ack():
            try:
                self.message.acknowledge()
            except Exception as exc:  # the channel it came on is gone: delivered again
                LOG.warning('Could not acknowledge a %s message after running it (%s); '
                            'RabbitMQ will deliver it again.', self.message.get('method'),
                            exc)
        self._message_operations_handler.do(ack)


class _AdmittingListener(amqpdriver.RpcAMQPListener):
    """The rabbit driver's RPC listener, leaving the ``admitted`` messages unacknowledged."""

    admitted = frozenset()

    def __call__(self, message):
        if (message.get('namespace'), message.get('method')) not in self.admitted:
            super().__call__(message)
            return
        ctxt = rpc_amqp.unpack_context(message)
        # Not through the duplicate cache: a copy delivered again runs (see the module).
        unique_id = message.pop(rpc_amqp.UNIQUE_ID, None)
        incoming = _DeferredAck(
            self, ctxt.to_dict(), message, unique_id, ctxt.msg_id, ctxt.reply_q,
            ctxt.client_timeout, self._obsolete_reply_queues,
            self._message_operations_handler)
        raw = getattr(message, '_raw_message', None)
        incoming.redelivered = bool((getattr(raw, 'delivery_info', None) or {}).get(
            'redelivered'))
        self.incoming.append(incoming)


class AdmittingRPCServer(rpc_server.RPCServer):
    """oslo.messaging's RPCServer, running at most ``limit`` messages of the ``admitted``
    ``(namespace, method)`` pairs at once; the others wait in arrival order (see the
    module's docstring). ``limit`` 0: no limit."""

    def __init__(self, transport, target, dispatcher, admitted, limit):
        super().__init__(transport, target, dispatcher)
        self.topic = target.topic  # RPCServer keeps its target private (``_target``)
        self.admitted = frozenset(admitted)
        self.limit = limit
        self._held = collections.deque()  # (incoming, when it was held)
        self._running = 0
        self._lock = threading.Lock()
        #: Admitted messages run so far, how many of them were held, and for how long in
        #: all and at most (seconds): logged when the server stops.
        self.admitted_count = 0
        self.held_count = 0
        self.held_seconds = 0.0
        self.longest_hold = 0.0

    def _create_listener(self):
        listener = super()._create_listener()
        driver_listener = getattr(listener, '_poll_style_listener', None)
        if self.limit and type(driver_listener) is amqpdriver.RpcAMQPListener:
            # Made by the rabbit driver, registered as its consumers' callback: the class
            # is swapped in place (other drivers acknowledge as they do).
            driver_listener.__class__ = _AdmittingListener
            driver_listener.admitted = self.admitted
        return listener

    @property
    def held(self):
        """How many admitted messages wait for their turn."""
        return len(self._held)

    def _on_incoming(self, incoming):
        if not self.limit or method_of(incoming) not in self.admitted:
            super()._on_incoming(incoming)
            return
        with self._lock:
            self.admitted_count += 1
            if self._running >= self.limit:
                self.held_count += 1
                self._held.append((incoming, time.monotonic()))
                return
            self._running += 1
        self._submit(incoming)

    def _submit(self, incoming):
        try:
            self._work_executor.submit(self._run_admitted, incoming)
        except RuntimeError:
            # The executor is shut down only after the listener stopped delivering: no
            # message arrives then. Said loudly if it ever does.
            with self._lock:
                self._running -= 1
            LOG.error('%s: a message arrived after the server stopped; not run.',
                      self.topic)

    def _run_admitted(self, incoming):
        """Run ``incoming``, then the held messages one after the other on this same thread
        (the threads that run admitted messages keep doing so, the others serve the rest),
        until none is held. A stopping server runs them all too, as its executor runs the
        messages queued for it before it stops."""
        while incoming is not None:
            _running.redelivered = getattr(incoming[0], 'redelivered', False)
            try:
                self._process_incoming(incoming)
            except Exception:  # RPCServer answers and logs its own failures; never stop here
                LOG.exception('%s: unexpected failure running a message', self.topic)
            finally:
                # Run (or refused): acknowledged, or a message that fails would come back
                # for ever.
                _running.redelivered = False
                settle = getattr(incoming[0], 'settle', None)
                if settle is not None:
                    settle()
            with self._lock:
                incoming = self._next_held()

    def _next_held(self):
        """The next held message, or None (and this thread's turn given back); called with
        the lock held."""
        if not self._held:
            self._running -= 1
            return None
        incoming, since = self._held.popleft()
        waited = time.monotonic() - since
        self.held_seconds += waited
        self.longest_hold = max(self.longest_hold, waited)
        return incoming

    def log_summary(self):
        """Say how often and how long admitted messages waited (after ``wait()``; a
        no-op without a limit or admitted messages). Not an override of ``wait``:
        oslo.messaging orders start, stop and wait by their decorated definitions."""
        if self.limit and self.admitted_count:
            LOG.info('%s: %d of %d admitted messages (%s) waited for their turn; %.1f s in '
                     'all, %.2f s at most.', self.topic, self.held_count,
                     self.admitted_count, ', '.join(sorted(m for _, m in self.admitted)),
                     self.held_seconds, self.longest_hold)
