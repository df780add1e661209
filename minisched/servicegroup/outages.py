"""This process's own outages: silence it could not have heard is not the others' silence.

Nova's rule (``servicegroup.drivers.db``) counts a service down when its last report is
older than ``[DEFAULT] service_down_time``, whatever the observer went through. After a 60 s
outage of the message bus every compute's last report is older than that: the computes
report through the bus, so none could report, and the scheduler, itself cut off, drains the
casts queued meanwhile before any compute has reported again. Every host "has not been
heard from in a while", and the queued builds end in NoValidHost.

minisched's rule: a service's silence is the time since its last report **less the time
this process was itself cut off** in that span (the overlap with its own outages). A
service that went quiet while the observer could hear it is down after ``service_down_time``
as in Nova; one whose reports could not have reached anyone is judged from the observer's
reconnection on. An outage still open excludes the silence until it ends, for at most
``OPEN_LIMIT_SECONDS``: one whose end was not seen (a connection that gave up and was never
used again) must not hide a service that died since.

This process's outages come from two sources:

* its own state report (``drivers.db``): it failed for a reason that passes by itself
  (``minisched.messaging.bus_errors``, a transient database error): from its last successful report
  to the next one. That is the database for the scheduler and the conductor (they write
  their record themselves), the message bus for a compute;
* oslo.messaging's rabbit driver saying the broker is unreachable (or closed the
  connection) and, later, that it reconnected: the bus, for every process
  (:class:`BusWatch`, a handler on the driver's logger).
"""
import collections
import datetime
import logging
import threading

from oslo_utils import timeutils

#: Ended outages remembered; older ones are forgotten (each is far older than any down time).
KEPT = 32
#: Longest an outage still open is counted (seconds from its start).
OPEN_LIMIT_SECONDS = 900
#: The logger of oslo.messaging's rabbit driver, and what its lines say.
RABBIT_LOGGER = 'oslo.messaging._drivers.impl_rabbit'
_LOST = ('is unreachable', 'closed the connection', 'Connection failed')
_BACK = 'Reconnected to AMQP server'
#: Kinds of outage: the bus as the rabbit driver saw it, this process's own state report.
BUS, REPORT = 'message bus', 'state report'


class Outages:
    """Outage spans of this process: ``(start, end)`` naive UTC datetimes, per kind."""

    def __init__(self):
        self._lock = threading.Lock()
        self._ended = collections.deque(maxlen=KEPT)
        self._open = {}

    def begin(self, kind, since=None):
        """``kind`` (BUS, REPORT) is away since ``since`` (now by default); a second call
        while it is away keeps the first start."""
        with self._lock:
            self._open.setdefault(kind, since or timeutils.utcnow())

    def end(self, kind, at=None):
        """``kind`` is back (at ``at``, now by default); a no-op when it was not away."""
        with self._lock:
            start = self._open.pop(kind, None)
            if start is not None:
                self._ended.append((start, at or timeutils.utcnow()))

    def is_away(self, kind):
        with self._lock:
            return kind in self._open

    def spans(self, now):
        """Every outage span, the ongoing ones ending at ``now``."""
        limit = datetime.timedelta(seconds=OPEN_LIMIT_SECONDS)
        with self._lock:
            return list(self._ended) + [(start, min(now, start + limit))
                                        for start in self._open.values()]

    def unheard_seconds(self, since, now):
        """Seconds of ``since``..``now`` this process was cut off (overlapping outages of
        several kinds counted once)."""
        if since is None or since >= now:
            return 0.0
        total, reached = 0.0, since
        for start, end in sorted(self.spans(now)):
            start, end = max(start, reached), min(end, now)
            if end > start:
                total += (end - start).total_seconds()
                reached = end
        return total

    def unheard_us(self, since_us, now_us, epoch):
        """:meth:`unheard_seconds` of many heartbeats at once, in microseconds since
        ``epoch`` (numpy int64 arrays in, out): the ComputeFilter's vectorised form."""
        import numpy as np
        unheard = np.zeros_like(since_us)
        reached = since_us.copy()
        micro = datetime.timedelta(microseconds=1)
        now = epoch + now_us * micro
        for start, end in sorted(self.spans(now)):
            start_us, end_us = (start - epoch) // micro, (min(end, now) - epoch) // micro
            lower = np.maximum(reached, start_us)
            gained = np.clip(end_us - lower, 0, None)
            unheard += gained
            reached = np.where(gained > 0, end_us, reached)
        return unheard


#: This process's outages.
OWN = Outages()


class BusWatch(logging.Handler):
    """Notes the message bus's outages from oslo.messaging's rabbit driver's own lines."""

    def __init__(self, outages):
        super().__init__(logging.INFO)
        self.outages = outages

    def emit(self, record):
        try:
            text = record.msg if isinstance(record.msg, str) else ''
        except Exception:  # never fail the driver's logging
            return
        if _BACK in text:
            self.outages.end(BUS)
        elif record.levelno >= logging.ERROR and any(lost in text for lost in _LOST):
            self.outages.begin(BUS)


_watching = []


def watch_the_bus(outages=OWN):
    """Install the :class:`BusWatch` of ``outages`` once per process; not when the driver's
    INFO lines are off (its reconnections would go unseen): the bus's outages are then not
    taken into account, as in Nova."""
    logger = logging.getLogger(RABBIT_LOGGER)
    if not _watching and logger.isEnabledFor(logging.INFO):
        handler = BusWatch(outages)
        logger.addHandler(handler)
        _watching.append(handler)
