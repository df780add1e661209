"""The RPC layer: one transport per process, clients and servers carrying context and objects.

What a service does with the messages that arrive (size, decoding, shape, call-monitor
heartbeats) is :mod:`minisched.messaging.incoming`'s; servers made here dispatch through it.
"""
import functools
import logging
import os
import queue
import socket
import threading

import oslo_messaging as messaging
from oslo_config import cfg
from oslo_messaging.rpc import dispatcher
from oslo_messaging.rpc import server as rpc_server
from oslo_serialization import jsonutils

from minisched import context as ms_context
from minisched.objects import base as obj_base
from minisched.messaging import admission as rpc_admission
from minisched.messaging import incoming
from minisched.messaging import monitored_dispatcher
from minisched.messaging import trace
from minisched.messaging import wire

LOG = logging.getLogger(__name__)

CONTROL_EXCHANGE = 'minisched'
#: Remote exceptions from these modules are rebuilt as their class on the caller side.
ALLOWED_EXMODS = ['minisched.exception']

TRANSPORT = None
#: The wire profile of this process (``[DEFAULT] wire_profile``), set by init().
PROFILE = wire.PROFILES[wire.MINISCHED]
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
    global TRANSPORT, NOTIFICATION_TRANSPORT, NOTIFIER, _CONF, _URL, PROFILE
    profile = wire.of(conf)
    profile.set_defaults(conf)  # before the transports read the exchange and durability
    transport = _transport(messaging.get_rpc_transport, conf, url,
                           lambda: '[DEFAULT] transport_url')
    try:
        notification_transport = _transport(messaging.get_notification_transport, conf, url,
                                             lambda: _notifications_option(conf))
    except TransportURLError:
        transport.cleanup()
        raise
    _CONF, TRANSPORT, NOTIFICATION_TRANSPORT = conf, transport, notification_transport
    PROFILE = profile
    _URL = url or conf.transport_url  # registered by get_rpc_transport
    incoming.configure(conf)
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
    global TRANSPORT, NOTIFICATION_TRANSPORT, NOTIFIER, PROFILE
    transports = [t for t in [TRANSPORT, NOTIFICATION_TRANSPORT, *_CELL_TRANSPORTS.values()]
                  if t is not None]
    _CELL_TRANSPORTS.clear()
    TRANSPORT = NOTIFICATION_TRANSPORT = NOTIFIER = None
    if PROFILE.name != wire.MINISCHED:  # the process's defaults as they were before init()
        PROFILE = wire.PROFILES[wire.MINISCHED]
        PROFILE.set_defaults()
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
        values = context.to_dict()
        if trace.ENABLED:  # the send time and the sender's cause, for the receiver's trace
            trace.stamp(values)
        return values

    def deserialize_context(self, context):
        return ms_context.RequestContext.from_dict(context)


def get_serializer(server_side=False):
    """The RPC serializer of this process's wire profile (objects and context)."""
    serializer = obj_base.MinischedObjectSerializer()
    serializer.server_side = server_side
    return RequestContextSerializer(PROFILE.serializer(serializer))


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
        if not trace.ENABLED:
            self._context.cast(ctxt, method, **kwargs)
            return
        with trace.send(self._context.target, method, kwargs):
            self._context.cast(ctxt, method, **kwargs)

    def call(self, ctxt, method, **kwargs):
        if not trace.ENABLED:
            return self._call(ctxt, method, kwargs, None)
        sent = trace.send(self._context.target, method, kwargs, call=True)
        with sent:
            return self._call(ctxt, method, kwargs, sent)

    def _call(self, ctxt, method, kwargs, sent):
        """The call, run by a thread of CALL_THREADS (which works for ``sent`` meanwhile,
        when tracing: see :func:`minisched.messaging.trace.adopted`)."""
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
                with trace.adopted(sent):
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
            raise PROFILE.rebuild(value)
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
    return _rpc_server(transport, target, endpoints, get_serializer())


def get_server(target, endpoints, serializer=None, admission=None):
    """The RPC server of ``target``; ``admission``, ``(admitted, limit)``: run at most
    ``limit`` messages of the ``admitted`` ``(namespace, method)`` pairs at once, the
    others first (:class:`minisched.messaging.admission.AdmittingRPCServer`)."""
    assert TRANSPORT is not None, 'rpc.init() was not called'
    return _rpc_server(TRANSPORT, target, endpoints, serializer or get_serializer(),
                       admission)


def _rpc_server(transport, target, endpoints, serializer, admission=None):
    """oslo.messaging's RPCServer with
    :class:`~minisched.messaging.monitored_dispatcher.MonitoredDispatcher`: call-monitor
    heartbeats from one thread per process, and malformed messages refused with one
    rate-limited line.

    The serializer is a client-side one (``server_side`` False): an argument that does not
    load raises its error, which the dispatcher reports and answers."""
    rpc_dispatcher = monitored_dispatcher.MonitoredDispatcher(
        endpoints, serializer, dispatcher.DefaultRPCAccessPolicy, topic=target.topic,
        outgoing=PROFILE.outgoing)
    if admission:
        admitted, limit = admission
        return rpc_admission.AdmittingRPCServer(transport, target, rpc_dispatcher, admitted,
                                                limit)
    return rpc_server.RPCServer(transport, target, rpc_dispatcher)


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
