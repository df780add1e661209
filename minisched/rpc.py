"""The RPC layer: one transport per process, clients and servers carrying context and objects."""
import functools
import logging
import os
import queue
import socket
import threading
import time

import oslo_messaging as messaging
from oslo_config import cfg
from oslo_messaging.rpc import dispatcher
from oslo_messaging.rpc import server as rpc_server
from oslo_serialization import jsonutils

from minisched import context as ms_context
from minisched import exception
from minisched.objects import base as obj_base

LOG = logging.getLogger(__name__)

CONTROL_EXCHANGE = 'minisched'
#: Remote exceptions from these modules are rebuilt as their class on the caller side.
ALLOWED_EXMODS = ['minisched.exception']

TRANSPORT = None
NOTIFICATION_TRANSPORT = None
NOTIFIER = None
_CONF = None
_URL = None  # the URL TRANSPORT was made from
#: Transports of other cells' message buses, by URL (see ClientRouter).
_CELL_TRANSPORTS = {}


def set_defaults(control_exchange=CONTROL_EXCHANGE):
    messaging.set_transport_defaults(control_exchange)


class TransportURLError(ValueError):
    """A transport URL oslo.messaging cannot use; the message names the option it came from
    (never the URL, which may hold a password)."""

    def __init__(self, option, reason):
        super().__init__('invalid value for %s: %s' % (option, reason))
        self.option = option


def _transport(factory, conf, url, option):
    # stevedore warns "Could not load <driver>" before oslo.messaging raises: the error below
    # says it with the option's name, in the one line a bad option gets.
    stevedore_log = logging.getLogger('stevedore.named')
    level = stevedore_log.level
    stevedore_log.setLevel(logging.ERROR)
    try:
        return factory(conf, url=url, allowed_remote_exmods=ALLOWED_EXMODS)
    except (messaging.InvalidTransportURL, messaging.DriverLoadFailure, ValueError) as exc:
        # ValueError: a port that is not a number, among others.
        raise TransportURLError('the transport URL given' if url else option(), exc) from exc
    finally:
        stevedore_log.setLevel(level)


def _notifications_option(conf):
    """Where the notification transport's URL came from (its option is registered by
    ``get_notification_transport`` before it parses the URL)."""
    try:
        own = conf.oslo_messaging_notifications.transport_url
    except cfg.NoSuchOptError:
        own = None
    return ('[oslo_messaging_notifications] transport_url' if own else
            '[DEFAULT] transport_url')


def init(conf, url=None):
    """Create the process's transports and notifier from ``conf`` (``url`` overrides
    ``transport_url``, e.g. ``fake://`` in tests). Raises TransportURLError for a URL
    oslo.messaging cannot use, and then changes nothing."""
    global TRANSPORT, NOTIFICATION_TRANSPORT, NOTIFIER, _CONF, _URL
    transport = _transport(messaging.get_rpc_transport, conf, url,
                           lambda: '[DEFAULT] transport_url')
    try:
        notification_transport = _transport(messaging.get_notification_transport, conf, url,
                                             lambda: _notifications_option(conf))
    except TransportURLError:
        transport.cleanup()
        raise
    _CONF, TRANSPORT, NOTIFICATION_TRANSPORT = conf, transport, notification_transport
    _URL = url or conf.transport_url  # registered by get_rpc_transport
    serializer = RequestContextSerializer(JsonPayloadSerializer())
    if not conf.oslo_messaging_notifications.driver:
        NOTIFIER = messaging.Notifier(NOTIFICATION_TRANSPORT, serializer=serializer,
                                      driver='noop')
    else:
        NOTIFIER = messaging.Notifier(NOTIFICATION_TRANSPORT, serializer=serializer)


#: Seconds ``cleanup()`` waits for the transports to close their connections.
CLEANUP_TIMEOUT = 10


def cleanup():
    """Close the transports; with the broker away, give up after CLEANUP_TIMEOUT seconds.

    oslo.messaging's cleanup waits for connections that a call abandoned by ``Client`` may
    still hold while it reconnects to an unreachable broker (for ever): a process must still
    be able to exit.
    """
    global TRANSPORT, NOTIFICATION_TRANSPORT, NOTIFIER
    transports = [t for t in [TRANSPORT, NOTIFICATION_TRANSPORT, *_CELL_TRANSPORTS.values()]
                  if t is not None]
    _CELL_TRANSPORTS.clear()
    TRANSPORT = NOTIFICATION_TRANSPORT = NOTIFIER = None
    closing = threading.Thread(target=lambda: [t.cleanup() for t in transports], daemon=True,
                               name='rpc-cleanup')
    closing.start()
    closing.join(CLEANUP_TIMEOUT)
    if closing.is_alive():
        LOG.warning('Message bus connections did not close within %d s (is the broker '
                    'reachable?); leaving them.', CLEANUP_TIMEOUT)


def initialized():
    return TRANSPORT is not None


class JsonPayloadSerializer(messaging.NoOpSerializer):
    @staticmethod
    def serialize_entity(context, entity):
        return jsonutils.to_primitive(entity, convert_instances=True)


class RequestContextSerializer(messaging.Serializer):
    """Carries the RequestContext and delegates entities to the wrapped serializer."""

    def __init__(self, base=None):
        self._base = base

    def serialize_entity(self, context, entity):
        if not self._base:
            return entity
        return self._base.serialize_entity(context, entity)

    def deserialize_entity(self, context, entity):
        if not self._base:
            return entity
        return self._base.deserialize_entity(context, entity)

    def serialize_context(self, context):
        return context.to_dict()

    def deserialize_context(self, context):
        return ms_context.RequestContext.from_dict(context)


def get_serializer(server_side=False):
    serializer = obj_base.MinischedObjectSerializer()
    serializer.server_side = server_side
    return RequestContextSerializer(serializer)


def get_client(target, version_cap=None, serializer=None):
    assert TRANSPORT is not None, 'rpc.init() was not called'
    return Client(messaging.get_rpc_client(TRANSPORT, target, version_cap=version_cap,
                                           serializer=serializer or get_serializer()),
                  _URL)


class Client:
    """oslo.messaging's RPCClient, whose calls end at their timeout whatever the broker does.

    oslo.messaging (18.x) publishes a call only once it holds its connection's lock, and
    while the broker is unreachable the heartbeat thread holds that lock reconnecting (with
    no retry limit): a call made during a broker outage would hang until the broker returns,
    however short its timeout. Here each call runs in a thread of its own and the caller
    waits at most its ``call_monitor_timeout`` (else its ``timeout``); at that point, if
    the broker's port does not even accept a TCP connection, the caller gets MessagingTimeout
    while the call is abandoned; otherwise it waits out the rest of ``timeout``. The call's
    thread reconnects only until the caller's whole wait (``timeout`` + :data:`CALL_GRACE`)
    has passed (a ``retry`` count sized from the ``[oslo_messaging_rabbit]`` backoff, unless
    the caller chose one): an abandoned call is published if the broker is back within that
    time, its answer going nowhere, and otherwise ends unsent instead of reconnecting, and
    publishing a stale request, whenever the broker returns.
    The threads are reused (:class:`_CallThreads`): starting one per call costs about half a
    millisecond, an eighth of a whole call to a local broker.
    """

    def __init__(self, client, url):
        self._client = client
        self._url = url

    def prepare(self, **kwargs):
        return _CallContext(self._client.prepare(**kwargs), self._url)

    def can_send_version(self, version):
        return self._client.can_send_version(version)

    def cast(self, ctxt, method, **kwargs):
        self.prepare().cast(ctxt, method, **kwargs)

    def call(self, ctxt, method, **kwargs):
        return self.prepare().call(ctxt, method, **kwargs)


#: Seconds on top of a call's own timeout before the caller gives up on oslo.messaging.
CALL_GRACE = 1.0


class _CallContext:

    def __init__(self, context, url):
        self._context = context
        self._url = url

    def can_send_version(self, version):
        return self._context.can_send_version(version)

    def cast(self, ctxt, method, **kwargs):
        self._context.cast(ctxt, method, **kwargs)

    def call(self, ctxt, method, **kwargs):
        outcome = []
        done = threading.Event()
        timeout = self._context.timeout or self._context.conf.rpc_response_timeout
        context = self._context
        if context.retry is None or context.retry < 0:  # oslo.messaging: retry forever
            retries = reconnect_retries(context.conf, timeout + CALL_GRACE)
            if retries is not None:
                context = context.prepare(retry=retries)

        def run():
            try:
                outcome.append((True, context.call(ctxt, method, **kwargs)))
            except BaseException as exc:  # handed to the caller below
                outcome.append((False, exc))
            finally:
                done.set()

        CALL_THREADS.submit(run)
        first = min(self._context.call_monitor_timeout or timeout, timeout)
        if not done.wait(first + CALL_GRACE):
            unreachable = _unreachable_broker(self._context.conf, self._url)
            if unreachable or not done.wait(max(timeout - first, 0)):
                raise messaging.MessagingTimeout(
                    'No reply to %s within %s s%s' % (
                        method, first if unreachable else timeout,
                        ': the message bus at %s is unreachable' % unreachable
                        if unreachable else ''))
        ok, value = outcome[0]
        if not ok:
            raise value
        return value


def reconnect_retries(conf, seconds):
    """How many reconnection attempts oslo.messaging's rabbit driver makes, after the first,
    before it has slept at least ``seconds`` between them; None when its backoff never
    sleeps (then no count stands for a time).

    The driver sleeps ``rabbit_retry_interval`` after the first failure, ``rabbit_retry_backoff``
    more after each next one, never more than ``rabbit_interval_max`` (kombu's
    ``retry_over_time``). Other drivers take the count and ignore it.
    """
    try:
        rabbit = conf.oslo_messaging_rabbit
        start, step, ceiling = (rabbit.rabbit_retry_interval, rabbit.rabbit_retry_backoff,
                                rabbit.rabbit_interval_max)
    except (cfg.NoSuchOptError, AttributeError):
        start, step, ceiling = 1, 2, 30  # the driver's defaults
    return _retries_for(float(start), float(step), float(ceiling), float(seconds))


@functools.lru_cache(maxsize=64)
def _retries_for(start, step, ceiling, seconds):
    slept, interval, retries = 0.0, start, 0
    while slept < seconds:
        pause = min(interval, ceiling)
        if pause <= 0 and step <= 0:
            return None
        slept += max(pause, 0.0)
        interval += step
        retries += 1
    return retries


class _CallThreads:
    """Daemon threads that run :class:`Client` calls, kept for the next call once done.

    A call goes to an idle thread when there is one, else to a new thread: as many threads
    as calls in flight, however many of them are stuck reconnecting to a broker that went
    away. A thread idle for :attr:`IDLE_SECONDS` ends. The threads do not survive a fork
    (oslo.service's workers): a process other than the pool's own starts afresh.
    """

    IDLE_SECONDS = 60.0

    def __init__(self, name='rpc-call'):
        self.name = name  # of its threads
        self._lock = threading.Lock()
        self._pid = None
        self._jobs = None
        self._idle = 0  # threads waiting for a job, less the jobs already promised to them

    def submit(self, job):
        with self._lock:
            if self._pid != os.getpid():
                self._pid, self._jobs, self._idle = os.getpid(), queue.Queue(), 0
            jobs = self._jobs
            start = self._idle == 0
            if not start:
                self._idle -= 1
        jobs.put(job)
        if start:
            threading.Thread(target=self._serve, args=(jobs,), daemon=True,
                             name=self.name).start()

    def _serve(self, jobs):
        while True:
            try:
                job = jobs.get(timeout=self.IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if jobs is not self._jobs:
                        return
                    if self._idle > 0:  # no job is promised to this thread: it may end
                        self._idle -= 1
                        return
                continue  # a job was promised to the idle threads: it is on its way
            job()
            with self._lock:
                if jobs is not self._jobs:
                    return
                self._idle += 1


CALL_THREADS = _CallThreads()


def _unreachable_broker(conf, url):
    """``host:port`` of the broker of ``url`` when none of its hosts accepts a connection."""
    try:
        hosts = messaging.TransportURL.parse(conf, url).hosts
    except Exception:
        return None
    tried = []
    for host in hosts:
        address = (host.hostname or 'localhost', host.port or 5672)
        tried.append('%s:%d' % address)
        try:
            socket.create_connection(address, timeout=2).close()
            return None
        except OSError:
            continue
    return ', '.join(tried) or None


class ClientRouter:
    """RPC clients that follow the request context to its cell's message bus.

    Nova's ClientRouter: a context targeted at a cell with a transport URL of its own
    (``target_cell``) gets a client on that bus; any other context the default client.
    """

    def __init__(self, target, version_cap=None):
        self.target = target
        self.version_cap = version_cap
        self.default_client = get_client(target, version_cap=version_cap)

    def client(self, context):
        url = getattr(context, 'transport_url', None)
        if not url or TRANSPORT is None or url == _CONF.transport_url:
            return self.default_client
        transport = _CELL_TRANSPORTS.get(url)
        if transport is None:
            transport = _CELL_TRANSPORTS[url] = messaging.get_rpc_transport(
                _CONF, url=url, allowed_remote_exmods=ALLOWED_EXMODS)
        return Client(messaging.get_rpc_client(transport, self.target,
                                               version_cap=self.version_cap,
                                               serializer=get_serializer()), url)


def cell_bus_url(cell_mapping):
    """``cell_mapping``'s transport URL, a template filled in from this process's own URL;
    None when it has none (or a ``none:`` one)."""
    url = getattr(cell_mapping, 'transport_url', None)
    if not url or url.startswith('none:'):
        return None
    if '{' in url:
        from minisched.objects import cell_mapping as cell_mapping_obj
        url = cell_mapping_obj.format_url(url, _URL)
    return url


def cell_transport_url(cell_mapping):
    """The message bus of ``cell_mapping`` when it has one apart from this process's bus."""
    url = cell_bus_url(cell_mapping) if TRANSPORT is not None else None
    return None if url == _URL else url


def get_cell_server(url, target, endpoints):
    """An RPC server on another cell's bus ``url`` (its transport shared with ClientRouter)."""
    transport = _CELL_TRANSPORTS.get(url)
    if transport is None:
        transport = _CELL_TRANSPORTS[url] = messaging.get_rpc_transport(
            _CONF, url=url, allowed_remote_exmods=ALLOWED_EXMODS)
    return _rpc_server(transport, target, endpoints, get_serializer(server_side=True))


def get_server(target, endpoints, serializer=None):
    assert TRANSPORT is not None, 'rpc.init() was not called'
    return _rpc_server(TRANSPORT, target, endpoints,
                       serializer or get_serializer(server_side=True))


def _rpc_server(transport, target, endpoints, serializer):
    """oslo.messaging's RPCServer with a dispatcher whose call-monitor heartbeats come from
    one thread per process (see :class:`CallMonitor`)."""
    rpc_dispatcher = MonitoredDispatcher(endpoints, serializer,
                                         dispatcher.DefaultRPCAccessPolicy)
    return rpc_server.RPCServer(transport, target, rpc_dispatcher)


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


class MonitoredDispatcher(dispatcher.RPCDispatcher):
    """RPCDispatcher whose call-monitor heartbeats are sent by :data:`CALL_MONITOR`, and
    which refuses arguments nested beyond :data:`MAX_ARGUMENT_DEPTH` before decoding them.

    Decoding recurses once per level or more: a message nested close to the interpreter's
    recursion limit would fail wherever the limit happened to fall (one stack frame more or
    less moved it), not always where the failure is caught and reported. It is refused
    here, with its request id in the log and, for a call, InvalidObjectRequest to the caller.
    """

    def dispatch(self, incoming):
        args = incoming.message.get('args') if isinstance(incoming.message, dict) else None
        if _nesting_deeper_than(args, MAX_ARGUMENT_DEPTH):
            request_id = (incoming.ctxt.get('request_id')
                          if isinstance(incoming.ctxt, dict) else None)
            LOG.info('Rejected a malformed message (request %s, method %r): arguments nested '
                     'deeper than %d levels', request_id, incoming.message.get('method'),
                     MAX_ARGUMENT_DEPTH)
            try:
                raise exception.InvalidObjectRequest(
                    reason='arguments nested deeper than %d levels' % MAX_ARGUMENT_DEPTH)
            except exception.InvalidObjectRequest:
                raise messaging.ExpectedException()
        token = CALL_MONITOR.watch(incoming) if incoming.client_timeout else None
        try:
            return self._dispatch(incoming)
        finally:
            CALL_MONITOR.unwatch(token)

    def _dispatch(self, incoming):
        """The base class's endpoint choice, without the watchdog thread and event it makes
        for every message, started or not (a tenth of a millisecond under eventlet): the
        first endpoint whose target takes the message's namespace and version and which has
        the method (allowed by the access policy) runs it; NoSuchMethod when an endpoint took
        the version but none had the method, else UnsupportedVersion."""
        message = incoming.message
        method = message.get('method')
        namespace = message.get('namespace')
        version = message.get('version', '1.0')
        found_compatible = False
        for endpoint in self.endpoints:
            target = getattr(endpoint, 'target', None) or self._default_target
            if not (self._is_namespace(target, namespace) and
                    self._is_compatible(target, version)):
                continue
            if hasattr(endpoint, method) and self.access_policy.is_allowed(endpoint, method):
                return self._do_dispatch(endpoint, method, incoming.ctxt,
                                         message.get('args', {}))
            found_compatible = True
        if found_compatible:
            raise dispatcher.NoSuchMethod(method)
        raise dispatcher.UnsupportedVersion(version, method=method)


def get_notifier(service, host=None, publisher_id=None):
    assert NOTIFIER is not None, 'rpc.init() was not called'
    if not publisher_id:
        publisher_id = '%s.%s' % (service, host) if host else service
    return NOTIFIER.prepare(publisher_id=publisher_id)


def get_versioned_notifier(publisher_id):
    assert NOTIFIER is not None, 'rpc.init() was not called'
    return NOTIFIER.prepare(publisher_id=publisher_id)


_RELEASE_ALIASES = {
    'scheduler': {'grizzly': '2.6', 'havana': '2.9', 'icehouse': '3.0', 'juno': '3.0',
                  'kilo': '4.2', 'liberty': '4.2', 'mitaka': '4.3', 'newton': '4.3',
                  'ocata': '4.3', 'pike': '4.4'},
    'conductor': {name: '3.0' for name in ('liberty', 'mitaka', 'newton', 'ocata')},
    'compute': {},
    'baseapi': {},
}


def version_cap(conf, api):
    """Return the RPC version cap for ``api`` from ``[upgrade_levels]`` (None: uncapped)."""
    value = getattr(conf.upgrade_levels, api)
    if not value:
        return None
    return _RELEASE_ALIASES.get(api, {}).get(value, value)
