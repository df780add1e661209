"""What a service does with the RPC messages that arrive, before and around its endpoints.

Each check runs before the work it protects:

* **Size, before decoding.** oslo.messaging's rabbit driver decodes a delivery in kombu, inside
  ``impl_rabbit.Consumer._callback`` (``RabbitMessage(message)`` reads ``message.payload``),
  before any serializer or dispatcher sees it, and a decoding error there is logged with a
  traceback. So :func:`_guard_rabbit_consumers` replaces that callback once per process: it
  measures the raw body (``len(message.body)``: as received, before JSON and before any
  ``kombu_compression`` is undone) against ``[DEFAULT] rpc_max_message_size_mb`` and drops a
  request or cast over it (one WARNING with the size and the limit, then an ack, so the broker
  does not deliver it again); replies to this process's own calls are not limited.
* **Decoding.** The same hook puts :class:`_CheckedRabbitMessage` in place of the driver's
  RabbitMessage: a body that is not JSON, not an oslo.messaging envelope of a compatible
  version, or not an object is dropped and acknowledged with one WARNING naming its queue and
  the reason (no traceback). A replayed message (a ``_unique_id`` just seen), which the driver
  drops with a traceback each time, gets a rate-limited WARNING instead.
* **Shape, method, arguments.** :class:`MonitoredDispatcher` refuses a message whose method,
  version or arguments are not what an endpoint takes: no such method or version, arguments
  that are not an object or nest too deeply, a context or an object primitive that does not
  load, argument names the method does not take, or values of another type than the
  method's annotations say. One WARNING names the topic, the method and the reason; a call
  gets an error back: oslo.messaging's NoSuchMethod or UnsupportedVersion, the minisched
  exception of an object that does not load, else ``exception.Invalid`` with the reason.
* **Endpoint failures.** An exception escaping an endpoint is logged with its traceback the
  first time; its repeats (same method, class and place) are counted.

Repeats of the same kind (queue or topic, method, reason) are rate-limited by
:data:`INCOMING_LOG`: the first is logged, the next ones counted and their number logged once
per :data:`INCOMING_LOG_INTERVAL` seconds; each one still gets a DEBUG line with its request id.

Memory: what a message of :data:`LARGE_MESSAGE_BYTES` or more held is released once used:
its body and kombu's decoded copy once it is decoded, its decoded form once it is dispatched
(oslo.messaging's executor keeps the last message it ran until it gets the next one), and the
reference cycles among the objects it decoded into by one garbage collection a second later
(:class:`_DeferredCollection`; an idle worker would not collect them for a long time).
Then glibc's ``malloc_trim(0)`` gives the freed heap back to the system: a freed block of
13 MB raises glibc's mmap threshold, so the next ones come from the heap, whose free top
is otherwise kept. Measured on a scheduler worker given two casts of 68 MB (an InstanceList
of 60,000 objects) with no size limit: it went from 105 MB to 636 MB and stayed there before
the release and the collection, and came back to 113 MB with them. Given two casts of 13 MB
under the default limit, it stayed 24-38 MB larger after the collection and is 7-8 MB larger
with the trim. A message over the limit is refused undecoded.
"""
import ctypes
import functools
import gc
from importlib import metadata
import inspect
import logging
import os
import threading
import time
import types
import typing

import oslo_messaging as messaging
from oslo_config import cfg
from oslo_messaging._drivers import amqp as rpc_amqp
from oslo_messaging._drivers import amqpdriver
from oslo_messaging._drivers import common as driver_common
from oslo_messaging._drivers import impl_rabbit
from oslo_messaging.rpc import server as rpc_server
from oslo_messaging.rpc import dispatcher

from minisched import exception
from minisched.messaging import trace

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


# -- incoming messages: rate-limited reports -------------------------------------------------

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


# -- incoming messages: memory ---------------------------------------------------------------

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

    def __init__(self, start_timer=_start_timer, collect=gc.collect, trim=None,
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


# -- incoming messages: size and decoding (rabbit driver) ------------------------------------

#: ``[DEFAULT] rpc_max_message_size_mb`` when the option is not registered (tools, tests).
DEFAULT_MAX_MESSAGE_SIZE_MB = 16
#: ``[DEFAULT] rpc_poll_floor_ms`` when the option is not registered.
DEFAULT_POLL_FLOOR_MS = 50
_MIB = 1024 * 1024
#: Largest body accepted (bytes; 0: no limit), set by ``init()`` from the option.
_incoming = {'max_bytes': DEFAULT_MAX_MESSAGE_SIZE_MB * _MIB,
             'max_mb': DEFAULT_MAX_MESSAGE_SIZE_MB}


# -- the private parts of oslo.messaging this relies on ----------------------------------------

class PrivateHookMissing(RuntimeError):
    """This oslo.messaging lacks a private attribute that a check of incoming messages
    needs: the service refuses to start rather than run without the check."""


#: ``(where, owner, attribute, what needs it)`` of each private attribute of oslo.messaging
#: that minisched hooks into. Without one of them a check would silently do nothing, so a
#: service does not start (:func:`check_private_hooks`). tests/unit/test_rpc_private_hooks.py
#: checks each against the installed oslo.messaging, and tools/upper-constraints.txt names
#: the versions the suite ran against.
REQUIRED_HOOKS = (
    ('impl_rabbit.Consumer', impl_rabbit.Consumer, '_callback',
     'the size and decoding checks of incoming messages'),
    ('impl_rabbit', impl_rabbit, 'RabbitMessage', 'the decoding check of incoming messages'),
    ('common', driver_common, 'deserialize_msg', 'the decoding check of incoming messages'),
    ('amqpdriver', amqpdriver, 'LOG', 'the rate limit of duplicate-message reports'),
    ('rpc.server.RPCServer', rpc_server.RPCServer, '_on_incoming',
     "the conductor's admission ([conductor] max_concurrent_schedule_and_build)"),
    ('rpc.server.RPCServer', rpc_server.RPCServer, '_process_incoming',
     "the conductor's admission ([conductor] max_concurrent_schedule_and_build)"),
    ('rpc.server.RPCServer', rpc_server.RPCServer, '_create_listener',
     "the conductor's acknowledgement of admitted casts once they have run"),
    ('amqpdriver', amqpdriver, 'RpcAMQPListener',
     "the conductor's acknowledgement of admitted casts once they have run"),
    ('amqpdriver', amqpdriver, 'AMQPIncomingMessage',
     "the conductor's acknowledgement of admitted casts once they have run"),
    ('amqp', rpc_amqp, 'unpack_context',
     "the conductor's acknowledgement of admitted casts once they have run"),
    ('amqp', rpc_amqp, 'UNIQUE_ID',
     "the conductor's acknowledgement of admitted casts once they have run"),
)
#: The same for hooks whose absence only costs efficiency: a WARNING, and the service starts.
OPTIONAL_HOOKS = (
    ('amqpdriver', amqpdriver, 'ACK_REQUEUE_EVERY_SECONDS_MIN', '[DEFAULT] rpc_poll_floor_ms'),
    ('amqpdriver', amqpdriver, 'ACK_REQUEUE_EVERY_SECONDS_MAX', '[DEFAULT] rpc_poll_floor_ms'),
)


def oslo_messaging_version():
    try:
        return metadata.version('oslo.messaging')
    except metadata.PackageNotFoundError:
        return 'of unknown version'


def missing_hooks(hooks):
    """``['where.attribute (what needs it)', ...]`` of the ``hooks`` this oslo.messaging
    lacks. The consumer callback counts as present only as oslo.messaging's own (not
    minisched's replacement, which wraps it)."""
    missing = []
    for where, owner, attribute, purpose in hooks:
        if owner is impl_rabbit.Consumer and attribute == '_callback':
            present = _original_callback is not None
        else:
            present = hasattr(owner, attribute)
        if not present:
            missing.append('%s.%s (%s)' % (where, attribute, purpose))
    return missing


def check_private_hooks():
    """Raise PrivateHookMissing, one line naming the oslo.messaging version and every
    missing attribute, when a required hook is gone; log a WARNING for an optional one."""
    missing = missing_hooks(REQUIRED_HOOKS)
    if missing:
        raise PrivateHookMissing(
            'oslo.messaging %s has no %s: minisched hooks into these private attributes; '
            'install the oslo.messaging of tools/upper-constraints.txt'
            % (oslo_messaging_version(), ', '.join(missing)))
    for problem in missing_hooks(OPTIONAL_HOOKS):
        LOG.warning('oslo.messaging %s has no %s: that option has no effect.',
                    oslo_messaging_version(), problem)


def configure(conf):
    """Apply ``conf`` to what arrives from now on (size limit, consumer checks, TLS file
    names in connection errors): :func:`minisched.rpc.init` calls it. Raises
    PrivateHookMissing (see :func:`check_private_hooks`) before changing anything."""
    check_private_hooks()
    _configure_incoming(conf)
    _name_tls_files_in_connection_errors(conf)


def _configure_incoming(conf):
    try:
        size_mb = conf.rpc_max_message_size_mb
    except cfg.NoSuchOptError:
        size_mb = DEFAULT_MAX_MESSAGE_SIZE_MB
    _incoming.update(max_bytes=size_mb * _MIB, max_mb=size_mb)
    _guard_rabbit_consumers()
    _set_poll_floor(conf)


def _set_poll_floor(conf):
    """``[DEFAULT] rpc_poll_floor_ms`` as oslo.messaging's shortest listener wait.

    Its rabbit listeners (``AMQPListener.poll``) and reply waiters (``ReplyWaiter.poll``)
    wait ``ACK_REQUEUE_EVERY_SECONDS_MIN`` after a message, then twice that, and so on up to
    ``ACK_REQUEUE_EVERY_SECONDS_MAX``; they read the module's value each time, so setting it
    here covers the listeners made before as well. Where the constant is gone (another
    oslo.messaging), nothing is set and a warning says the option has no effect.
    """
    try:
        floor_ms = conf.rpc_poll_floor_ms
    except cfg.NoSuchOptError:
        floor_ms = DEFAULT_POLL_FLOOR_MS
    if missing_hooks(OPTIONAL_HOOKS):  # said once by check_private_hooks
        return
    amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN = min(
        floor_ms / 1000.0, amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MAX)


class _Refused(BaseException):
    """A delivery :class:`_CheckedRabbitMessage` could not decode.

    A BaseException, to get past the ``except Exception`` (which logs a traceback and
    rejects) that oslo.messaging's ``Consumer._callback`` has around the message's creation,
    up to :func:`_checked_callback`, which reports it and acknowledges it."""

    def __init__(self, message, kind, reason):
        super().__init__(reason)
        self.message = message
        self.kind = kind
        self.reason = reason


# Defined whatever this oslo.messaging has; without the driver's class, or its callback,
# services refuse to start (check_private_hooks).
_RabbitMessage = getattr(impl_rabbit, 'RabbitMessage', dict)


class _CheckedRabbitMessage(_RabbitMessage):
    """The rabbit driver's RabbitMessage, refusing (:class:`_Refused`) what it cannot
    decode into a message dict instead of raising the decoder's error; ``size`` is the
    length of the body."""

    def __init__(self, raw_message):  # the base __init__ decodes unchecked: not called
        if raw_message.content_type != 'application/json':
            raise _Refused(raw_message, 'not JSON', 'content type %r, not application/json'
                           % (raw_message.content_type,))
        try:
            payload = raw_message.payload
        except Exception as exc:  # kombu's DecodeError (of a JSON, Unicode, recursion error)
            raise _Refused(raw_message, 'not JSON', exception.first_line(exc)) from None
        try:
            message = driver_common.deserialize_msg(payload)
        except RecursionError:
            raise _Refused(raw_message, 'bad envelope',
                           'oslo.message nested too deeply to decode') from None
        except Exception as exc:  # UnsupportedRpcEnvelopeVersion, oslo.message not JSON...
            raise _Refused(raw_message, 'bad envelope', '%s: %s' % (
                type(exc).__name__, exception.first_line(exc))) from None
        if not isinstance(message, dict):
            raise _Refused(raw_message, 'not a message', 'a JSON %s, not an object'
                           % type(message).__name__)
        dict.__init__(self, message)
        self._raw_message = raw_message
        body = raw_message.body
        self.size = len(body) if body is not None else 0
        if self.size >= LARGE_MESSAGE_BYTES:
            # Decoded: the body and kombu's decoded envelope (each as large as the message)
            # are no longer needed (an ack needs only the delivery tag), and oslo.messaging
            # keeps the last message of each executor thread until its next one.
            raw_message.body, raw_message._decoded_cache = b'', None


_original_callback = getattr(impl_rabbit.Consumer, '_callback', None)


def _checked_callback(consumer, raw_message):
    """``impl_rabbit.Consumer._callback``, refusing a body over the size limit before it is
    decoded and reporting undecodable ones without a traceback; both are acknowledged."""
    body = getattr(raw_message, 'body', None)
    size = len(body) if isinstance(body, (bytes, bytearray, str)) else 0
    limit = _incoming['max_bytes']
    if limit and size > limit and not consumer.queue_name.startswith('reply_'):
        _drop(consumer, raw_message, size, 'too large',
              'larger than [DEFAULT] rpc_max_message_size_mb = %d (%d bytes); not decoded'
              % (_incoming['max_mb'], limit))
        return
    try:
        _original_callback(consumer, raw_message)
        return
    except _Refused as exc:
        refused = exc
    # Reported outside the except block: oslo.log would append the exception to the line.
    _drop(consumer, refused.message, size, refused.kind, refused.reason)


def _drop(consumer, message, size, kind, reason):
    queue_name = consumer.queue_name
    INCOMING_LOG.log((queue_name, kind), logging.WARNING,
                     'messages dropped from queue %s (%s)' % (queue_name, kind),
                     'Dropped a message of %d bytes from queue %s (%s): %s', size, queue_name,
                     kind, _short(reason, 300))
    try:
        # The raw py-amqp message or kombu's: both carry their channel and delivery tag.
        # (kombu's conversion would first decompress a compressed body, which may be huge.)
        message.channel.basic_ack(message.delivery_tag)
    except Exception as exc:  # the connection went away: the broker redelivers it
        LOG.debug('Could not acknowledge the dropped message: %s', exc)
    if size >= LARGE_MESSAGE_BYTES:
        COLLECTION.schedule()  # its body, freed when the driver drops it, given back


class _DuplicatesRateLimited(logging.Filter):
    """Turns oslo.messaging's "ignoring duplicate message" (an ERROR with a traceback, for
    each message whose ``_unique_id`` it has just seen: a replay) into a rate-limited
    WARNING without one."""

    def filter(self, record):
        if record.msg != 'ignoring duplicate message %s' or not record.exc_info:
            return True
        INCOMING_LOG.log(('duplicate',), logging.WARNING, 'duplicate messages dropped',
                         'Dropped a duplicate message: %s',
                         exception.first_line(record.exc_info[1]))
        return False


def _guard_rabbit_consumers():
    """Put the checks above in the rabbit driver of this process (once)."""
    if impl_rabbit.Consumer._callback is not _checked_callback:
        impl_rabbit.Consumer._callback = _checked_callback
        impl_rabbit.RabbitMessage = _CheckedRabbitMessage
    if not any(isinstance(f, _DuplicatesRateLimited) for f in amqpdriver.LOG.filters):
        amqpdriver.LOG.addFilter(_DuplicatesRateLimited())


# -- TLS to the broker -----------------------------------------------------------------------

#: The TLS file options of ``[oslo_messaging_rabbit]``.
TLS_FILE_OPTIONS = ('ssl_ca_file', 'ssl_cert_file', 'ssl_key_file')


class _TLSFilesNamed(logging.Filter):
    """Adds the TLS files to the rabbit driver's connection-failure lines that are about
    TLS (the driver says "certificate verify failed", never which CA file it used)."""

    _MARKERS = ('SSL', 'certificate', 'CERTIFICATE', 'TLS')

    def __init__(self, files):
        super().__init__()
        self.files = files

    def filter(self, record):
        if record.levelno >= logging.WARNING:
            text = record.getMessage()
            if any(marker in text for marker in self._MARKERS) and self.files not in text:
                record.msg, record.args = '%s [TLS files: %s]', (text, self.files)
        return True


def _name_tls_files_in_connection_errors(conf):
    try:
        rabbit = conf.oslo_messaging_rabbit
        enabled = rabbit.ssl
        files = ', '.join('%s = %s' % (name, rabbit[name]) for name in TLS_FILE_OPTIONS
                          if rabbit[name])
    except (cfg.NoSuchOptError, AttributeError):
        return
    logger = getattr(impl_rabbit.LOG, 'logger', impl_rabbit.LOG)
    for old in [f for f in logger.filters if isinstance(f, _TLSFilesNamed)]:
        logger.removeFilter(old)
    if enabled:
        logger.addFilter(_TLSFilesNamed(files or 'ssl_ca_file unset: the system CA store'))


# -- incoming messages: the dispatcher -------------------------------------------------------

#: Deepest nesting of lists and dicts accepted in a message's arguments. minisched's own
#: messages stay under 20 levels; decoding goes one Python stack frame per level or more.
MAX_ARGUMENT_DEPTH = 100


def _nesting_deeper_than(value, limit):
    """Whether ``value`` nests lists/tuples/dicts more than ``limit`` levels (no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, (dict, list, tuple)))
    return False


#: ``active`` while a dispatcher decodes arguments (per thread, or green thread).
_decoding = threading.local()


class _QuietWhileDecoding(logging.Filter):
    """Drops oslo.versionedobjects' "Unable to instantiate unregistered object type" ERROR
    while a dispatcher decodes arguments: the dispatcher reports the same error, once per
    kind, and the unfiltered line came once per message."""

    def filter(self, record):
        return not (getattr(_decoding, 'active', False) and str(record.msg).startswith(
            'Unable to instantiate unregistered object type'))


_OVO_LOGGER = logging.getLogger('object')  # oslo.versionedobjects.base's logger
if not any(isinstance(f, _QuietWhileDecoding) for f in _OVO_LOGGER.filters):
    _OVO_LOGGER.addFilter(_QuietWhileDecoding())


class _Malformed(Exception):
    """A message an endpoint cannot take: ``kind`` (bounded, for rate limiting), ``reason``
    (for the log) and ``error`` (what a caller gets back)."""

    def __init__(self, kind, reason, error):
        super().__init__(reason)
        self.kind = kind
        self.reason = reason
        self.error = error


class _Parameters:
    """What an endpoint method takes after its context: names, required names, and the
    classes its annotations give (a value of another class is refused; None passes where
    the annotation allows it or the default is None)."""

    __slots__ = ('names', 'required', 'any_name', 'types')

    def __init__(self, method):
        self.names, self.required, self.any_name, self.types = set(), set(), True, {}
        try:
            parameters = list(inspect.signature(method).parameters.values())[1:]
        except (TypeError, ValueError):
            return  # not introspectable: anything goes, as before
        try:
            hints = typing.get_type_hints(method)
        except Exception:  # an annotation that does not resolve: checked by nobody
            hints = {}
        self.any_name = False
        for parameter in parameters:
            if parameter.kind == parameter.VAR_KEYWORD:
                self.any_name = True
            if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
                continue
            self.names.add(parameter.name)
            if parameter.default is parameter.empty:
                self.required.add(parameter.name)
            classes = _classes_of(hints.get(parameter.name))
            if classes:
                if parameter.default is None:
                    classes = classes + (type(None),)
                self.types[parameter.name] = classes

    def problem(self, kwargs):
        """Why ``kwargs`` do not fit, or None."""
        if not self.any_name:
            unexpected = kwargs.keys() - self.names
            if unexpected:
                return 'unexpected argument(s) %s' % ', '.join(sorted(map(repr, unexpected)))
        missing = self.required - kwargs.keys()
        if missing:
            return 'missing argument(s) %s' % ', '.join(sorted(map(repr, missing)))
        for name, classes in self.types.items():
            value = kwargs.get(name)
            if name in kwargs and not isinstance(value, classes):
                return 'argument %r is %s, not %s' % (
                    name, type(value).__name__,
                    ' or '.join(c.__name__ for c in classes if c is not type(None)) or 'None')
        return None


def _classes_of(hint):
    """The classes an annotation allows, as a tuple; () when it is not a plain class, an
    Optional/Union of classes or a parametrized builtin (whose items are not checked)."""
    if hint is None:
        return ()
    if isinstance(hint, type):
        return () if hint is object else (hint,)
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        classes = tuple(c for arg in typing.get_args(hint) for c in _classes_of(arg)
                        or ((type(None),) if arg is type(None) else (None,)))
        return () if None in classes else classes
    if isinstance(origin, type):
        return (origin,)
    return ()


class MonitoredDispatcher(dispatcher.RPCDispatcher):
    """oslo.messaging's RPCDispatcher, with call-monitor heartbeats sent by
    :data:`CALL_MONITOR` and malformed messages refused before any endpoint runs.

    Checked, in this order: the message's shape (method a name, version and namespace
    strings, arguments an object nested at most :data:`MAX_ARGUMENT_DEPTH` levels: decoding
    recurses once per level, and a message close to the interpreter's recursion limit would
    fail wherever the limit happened to fall); an endpoint with that method at that version;
    the context and every argument load; the argument names and annotated types fit the
    method. A refused message gets one WARNING (rate-limited by :data:`INCOMING_LOG`) naming
    ``topic``, the method, the request id and the reason; for a call, the error goes back to
    the caller (as an ExpectedException, which oslo.messaging does not log again).
    """

    def __init__(self, endpoints, serializer, access_policy=None, topic=None):
        super().__init__(endpoints, serializer, access_policy)
        self.topic = topic
        self._parameters = {}  # (endpoint class, method name) -> _Parameters

    def dispatch(self, incoming):
        token = CALL_MONITOR.watch(incoming) if incoming.client_timeout else None
        # After watch(): the monitor's thread, started by the first call, must not count as
        # working for this message.
        handling = trace.receive(self.topic, incoming) if trace.ENABLED else None
        try:
            try:
                endpoint, method, ctxt, kwargs = self._prepare(incoming)
            except _Malformed as exc:
                malformed = exc
            else:
                return self._invoke(incoming, endpoint, method, ctxt, kwargs)
            # Reported outside the except block: oslo.log would append the exception.
            self._refuse(incoming, malformed)
        except BaseException:
            if handling is not None:
                handling.failed = True
            raise
        finally:
            if handling is not None:
                handling.done()
            CALL_MONITOR.unwatch(token)
            if getattr(incoming.message, 'size', 0) >= LARGE_MESSAGE_BYTES:
                # oslo.messaging's executor keeps its last message until it gets another:
                # a large one, decoded, would stay in memory for that long. The server reads
                # nothing of it after dispatch (the method name was read before).
                incoming.message.clear()
                COLLECTION.schedule()

    def _prepare(self, incoming):
        """``(endpoint, method, context, arguments)`` of ``incoming``; _Malformed when an
        endpoint could not take it."""
        message = incoming.message
        method = message.get('method')
        if not isinstance(method, str) or not method:
            raise _Malformed('malformed', 'method %s is not a name' % _short(repr(method)),
                             dispatcher.NoSuchMethod(method))
        namespace = message.get('namespace')
        version = message.get('version', '1.0')
        for name, value in (('version', version), ('namespace', namespace)):
            if value is not None and not isinstance(value, str):
                raise _Malformed('malformed', '%s is a %s' % (name, type(value).__name__),
                                 dispatcher.UnsupportedVersion(version, method=method))
        args = message.get('args', {})
        if not isinstance(args, dict):
            reason = 'args is a %s, not an object' % type(args).__name__
            raise _Malformed('malformed', reason, exception.Invalid(reason=reason))
        endpoint = self._endpoint(method, namespace, version)
        if _nesting_deeper_than(args, MAX_ARGUMENT_DEPTH):
            reason = 'arguments nested deeper than %d levels' % MAX_ARGUMENT_DEPTH
            raise _Malformed('bad arguments', reason,
                             exception.InvalidObjectRequest(reason=reason))
        try:
            ctxt = self.serializer.deserialize_context(incoming.ctxt)
        except Exception as exc:
            reason = 'request context does not load: %s: %s' % (type(exc).__name__,
                                                                exception.first_line(exc))
            raise _Malformed('bad context', reason, exception.Invalid(reason=reason)) from None
        kwargs = {}
        _decoding.active = True
        try:
            for name, value in args.items():
                try:
                    kwargs[name] = self.serializer.deserialize_entity(ctxt, value)
                except messaging.ExpectedException as exc:  # a server_side serializer's
                    raise self._bad_argument(name, exc.exc_info[1]) from None
                except Exception as exc:
                    raise self._bad_argument(name, exc) from None
        finally:
            _decoding.active = False
        problem = self._parameters_of(endpoint, method).problem(kwargs)
        if problem:
            raise _Malformed('bad arguments', problem,
                             exception.Invalid(reason='%s(): %s' % (method, problem)))
        return endpoint, method, ctxt, kwargs

    @staticmethod
    def _bad_argument(name, exc):
        if isinstance(exc, exception.MinischedException):
            reason = 'argument %r does not load: %s' % (name, exc.format_message())
            return _Malformed('bad arguments', reason, exc)
        reason = 'argument %r does not load: %s: %s' % (name, type(exc).__name__,
                                                       exception.first_line(exc))
        return _Malformed('bad arguments', reason,
                          exception.InvalidObjectRequest(reason=reason))

    def _endpoint(self, method, namespace, version):
        """The base class's endpoint choice, without the watchdog thread and event it makes
        for every message, started or not (a tenth of a millisecond under eventlet): the
        first endpoint whose target takes the namespace and version and which has the method
        (allowed by the access policy). _Malformed of NoSuchMethod when an endpoint took the
        version but none had the method, else of UnsupportedVersion."""
        found_compatible = False
        try:
            for endpoint in self.endpoints:
                target = getattr(endpoint, 'target', None) or self._default_target
                if not (self._is_namespace(target, namespace) and
                        self._is_compatible(target, version)):
                    continue
                if hasattr(endpoint, method) and self.access_policy.is_allowed(endpoint,
                                                                               method):
                    return endpoint
                found_compatible = True
        except (TypeError, ValueError) as exc:  # a version that is not "<major>.<minor>"
            raise _Malformed('unsupported version', 'version %r: %s' % (
                version, exception.first_line(exc)),
                dispatcher.UnsupportedVersion(version, method=method)) from None
        if found_compatible:
            raise _Malformed('unknown method', 'no such method',
                             dispatcher.NoSuchMethod(method))
        raise _Malformed('unsupported version', 'no endpoint at version %s%s' % (
            version, ' of namespace %s' % namespace if namespace else ''),
            dispatcher.UnsupportedVersion(version, method=method))

    def _parameters_of(self, endpoint, method):
        key = (type(endpoint), method)
        parameters = self._parameters.get(key)
        if parameters is None:
            parameters = self._parameters[key] = _Parameters(getattr(endpoint, method))
        return parameters

    def _refuse(self, incoming, malformed):
        """Report ``malformed`` (rate-limited) and raise what the caller gets back."""
        method = incoming.message.get('method')
        # Only a method an endpoint has goes into the key: the kinds stay a bounded set.
        known = malformed.kind not in ('malformed', 'unknown method', 'unsupported version')
        what = 'call' if getattr(incoming, 'reply_q', None) else 'cast'
        INCOMING_LOG.log(
            (self.topic, method if known else None, malformed.kind), logging.WARNING,
            'malformed messages to %s (%s%s)' % (self.topic, malformed.kind,
                                                 ' of %s' % method if known else ''),
            'Rejected a malformed %s to %s (method %s, request %s): %s', what, self.topic,
            _short(repr(method)), _short(str(_request_id(incoming))),
            _short(malformed.reason, 300))
        try:
            raise malformed.error
        except BaseException:
            raise messaging.ExpectedException() from None

    def _invoke(self, incoming, endpoint, method, ctxt, kwargs):
        try:
            result = getattr(endpoint, method)(ctxt, **kwargs)
        except messaging.ExpectedException:
            raise
        except Exception as exc:
            failure = exc
        else:
            return self.serializer.serialize_entity(ctxt, result)
        self._report_failure(incoming, method, failure)
        try:
            raise failure
        except Exception:
            raise messaging.ExpectedException() from None

    def _report_failure(self, incoming, method, exc):
        """Log an endpoint's exception with its traceback, once per kind and interval: a
        flood of messages that all fail the same way (garbage the checks above cannot
        recognise, a database down) must not write one traceback each."""
        frame = exc.__traceback__
        while frame.tb_next is not None:
            frame = frame.tb_next
        where = '%s:%d' % (frame.tb_frame.f_code.co_filename, frame.tb_lineno)
        INCOMING_LOG.log(
            (self.topic, method, type(exc).__name__, where), logging.ERROR,
            'failures of %s on %s like the one above (%s at %s)' % (
                method, self.topic, type(exc).__name__, where),
            'Exception during message handling (method %r to %s, request %s)',
            method, self.topic, _short(str(_request_id(incoming))),
            exc_info=(type(exc), exc, exc.__traceback__))


def _request_id(incoming):
    ctxt = getattr(incoming, 'ctxt', None)
    return ctxt.get('request_id') if isinstance(ctxt, dict) else None


def _short(text, limit=80):
    """``text`` cut to about ``limit`` characters: a log line quotes fields of a message,
    which may be of any size."""
    return text if len(text) <= limit else '%s... (%d characters)' % (text[:limit], len(text))
