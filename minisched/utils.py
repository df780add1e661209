"""Helpers shared by the services, as Nova keeps its own in ``nova/utils.py``.

Work that must outlast an outage (:func:`until_done`): run it again, backing off, until it
is done or too late. A build's writes (the compute's conductor calls) and the conductor's
build tasks are run this way while the message bus, the conductor or the database is away:
1 s, then 2, 4, ... up to :data:`MAX_DELAY` s between two tries, until ``[DEFAULT]
long_rpc_timeout`` has passed.
"""
import collections
import logging
import threading
import time

LOG = logging.getLogger(__name__)

#: Longest wait between two tries.
MAX_DELAY = 30


def until_done(call, retried, seconds, describe, log=LOG):
    """``call()``'s result, ``call`` run again while it raises an error ``retried(error)``
    accepts, for at most ``seconds`` from now.

    :param describe: ``describe(error, delay)``: the WARNING logged (on ``log``, the caller's
        logger) before each new try
    :raises: the last error, when ``retried`` refuses it or the next try would start after
        the deadline
    """
    deadline = time.monotonic() + seconds
    delay = 1
    while True:
        try:
            return call()
        except Exception as exc:
            if not retried(exc) or time.monotonic() + delay > deadline:
                raise
            log.warning(describe(exc, delay))
        time.sleep(delay)
        delay = min(delay * 2, MAX_DELAY)


class Turnstile:
    """At most ``size`` holders at once (``with turnstile: ...``); the others enter in the
    order they arrived, each handed the place of one that leaves.

    ``threading.Semaphore`` lets a thread that arrives just as a place frees up take it
    before the threads already waiting, which can keep one of them waiting for many turns.
    Works with either backend (under eventlet its locks are green)."""

    def __init__(self, size):
        if size < 1:
            raise ValueError('a turnstile needs at least one place, not %r' % (size,))
        self._lock = threading.Lock()
        self._free = size
        self._waiting = collections.deque()  # one held lock per waiting thread

    def __enter__(self):
        with self._lock:
            if self._free and not self._waiting:
                self._free -= 1
                return self
            gate = threading.Lock()
            gate.acquire()
            self._waiting.append(gate)
        gate.acquire()  # released by the holder that hands its place over
        return self

    def __exit__(self, *exc_info):
        with self._lock:
            if self._waiting:
                self._waiting.popleft().release()
            else:
                self._free += 1
