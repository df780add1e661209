"""Rate-limited reports of the RPC messages a process refuses or fails to handle.

Part of what a service does with the RPC messages that arrive
(:mod:`minisched.messaging.incoming`).
"""
import functools
import logging
import os
import threading
import time

#: The RPC layer's logger: these reports are the RPC layer's, whichever module makes them.
LOG = logging.getLogger('minisched.rpc')


#: Seconds during which repeats of one kind of refused message are counted, not logged.
INCOMING_LOG_INTERVAL = 60.0


def _start_timer(delay, function):
    timer = threading.Timer(delay, function)
    timer.daemon = True
    timer.start()


class _Kind:
    __slots__ = ('logged_at', 'count', 'flush_pending', 'level', 'summary')

    def __init__(self, logged_at, level, summary):
        self.logged_at = logged_at
        self.count = 0
        self.flush_pending = False
        self.level = level
        self.summary = summary


class LogLimiter:
    """Logs the first event of each kind in full, then only counts the next ones.

    The count of an interval (``interval`` seconds from the last line of that kind) is logged
    once the interval is over, in one line ending with ``summary``; while events of the kind
    keep coming that is one line per interval, and the first event after a quiet interval is
    logged in full again. Every event not logged in full gets a DEBUG line of its own (with
    ``debug`` on, nothing is lost). A kind is any hashable ``key``; keys should be drawn from
    a bounded set (no free text from a message), and idle ones are dropped past
    :attr:`MAX_KINDS`.
    """

    MAX_KINDS = 1024

    def __init__(self, logger, interval, clock=time.monotonic, start_timer=_start_timer):
        self._logger = logger
        self.interval = interval
        self._clock = clock
        self._start_timer = start_timer
        self._lock = threading.Lock()
        self._kinds = {}
        self._pid = os.getpid()

    def log(self, key, level, summary, msg, *args, exc_info=None):
        """Log ``msg % args`` at ``level`` (with ``exc_info``) or count it under ``key``;
        ``summary`` names such events in the count line ("malformed casts to compute")."""
        now = self._clock()
        flush_in = None
        with self._lock:
            if self._pid != os.getpid():  # a forked worker: no timer of the parent runs here
                self._kinds, self._pid = {}, os.getpid()
            kind = self._kinds.get(key)
            full = kind is None or (kind.count == 0 and now - kind.logged_at >= self.interval)
            if full:
                if kind is None and len(self._kinds) >= self.MAX_KINDS:
                    self._forget_idle()
                self._kinds[key] = _Kind(now, level, summary)
            else:
                kind.count += 1
                if not kind.flush_pending:
                    kind.flush_pending = True
                    flush_in = max(0.0, kind.logged_at + self.interval - now)
        if full:
            self._logger.log(level, msg, *args, exc_info=exc_info)
            return True
        self._logger.debug(msg, *args)
        if flush_in is not None:
            self._start_timer(flush_in, functools.partial(self.flush, key))
        return False

    def flush(self, key):
        """Log how many events of ``key`` were counted since its last line (if any)."""
        now = self._clock()
        with self._lock:
            kind = self._kinds.get(key)
            if kind is None:
                return
            count, since = kind.count, kind.logged_at
            kind.count, kind.flush_pending = 0, False
            if count:
                kind.logged_at = now
        if count:
            self._logger.log(kind.level, '%d more %s in the last %d s (one line per %d s)',
                             count, kind.summary, round(now - since), self.interval)

    def _forget_idle(self):
        for key in [k for k, kind in self._kinds.items()
                    if kind.count == 0 and not kind.flush_pending]:
            del self._kinds[key]


#: Reports of refused or failed incoming messages, for every RPC server of the process.
INCOMING_LOG = LogLimiter(LOG, INCOMING_LOG_INTERVAL)


def _short(text, limit=80):
    """``text`` cut to about ``limit`` characters: a log line quotes fields of a message,
    which may be of any size."""
    return text if len(text) <= limit else '%s... (%d characters)' % (text[:limit], len(text))
