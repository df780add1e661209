"""The RPC layer: one transport per process, clients and servers carrying context and objects."""
import logging

import oslo_messaging as messaging
from oslo_messaging.rpc import dispatcher
from oslo_serialization import jsonutils

from minisched import context as ms_context
from minisched.objects import base as obj_base

LOG = logging.getLogger(__name__)

CONTROL_EXCHANGE = 'minisched'
#: Remote exceptions from these modules are rebuilt as their class on the caller side.
ALLOWED_EXMODS = ['minisched.exception']

TRANSPORT = None
NOTIFICATION_TRANSPORT = None
NOTIFIER = None
_CONF = None
#: Transports of other cells' message buses, by URL (see ClientRouter).
_CELL_TRANSPORTS = {}


def set_defaults(control_exchange=CONTROL_EXCHANGE):
    messaging.set_transport_defaults(control_exchange)


def init(conf, url=None):
    """Create the process's transports and notifier from ``conf`` (``url`` overrides
    ``transport_url``, e.g. ``fake://`` in tests)."""
    global TRANSPORT, NOTIFICATION_TRANSPORT, NOTIFIER, _CONF
    _CONF = conf
    TRANSPORT = messaging.get_rpc_transport(conf, url=url,
                                            allowed_remote_exmods=ALLOWED_EXMODS)
    NOTIFICATION_TRANSPORT = messaging.get_notification_transport(
        conf, url=url, allowed_remote_exmods=ALLOWED_EXMODS)
    serializer = RequestContextSerializer(JsonPayloadSerializer())
    if not conf.oslo_messaging_notifications.driver:
        NOTIFIER = messaging.Notifier(NOTIFICATION_TRANSPORT, serializer=serializer,
                                      driver='noop')
    else:
        NOTIFIER = messaging.Notifier(NOTIFICATION_TRANSPORT, serializer=serializer)


def cleanup():
    global TRANSPORT, NOTIFICATION_TRANSPORT, NOTIFIER
    for transport in [TRANSPORT, NOTIFICATION_TRANSPORT] + list(_CELL_TRANSPORTS.values()):
        if transport is not None:
            transport.cleanup()
    _CELL_TRANSPORTS.clear()
    TRANSPORT = NOTIFICATION_TRANSPORT = NOTIFIER = None


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
    return messaging.get_rpc_client(TRANSPORT, target, version_cap=version_cap,
                                    serializer=serializer or get_serializer())


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
        return messaging.get_rpc_client(transport, self.target, version_cap=self.version_cap,
                                        serializer=get_serializer())


def get_server(target, endpoints, serializer=None):
    assert TRANSPORT is not None, 'rpc.init() was not called'
    access_policy = dispatcher.DefaultRPCAccessPolicy
    return messaging.get_rpc_server(TRANSPORT, target, endpoints,
                                    serializer=serializer or get_serializer(server_side=True),
                                    access_policy=access_policy)


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
