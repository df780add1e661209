"""Memory a large RPC message held, given back once it is used.

Part of what a service does with the RPC messages that arrive
(:mod:`minisched.messaging.incoming`, whose docstring has the measurements).
"""
import ctypes
import functools
import gc
import threading
import time

from minisched.messaging import incoming_log


#: Bytes from which a message's body and decoded form are released as soon as they are used,
#: and a garbage collection follows.
LARGE_MESSAGE_BYTES = 1024 * 1024


def _malloc_trim():
    """glibc's ``malloc_trim(0)`` as a function of no argument; a no-op on another libc.

    Looked up among the symbols the process has loaded (``CDLL(None)``), not by
    ``ctypes.util.find_library``, which runs ``ldconfig -p`` in a subprocess: this module is
    imported by every service and command.
    """
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return lambda: None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return functools.partial(trim, 0)


class _DeferredCollection:
    """One garbage collection :attr:`DELAY` seconds after a large message was handled.

    The objects a large message decodes into hold reference cycles; they outlive the message
    until the next full collection, which an idle worker may not run for a long time (it
    runs as objects are allocated): two 15 MB casts left a scheduler worker 90 MB larger for
    good. By the time the collection runs, the message and its reply are freed. At most one
    is pending at a time, and it runs :attr:`DELAY` seconds after the *last* large message:
    a second message handled while the first one's timer ran pushes it back (a timer due
    for the first one ran while the second was still held, and nothing gave the second
    back until another large message came).
    """

    DELAY = 1.0

    def __init__(self, start_timer=incoming_log._start_timer, collect=gc.collect, trim=None,
                 clock=time.monotonic):
        self._start_timer = start_timer
        self._collect = collect
        self._trim = _malloc_trim() if trim is None else trim
        self._clock = clock
        self._lock = threading.Lock()
        self._pending = False
        self._due = 0.0

    def schedule(self):
        with self._lock:
            self._due = self._clock() + self.DELAY
            if self._pending:
                return
            self._pending = True
        self._start_timer(self.DELAY, self._run)

    def _run(self):
        with self._lock:
            wait = self._due - self._clock()
            if wait <= 0:
                self._pending = False
        if wait > 0:
            self._start_timer(wait, self._run)
            return
        self._collect()
        self._trim()


COLLECTION = _DeferredCollection()
