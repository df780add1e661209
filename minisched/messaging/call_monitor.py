"""Call-monitor heartbeats for every call a process serves, from one thread.

Part of what a service does with the RPC messages that arrive
(:mod:`minisched.messaging.incoming`):
:class:`~minisched.messaging.monitored_dispatcher.MonitoredDispatcher` watches each call here.
"""
import logging
import os
import threading
import time

#: The RPC layer's logger: these reports are the RPC layer's, whichever module makes them.
LOG = logging.getLogger('minisched.rpc')


class CallMonitor:
    """Sends the call-monitor heartbeats of every call this process is serving.

    A caller that sets ``call_monitor_timeout`` (as the scheduler's and conductor's clients
    do, like Nova's) expects a heartbeat every ``call_monitor_timeout / 2`` seconds while its
    call runs. oslo.messaging's dispatcher starts a watchdog thread per such call and joins it
    before replying; under eventlet that start and join cost about a millisecond, a quarter
    of a whole select_destinations at 1,000 hosts. Here one thread sends every call's
    heartbeats on the same schedule (the first ``interval`` seconds after the call started,
    then every ``interval``), and a call that ends sooner costs two dictionary operations.
    As with the watchdog, no heartbeat is sent once ``unwatch`` has returned.
    """

    #: Seconds between the monitor's checks while no call is watched (at most a heartbeat's
    #: shortest interval, so a new call never needs to wake it).
    IDLE_SECONDS = 1.0

    def __init__(self):
        self._calls = {}  # token -> _MonitoredCall
        self._lock = threading.Lock()
        self._wakeup = threading.Event()
        self._next_wake = 0.0  # monotonic time of the thread's next check
        self._thread_pid = None  # the thread does not survive a fork: started per process

    def watch(self, incoming):
        """Start beating for ``incoming``; returns a token for :meth:`unwatch` (None when
        the caller's timeout is not usable, as oslo.messaging's watchdog judges it)."""
        try:
            interval = int(incoming.client_timeout) / 2
        except (TypeError, ValueError):
            interval = 0
        if interval < 1:
            LOG.warning('Client provided an invalid timeout value of %r',
                        incoming.client_timeout)
            return None
        call = _MonitoredCall(incoming, interval)
        with self._lock:
            self._calls[call] = call
            start = self._thread_pid != os.getpid()
            if start:
                self._thread_pid = os.getpid()
                self._next_wake = 0.0
            wake = call.due < self._next_wake
        if start:
            # Started outside the lock: under eventlet, Thread.start() yields, and another
            # call's watch() must not find the lock held across that switch.
            threading.Thread(target=self._run, daemon=True, name='call-monitor').start()
        elif wake:
            self._wakeup.set()
        return call

    def unwatch(self, token):
        if token is None:
            return
        with self._lock:
            self._calls.pop(token, None)
        with token.lock:  # waits for a heartbeat being sent; none is sent after this
            token.done = True

    def _run(self):
        while True:
            self._wakeup.clear()
            self._wakeup.wait(self._beat_due())

    def _beat_due(self):
        """Send the heartbeats that are due; returns seconds until the next check."""
        now = time.monotonic()
        with self._lock:
            calls = list(self._calls.values())
        for call in calls:
            if call.due <= now and not call.beat():
                self.unwatch(call)
        with self._lock:
            now = time.monotonic()
            self._next_wake = min([c.due for c in self._calls.values()] +
                                  [now + self.IDLE_SECONDS])
            return max(0.0, self._next_wake - now)


class _MonitoredCall:
    __slots__ = ('incoming', 'interval', 'due', 'lock', 'done')

    def __init__(self, incoming, interval):
        self.incoming = incoming
        self.interval = interval
        self.due = time.monotonic() + interval
        self.lock = threading.Lock()
        self.done = False

    def beat(self):
        """Send one heartbeat; False when it failed (the watchdog then stops too)."""
        with self.lock:
            if self.done:
                return True
            message = self.incoming.message
            LOG.debug('Sending call-monitor heartbeat for active call to %(method)s '
                      '(interval=%(interval)i)',
                      {'method': message.get('method') if isinstance(message, dict) else None,
                       'interval': self.interval})
            try:
                self.incoming.heartbeat()
            except Exception as exc:
                LOG.debug('Call-monitor heartbeat failed: %s', exc)
                return False
            self.due = time.monotonic() + self.interval
            return True


CALL_MONITOR = CallMonitor()
