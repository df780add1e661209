"""What minisched's services say on the message bus: their own dialect, or Nova's.

A *wire profile* (``[DEFAULT] wire_profile``) is chosen once per process, when
:func:`minisched.rpc.init` runs, and fixes four things:

- the **control exchange** (``[DEFAULT] control_exchange``'s default): ``minisched`` or
  ``nova``;
- the **durability** of topic queues and exchanges (``[oslo_messaging_rabbit]
  amqp_durable_queues``' default): minisched's durable ones, or Nova's transient ones, which
  Nova's clients declare and RabbitMQ refuses to redeclare otherwise (PRECONDITION_FAILED);
- the **object namespace** of primitives: ``minisched_object.*`` keys and namespace
  ``minisched``, or ``nova_object.*`` and ``nova`` (:class:`NamespaceSerializer` renames the
  keys both ways, around minisched's own serializer);
- the **exception module** of errors sent back to callers: ``minisched.exception``, or
  ``nova.exception`` under a class name Nova has (:func:`nova_name`), so that a Nova client
  catches ``nova.exception.NoValidHost``; minisched's own clients rebuild such an error by
  name (:meth:`Profile.rebuild`).

An option set explicitly in a configuration file wins over the profile's default.
"""
import json

import oslo_messaging as messaging
from oslo_config import cfg
from oslo_messaging._drivers import amqp as _amqp

from minisched import exception

MINISCHED, NOVA = 'minisched', 'nova'

#: Classes of ``nova.exception`` (Nova 34) that minisched's errors travel as: the name of a
#: minisched exception when Nova has a class of that name, else of its nearest ancestor
#: here. tests/nova_compat/test_nova_wire.py checks, in a Nova process, that each
#: exists in nova.exception and takes what is sent.
NOVA_EXCEPTIONS = frozenset([
    'NovaException', 'PlacementAPIConnectFailure', 'ResourceProviderAggregateRetrievalFailed',
    'TooManyComputesForHost', 'Invalid', 'NotFound', 'NotSupported', 'Forbidden', 'AdminRequired',
    'InvalidRequest', 'ValidationError', 'InternalError', 'DBNotAllowed',
    'ObjectActionError', 'OrphanedObjectError', 'NoValidHost', 'MaxRetriesExceeded',
    'SelectionObjectsWithOldRPCVersionNotSupported', 'SchedulerHostFilterNotFound',
    'UnsupportedPolicyException', 'TooManyInstances', 'ComputeResourcesUnavailable',
    'RescheduledException', 'BuildAbortException', 'InstanceExists', 'InstanceNotFound',
    'InstanceInvalidState', 'InstanceMappingNotFound', 'InstanceGroupNotFound',
    'InstanceActionNotFound', 'InstanceActionEventNotFound', 'UnexpectedTaskStateError',
    'UnexpectedDeletingTaskStateError', 'BuildRequestNotFound', 'RequestSpecNotFound',
    'CellMappingNotFound', 'HostMappingNotFound', 'HostMappingExists', 'ComputeHostNotFound',
    'ComputeHostMetricNotFound', 'HostBinaryNotFound', 'ServiceNotFound',
    'ServiceBinaryExists', 'ServiceTopicExists', 'AggregateNotFound', 'AggregateNameExists',
    'AggregateHostExists', 'AggregateHostNotFound', 'FlavorNotFound', 'FlavorNotFoundByName',
    'FlavorExists', 'FlavorImageConflict', 'FlavorImageLockedMemoryConflict',
    'MarkerNotFound', 'NumaTopologyNotFound', 'CPUPinningInvalid', 'CPUPinningUnknown',
    'CPUUnpinningInvalid', 'CPUUnpinningUnknown', 'CPUThreadPolicyConfigurationInvalid',
    'BadRequirementEmulatorThreadsPolicy', 'InvalidCPUAllocationPolicy',
    'InvalidCPUThreadAllocationPolicy', 'InvalidEmulatorThreadsPolicy',
    'InvalidMixedInstanceDedicatedMask', 'InvalidNUMANodesNumber', 'InvalidPCINUMAAffinity',
    'ImageCPUPinningForbidden', 'ImageCPUThreadPolicyForbidden',
    'ImageNUMATopologyAsymmetric', 'ImageNUMATopologyCPUDuplicates',
    'ImageNUMATopologyCPUOutOfRange', 'ImageNUMATopologyCPUsUnassigned',
    'ImageNUMATopologyForbidden', 'ImageNUMATopologyIncomplete',
    'ImageNUMATopologyMemoryOutOfRange', 'ImagePCINUMAPolicyForbidden',
    'LockMemoryForbidden', 'MemoryPageSizeForbidden', 'MemoryPageSizeInvalid',
    'MemoryPageSizeNotSupported', 'RealtimeConfigurationInvalid',
    'RealtimeMaskNotFoundOrInvalid', 'RequiredMixedInstancePolicy',
    'RequiredMixedOrRealtimeCPUMask', 'PciConfigInvalidSpec', 'PciDeviceInvalidDeviceName',
    'PciDeviceInvalidOwner', 'PciDeviceInvalidPFRemoteManaged', 'PciDeviceInvalidStatus',
    'PciDeviceNotFound', 'PciDeviceNotFoundById', 'PciDevicePFInvalidStatus',
    'PciDevicePoolEmpty', 'PciDeviceRemoteManagedNotPresent', 'PciDeviceRequestFailed',
    'PciDeviceVFInvalidStatus', 'PciDeviceWrongAddressFormat', 'PciInvalidAlias',
    'PciRequestAliasNotDefined', 'FlavorAccessExists', 'FlavorAccessNotFound',
    'PlacementAPIConflict', 'ResourceProviderRetrievalFailed',
    'ResourceProviderCreationFailed', 'ResourceProviderUpdateFailed',
    'ResourceProviderUpdateConflict', 'ResourceProviderAllocationRetrievalFailed',
    'TraitRetrievalFailed', 'TraitCreationFailed', 'AllocationUpdateFailed',
    'AllocationDeleteFailed', 'ConsumerAllocationRetrievalFailed', 'ResourceProviderNotFound',
    'InventoryInUse', 'RequestFilterFailed', 'InstanceInfoCacheNotFound',
    'InstanceTagNotFound', 'KeypairNotFound', 'MigrationContextNotFound', 'VolumeBDMNotFound',
])

#: The first characters of the note that names the minisched class of an error sent under
#: a Nova name, with its keyword arguments, for minisched's own clients (it shows in the
#: traceback text a Nova client gets, after the message).
_NOTE = 'minisched exception: '


def nova_name(cls):
    """The ``nova.exception`` class name a minisched exception class travels as: its own
    name, or the nearest ancestor's, when in :data:`NOVA_EXCEPTIONS`, else NovaException."""
    for klass in cls.__mro__:
        if klass.__module__ == exception.__name__ and klass.__name__ in NOVA_EXCEPTIONS:
            return klass.__name__
    return 'NovaException'


class NamespaceSerializer(messaging.Serializer):
    """Renames object primitive keys (``<ours>.name``...) and namespace values between
    minisched's and another project's, around the serializer ``base``.

    Both sides edit the primitive in place: what ``base`` serialized is new, and what is
    deserialized came from the message's JSON (tuples, which neither can be, are rebuilt).
    """

    _FIELDS = ('name', 'namespace', 'version', 'data', 'changes')

    def __init__(self, base, ours=('minisched_object', MINISCHED), theirs=('nova_object', NOVA)):
        self._base = base
        self._out = self._table(ours, theirs)
        self._in = self._table(theirs, ours)

    @classmethod
    def _table(cls, source, target):
        keys = tuple((source[0] + '.' + f, target[0] + '.' + f) for f in cls._FIELDS)
        return keys, source[1], target[1]

    def serialize_entity(self, ctxt, entity):
        return _renamed(self._base.serialize_entity(ctxt, entity), self._out)

    def deserialize_entity(self, ctxt, entity):
        return self._base.deserialize_entity(ctxt, _renamed(entity, self._in))

    def serialize_context(self, ctxt):
        return self._base.serialize_context(ctxt)

    def deserialize_context(self, ctxt):
        return self._base.deserialize_context(ctxt)


def _renamed(value, table):
    """``value`` with every object primitive in it renamed by ``table`` (see
    :meth:`NamespaceSerializer._table`), in place: a tuple is never rebuilt, only the dicts
    in it are changed. A loop over a stack, not a recursion: this runs on every message."""
    keys, source_ns, target_ns = table
    name_key, namespace_key, data_key = keys[0][0], keys[1][1], keys[3][1]
    kind = type(value)
    if not (kind is dict or kind is list or kind is tuple):
        return value
    stack = [value]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        if type(node) is dict:
            if name_key in node:  # an object primitive: only its data holds others
                for old, new in keys:
                    if old in node:
                        node[new] = node.pop(old)
                if node.get(namespace_key) == source_ns:
                    node[namespace_key] = target_ns
                data = node.get(data_key)
                if type(data) is dict:
                    push(data)
                continue
            items = node.values()
        else:
            items = node
        for item in items:
            kind = type(item)
            if kind is dict or kind is list or kind is tuple:
                push(item)
    return value


class Profile:
    """One wire profile: see the module docstring."""

    def __init__(self, name, control_exchange, durable_queues, exception_module):
        self.name = name
        self.control_exchange = control_exchange
        self.durable_queues = durable_queues
        self.exception_module = exception_module

    def __repr__(self):
        return '<wire profile %s>' % self.name

    def set_defaults(self, conf=None):
        """Make the profile's exchange and durability the defaults of oslo.messaging's
        options (the Opt objects, and ``conf``'s when registered there)."""
        messaging.set_transport_defaults(self.control_exchange)
        cfg.set_defaults(_amqp.amqp_opts, amqp_durable_queues=self.durable_queues)
        if conf is None:
            return
        for name, group, value in (('control_exchange', None, self.control_exchange),
                                   ('amqp_durable_queues', 'oslo_messaging_rabbit',
                                    self.durable_queues)):
            try:
                conf.set_default(name, value, group=group)
            except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
                pass  # registered later, with the default set above

    def serializer(self, base):
        """The entity serializer of this profile around minisched's ``base``."""
        return base

    def outgoing(self, exc_info):
        """The ``exc_info`` an RPC server sends back for ``exc_info`` (its own here)."""
        return exc_info

    def rebuild(self, error):
        """The exception a caller raises for ``error``, got from a call (itself here)."""
        return error


class NovaProfile(Profile):
    """Nova's exchange, durability, object namespace and exception module."""

    def __init__(self):
        super().__init__(NOVA, control_exchange='nova', durable_queues=False,
                         exception_module='nova.exception')
        self._classes = {}

    def serializer(self, base):
        return NamespaceSerializer(base)

    def outgoing(self, exc_info):
        error = exc_info[1]
        if not isinstance(error, exception.MinischedException):
            return exc_info  # builtins travel as they are; others as Nova sends its own
        name = nova_name(type(error))
        disguised = self._class(name)(error.format_message(), _wire_kwargs(error))
        disguised.__traceback__ = exc_info[2]
        disguised.add_note(_NOTE + json.dumps({'class': type(error).__name__,
                                               'kwargs': disguised.kwargs}))
        return type(disguised), disguised, exc_info[2]

    def _class(self, name):
        cls = self._classes.get(name)
        if cls is None:
            cls = self._classes[name] = type(name, (_NovaError,), {
                '__module__': self.exception_module, '__qualname__': name})
        return cls

    def rebuild(self, error):
        """minisched's exception for a RemoteError that came under a Nova name: the class
        its note names (else the Nova name's, else the error as it is), with its message and
        keyword arguments."""
        if not isinstance(error, messaging.RemoteError):
            return error
        found = _noted(error.traceback)
        name, kwargs = found if found else (error.exc_type, {})
        cls = getattr(exception, name or '', None)
        if not (isinstance(cls, type) and issubclass(cls, exception.MinischedException)):
            return error
        try:
            rebuilt = cls(error.value, **kwargs)
        except TypeError:
            return error
        rebuilt.__cause__ = error
        return rebuilt


class _NovaError(Exception):
    """What a minisched exception becomes on its way to a caller under the Nova profile:
    oslo.messaging sends its class and module names, ``str()``, ``args`` and ``kwargs``,
    with which a Nova client calls ``nova.exception.<name>(message, **kwargs)``."""

    def __init__(self, message, kwargs):
        super().__init__(message)
        self.kwargs = kwargs


def _wire_kwargs(error):
    """The keyword arguments of ``error`` that survive JSON as they are."""
    kwargs = {}
    for key, value in error.kwargs.items():
        if key == 'message':  # the first argument of every Nova exception
            continue
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            value = str(value)
        kwargs[key] = value
    return kwargs


def _noted(trace):
    """``(class name, kwargs)`` from the note of :meth:`NovaProfile.outgoing` in the
    traceback lines ``trace``, or None."""
    lines = trace if isinstance(trace, (list, tuple)) else str(trace or '').splitlines()
    for line in reversed(lines):
        for part in str(line).splitlines():
            if part.startswith(_NOTE):
                try:
                    noted = json.loads(part[len(_NOTE):])
                    return noted['class'], dict(noted['kwargs'])
                except (ValueError, KeyError, TypeError):
                    return None
    return None


PROFILES = {MINISCHED: Profile(MINISCHED, control_exchange='minisched', durable_queues=True,
                               exception_module=exception.__name__),
            NOVA: NovaProfile()}


def of(conf):
    """The profile ``conf`` chooses (minisched's when ``conf`` has no ``wire_profile``)."""
    try:
        name = conf.wire_profile
    except (cfg.NoSuchOptError, AttributeError):
        name = MINISCHED
    return PROFILES[name or MINISCHED]
