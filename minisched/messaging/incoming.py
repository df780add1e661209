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
* **Shape, method, arguments.**
  :class:`~minisched.messaging.monitored_dispatcher.MonitoredDispatcher` refuses a message
  whose method, version or arguments are not what an endpoint takes: no such method or
  version, arguments that are not an object or nest too deeply, a context or an object
  primitive that does not load, argument names the method does not take, or values of another
  type than the method's annotations say. One WARNING names the topic, the method and the
  reason; a call gets an error back: oslo.messaging's NoSuchMethod or UnsupportedVersion, the
  minisched exception of an object that does not load, else ``exception.Invalid`` with the
  reason.
* **Endpoint failures.** An exception escaping an endpoint is logged with its traceback the
  first time; its repeats (same method, class and place) are counted.

Repeats of the same kind (queue or topic, method, reason) are rate-limited by
:data:`~minisched.messaging.incoming_log.INCOMING_LOG`: the first is logged, the next ones
counted and their number logged once per
:data:`~minisched.messaging.incoming_log.INCOMING_LOG_INTERVAL` seconds; each one still gets a
DEBUG line with its request id.

Memory: what a message of :data:`~minisched.messaging.large_messages.LARGE_MESSAGE_BYTES` or
more held is released once used: its body and kombu's decoded copy once it is decoded, its
decoded form once it is dispatched (oslo.messaging's executor keeps the last message it ran
until it gets the next one), and the reference cycles among the objects it decoded into by
one garbage collection a second later
(:class:`~minisched.messaging.large_messages._DeferredCollection`; an idle worker would not
collect them for a long time). Then glibc's ``malloc_trim(0)`` gives the freed heap back to
the system: a freed block of 13 MB raises glibc's mmap threshold, so the next ones come from
the heap, whose free top is otherwise kept. Measured on a scheduler worker given two casts of
68 MB (an InstanceList of 60,000 objects) with no size limit: it went from 105 MB to 636 MB
and stayed there before the release and the collection, and came back to 113 MB with them.
Given two casts of 13 MB under the default limit, it stayed 24-38 MB larger after the
collection and is 7-8 MB larger with the trim. A message over the limit is refused undecoded.

This module holds the checks in the rabbit driver (size, decoding, duplicates), the private
parts of oslo.messaging they hook into, and the TLS files named in connection errors;
:func:`configure` applies them. Beside it: :mod:`~minisched.messaging.monitored_dispatcher`
(shape, method, arguments, endpoint failures), :mod:`~minisched.messaging.call_monitor`
(heartbeats), :mod:`~minisched.messaging.incoming_log` (the rate-limited reports) and
:mod:`~minisched.messaging.large_messages` (memory).
"""
from importlib import metadata
import logging

from oslo_config import cfg
from oslo_messaging._drivers import amqp as rpc_amqp
from oslo_messaging._drivers import amqpdriver
from oslo_messaging._drivers import common as driver_common
from oslo_messaging._drivers import impl_rabbit
from oslo_messaging.rpc import server as rpc_server

from minisched import exception
from minisched.messaging import incoming_log
from minisched.messaging import large_messages

#: The RPC layer's logger: these reports are the RPC layer's, whichever module makes them.
LOG = logging.getLogger('minisched.rpc')


# -- incoming messages: size and decoding (rabbit driver) ------------------------------------

#: ``[DEFAULT] rpc_max_message_size_mb`` when the option is not registered (tools, tests).
DEFAULT_MAX_MESSAGE_SIZE_MB = 16
#: ``[DEFAULT] rpc_poll_floor_ms`` when the option is not registered.
DEFAULT_POLL_FLOOR_MS = 50
#: The longest wait of a listener on an empty queue (oslo.messaging's
#: ``ACK_REQUEUE_EVERY_SECONDS_MAX``, 5 s of its own). A stop request is seen only when the
#: wait ends, one RPC server after another: with 5 s a compute (two servers) took 3 to 10 s
#: to stop on SIGTERM, with 1 s it takes about one; the wakeups it adds on an idle service
#: are one a second per listener.
POLL_CEILING_SECONDS = 1.0
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
    amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MAX = POLL_CEILING_SECONDS
    amqpdriver.ACK_REQUEUE_EVERY_SECONDS_MIN = min(floor_ms / 1000.0, POLL_CEILING_SECONDS)


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
        if self.size >= large_messages.LARGE_MESSAGE_BYTES:
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
    incoming_log.INCOMING_LOG.log((queue_name, kind), logging.WARNING,
                                  'messages dropped from queue %s (%s)' % (queue_name, kind),
                                  'Dropped a message of %d bytes from queue %s (%s): %s', size,
                                  queue_name, kind, incoming_log._short(reason, 300))
    try:
        # The raw py-amqp message or kombu's: both carry their channel and delivery tag.
        # (kombu's conversion would first decompress a compressed body, which may be huge.)
        message.channel.basic_ack(message.delivery_tag)
    except Exception as exc:  # the connection went away: the broker redelivers it
        LOG.debug('Could not acknowledge the dropped message: %s', exc)
    if size >= large_messages.LARGE_MESSAGE_BYTES:
        # its body, freed when the driver drops it, given back
        large_messages.COLLECTION.schedule()


class _DuplicatesRateLimited(logging.Filter):
    """Turns oslo.messaging's "ignoring duplicate message" (an ERROR with a traceback, for
    each message whose ``_unique_id`` it has just seen: a replay) into a rate-limited
    WARNING without one."""

    def filter(self, record):
        if record.msg != 'ignoring duplicate message %s' or not record.exc_info:
            return True
        incoming_log.INCOMING_LOG.log(('duplicate',), logging.WARNING,
                                      'duplicate messages dropped',
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
