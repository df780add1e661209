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
arrives. Nothing changes on the wire: the same messages, the same answers, the same delivery
guarantees. oslo.messaging's RPC listener acknowledges a message when it receives it (before
any thread runs it), so a held message is exactly what a message waiting for a free thread
of the pool was before: the server runs it before it stops (``wait()`` returns once none is
held), and it is lost with the process if that is killed (for a build request, the
conductor's stuck-build check ends the build, see ``[conductor]
stuck_build_timeout_seconds``).

The conductor can admit ``schedule_and_build_instances`` ``[conductor]
max_concurrent_schedule_and_build`` at a time per worker (default 8; 0: no limit, every
message in arrival order as in Nova).
"""
import collections
import logging
import threading
import time

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
            try:
                self._process_incoming(incoming)
            except Exception:  # RPCServer answers and logs its own failures; never stop here
                LOG.exception('%s: unexpected failure running a message', self.topic)
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
