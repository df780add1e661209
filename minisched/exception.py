"""minisched's exceptions. Each has a ``msg_fmt``; the RPC layer lets callers rebuild them."""
import logging

LOG = logging.getLogger(__name__)


def first_line(exc):
    """The first line of ``exc``'s message, or its class name when it has none: what an
    operator's one-line error says of a library's exception."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class MinischedException(Exception):
    """Base exception: formats ``msg_fmt`` with the keyword arguments it was given."""

    msg_fmt = 'An unknown exception occurred.'
    code = 500

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        self.kwargs.setdefault('code', self.code)
        if not message:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError, ValueError):
                LOG.exception('Exception in string format operation: %s', kwargs)
                message = self.msg_fmt
        self.message = message
        super().__init__(message)

    def format_message(self):
        return self.args[0]


class Invalid(MinischedException):
    msg_fmt = 'Bad request: %(reason)s'
    code = 400


class NotFound(MinischedException):
    msg_fmt = 'Resource could not be found.'
    code = 404


class InvalidContext(Invalid):
    msg_fmt = 'Invalid request context: %(reason)s'


class ConfigInvalid(Invalid):
    msg_fmt = 'Invalid configuration: %(reason)s'


class DBNotAllowed(MinischedException):
    msg_fmt = '%(binary)s attempted direct database access which is not allowed by policy'


class ObjectActionError(MinischedException):
    msg_fmt = 'Object action %(action)s failed because: %(reason)s'


class NotSupported(MinischedException):
    """An RPC method of Nova's API that minisched's endpoint names but does not implement
    (Nova's class of the same name, which a Nova client catches)."""
    msg_fmt = '%(method)s is not supported by minisched: %(reason)s'
    code = 400


class ObjectMethodNotSupported(MinischedException):
    """A remotable method Nova's object has and minisched keeps for the wire, but cannot run
    (the data behind it, a Neutron or Nova API table, does not exist here)."""
    msg_fmt = '%(objname)s.%(method)s is not supported by minisched: %(reason)s'
    code = 501


class OrphanedObjectError(MinischedException):
    msg_fmt = 'Cannot call %(method)s on orphaned %(objtype)s object'


class UnsupportedObjectError(Invalid):
    msg_fmt = 'Unsupported object type %(objtype)s'


class IncompatibleObjectVersion(Invalid):
    msg_fmt = 'Version %(objver)s of %(objname)s is not supported; supported: %(supported)s'


class InvalidObjectRequest(Invalid):
    msg_fmt = 'Invalid object request: %(reason)s'


class ServiceNotFound(NotFound):
    msg_fmt = 'Service %(service_id)s could not be found.'


class ServiceBinaryExists(MinischedException):
    msg_fmt = 'Service with host %(host)s binary %(binary)s exists.'
    code = 409


class ServiceTopicExists(MinischedException):
    msg_fmt = 'Service with host %(host)s topic %(topic)s exists.'
    code = 409


class HostBinaryNotFound(NotFound):
    msg_fmt = 'Compute host %(host)s with binary %(binary)s could not be found.'


class ComputeHostNotFound(NotFound):
    msg_fmt = 'Compute host %(host)s could not be found.'


class ComputeNodeNotFound(NotFound):
    msg_fmt = 'Compute node %(compute_id)s could not be found.'


class ComputeHostNotCreated(MinischedException):
    msg_fmt = 'Compute host %(name)s needs to be created first before updating.'


class InstanceNotFound(NotFound):
    msg_fmt = 'Instance %(instance_id)s could not be found.'


class InstanceExists(MinischedException):
    msg_fmt = 'Instance %(name)s already exists.'
    code = 409


class UnexpectedTaskStateError(MinischedException):
    msg_fmt = ('Unexpected task state: expecting %(expected)s but the actual state is '
               '%(actual)s')


class UnexpectedDeletingTaskStateError(UnexpectedTaskStateError):
    pass


class FlavorNotFound(NotFound):
    msg_fmt = 'Flavor %(flavor_id)s could not be found.'


class FlavorNotFoundByName(FlavorNotFound):
    msg_fmt = 'Flavor with name %(flavor_name)s could not be found.'


class FlavorExists(MinischedException):
    msg_fmt = 'Flavor with name %(name)s already exists.'
    code = 409


class FlavorAccessExists(MinischedException):
    msg_fmt = ('Flavor access already exists for flavor %(flavor_id)s and project '
               '%(project_id)s combination.')
    code = 409


class FlavorAccessNotFound(NotFound):
    msg_fmt = 'Flavor access not found for %(flavor_id)s / %(project_id)s combination.'


class InstanceGroupNotFound(NotFound):
    msg_fmt = 'Instance group %(group_uuid)s could not be found.'


class InstanceGroupExists(MinischedException):
    msg_fmt = 'Instance group %(group_uuid)s already exists.'
    code = 409


class AggregateNotFound(NotFound):
    msg_fmt = 'Aggregate %(aggregate_id)s could not be found.'


class AggregateNameExists(MinischedException):
    msg_fmt = 'Aggregate %(aggregate_name)s already exists.'
    code = 409


class AggregateHostExists(MinischedException):
    msg_fmt = 'Aggregate %(aggregate_id)s already has host %(host)s.'
    code = 409


class AggregateHostNotFound(NotFound):
    msg_fmt = 'Aggregate %(aggregate_id)s has no host %(host)s.'


class RequestSpecNotFound(NotFound):
    msg_fmt = 'RequestSpec not found for instance %(instance_uuid)s'


class CellMappingNotFound(NotFound):
    msg_fmt = 'Cell %(uuid)s has no mapping.'


class CellMappingExists(MinischedException):
    msg_fmt = 'A cell named %(name)s or with uuid %(uuid)s already exists.'
    code = 409


class HostMappingNotFound(NotFound):
    msg_fmt = 'Host %(name)s is not mapped to any cell'


class HostMappingExists(MinischedException):
    msg_fmt = 'Host %(name)s is already mapped to cell %(cell_uuid)s'
    code = 409


class InstanceMappingNotFound(NotFound):
    msg_fmt = 'Instance %(uuid)s has no mapping to a cell.'


class BuildRequestNotFound(NotFound):
    msg_fmt = 'BuildRequest not found for instance %(uuid)s'


class InstanceActionNotFound(NotFound):
    msg_fmt = 'Action for request_id %(request_id)s on instance %(instance_uuid)s not found'


class InstanceActionEventNotFound(NotFound):
    msg_fmt = 'Event %(event)s not found for action id %(action_id)s'


class NoValidHost(MinischedException):
    msg_fmt = 'No valid host was found. %(reason)s'


class CellsUnreachable(NoValidHost):
    """No host fits while the databases of some cells do not answer: their hosts could not
    be considered. ``cells`` names them with the time since when (``reason`` says so)."""
    msg_fmt = 'No valid host was found. %(reason)s'


class MaxRetriesExceeded(NoValidHost):
    msg_fmt = 'Exceeded maximum number of retries. %(reason)s'


class SelectionObjectsWithOldRPCVersionNotSupported(MinischedException):
    msg_fmt = ('Requests for Selection objects with alternates are not supported in '
               'select_destinations() before RPC version 4.5; version %(version)s requested.')


class ComputeHostMetricNotFound(NotFound):
    msg_fmt = 'Metric %(name)s could not be found on the compute host node %(host)s.%(node)s.'


class SchedulerHostFilterNotFound(NotFound):
    msg_fmt = 'Scheduler Host Filter %(filter_name)s could not be found.'


class PluginNotFound(MinischedException):
    msg_fmt = ('No %(namespace)s plugin named %(names)s is installed; installed: '
               '%(available)s')


class ComputeResourcesUnavailable(MinischedException):
    msg_fmt = 'Insufficient compute resources: %(reason)s.'


class RescheduledException(MinischedException):
    msg_fmt = 'Build of instance %(instance_uuid)s was re-scheduled: %(reason)s'


class BuildAbortException(MinischedException):
    msg_fmt = 'Build of instance %(instance_uuid)s aborted: %(reason)s'


class InstanceInvalidState(Invalid):
    msg_fmt = 'Instance %(instance_uuid)s in %(attr)s %(state)s. Cannot %(method)s.'


class VirtDriverNotFound(NotFound):
    msg_fmt = 'Could not find the virt driver %(name)s; installed: %(available)s'


class InvalidRequestSpec(Invalid):
    msg_fmt = 'Invalid request spec: %(reason)s'


# -- added with the database layer (minisched/db) -------------------------------------------------

class ComputeNodeExists(MinischedException):
    msg_fmt = 'Compute node %(host)s/%(nodename)s already exists.'
    code = 409


class UnexpectedVMStateError(MinischedException):
    msg_fmt = ('Unexpected VM state: expecting %(expected)s but the actual state is '
               '%(actual)s')


class MarkerNotFound(NotFound):
    msg_fmt = 'Marker %(marker)s could not be found.'


class InstanceMappingExists(MinischedException):
    msg_fmt = 'Instance %(uuid)s is already mapped to a cell.'
    code = 409


class RequestSpecExists(MinischedException):
    msg_fmt = 'RequestSpec for instance %(instance_uuid)s already exists.'
    code = 409


class BuildRequestAlreadyExists(MinischedException):
    msg_fmt = 'BuildRequest for instance %(uuid)s already exists.'
    code = 409


class UnsupportedPolicyException(Invalid):
    msg_fmt = 'ServerGroup policy is not supported: %(reason)s'


class RequestTooLarge(Invalid):
    msg_fmt = ('A request for %(count)d instances would be a message of about '
               '%(size_mb).1f MiB, more than [DEFAULT] rpc_max_message_size_mb = '
               '%(limit_mb)d MiB; ask for at most %(most)d instances at once')


class BuildNotAccepted(MinischedException):
    msg_fmt = ('The build of %(count)d instance(s) was not accepted: the message bus did not '
               'take the request (%(reason)s). Nothing was created; try again.')
    code = 503


# PCI passthrough (Nova's classes and messages).

class PciDeviceWrongAddressFormat(MinischedException):
    msg_fmt = 'The PCI address %(address)s has an incorrect format.'


class PciDeviceInvalidDeviceName(MinischedException):
    msg_fmt = ('Invalid PCI Whitelist: The PCI whitelist can specify devname or address, but '
               'not both')


class PciDeviceNotFoundById(NotFound):
    msg_fmt = 'PCI device %(id)s not found'


class PciDeviceNotFound(NotFound):
    msg_fmt = 'PCI Device %(node_id)s:%(address)s not found.'


class PciDeviceInvalidStatus(Invalid):
    msg_fmt = 'PCI device %(compute_node_id)s:%(address)s is %(status)s instead of %(hopestatus)s'


class PciDeviceVFInvalidStatus(Invalid):
    msg_fmt = 'Not all Virtual Functions of PF %(compute_node_id)s:%(address)s are free.'


class PciDevicePFInvalidStatus(Invalid):
    msg_fmt = ('Physical Function %(compute_node_id)s:%(address)s, related to VF '
               '%(compute_node_id)s:%(vf_address)s is %(status)s instead of %(hopestatus)s')


class PciDeviceInvalidOwner(Invalid):
    msg_fmt = ('PCI device %(compute_node_id)s:%(address)s is owned by %(owner)s instead of '
               '%(hopeowner)s')


class PciDeviceRequestFailed(MinischedException):
    msg_fmt = 'PCI device request %(requests)s failed'


class PciDevicePoolEmpty(MinischedException):
    msg_fmt = 'Attempt to consume PCI device %(compute_node_id)s:%(address)s from empty pool'


class PciInvalidAlias(Invalid):
    msg_fmt = 'Invalid PCI alias definition: %(reason)s'


class PciRequestAliasNotDefined(MinischedException):
    msg_fmt = 'PCI alias %(alias)s is not defined'


class PciConfigInvalidSpec(Invalid):
    msg_fmt = 'Invalid [pci]device_spec config: %(reason)s'


class PciDeviceRemoteManagedNotPresent(MinischedException):
    msg_fmt = ('Invalid PCI Whitelist: A device specified as "remote_managed" is not actually '
               'present on the host')


class PciDeviceInvalidPFRemoteManaged(MinischedException):
    # Nova's message lacks the space before "tag"; kept, as callers may match it.
    msg_fmt = ('Invalid PCI Whitelist: PFs must not have the "remote_managed"tag, device '
               'address: %(address)s')


class Forbidden(MinischedException):
    msg_fmt = 'Forbidden'
    code = 403


class AdminRequired(Forbidden):
    msg_fmt = 'User does not have admin privileges'


class TooManyInstances(Forbidden):
    msg_fmt = ('Requested %(requested)d instances, but at most %(allowed)d can be created by '
               'one request ([api] max_instances_per_request)')


# NUMA topology, CPU pinning and page sizes (Nova's classes; messages in our words).

class InternalError(MinischedException):
    msg_fmt = '%(err)s'


class InvalidRequest(Invalid):
    msg_fmt = 'The request is invalid.'


class FlavorImageConflict(MinischedException):
    msg_fmt = ('The flavor (%(flavor_val)s) and the image (%(image_val)s) set conflicting '
               'values for %(setting)s.')


class FlavorImageLockedMemoryConflict(FlavorImageConflict):
    msg_fmt = ('The image (%(image)s) and the flavor (%(flavor)s) set conflicting '
               'locked_memory values; when both set it, they must agree.')


class LockMemoryForbidden(Invalid):
    msg_fmt = 'Locked memory can only be requested together with a memory page size.'


class InvalidNUMANodesNumber(Invalid):
    msg_fmt = "The number of NUMA nodes must be an integer above 0, not '%(nodes)s'."


class ImageNUMATopologyIncomplete(Invalid):
    msg_fmt = 'Every NUMA node needs both its CPUs and its memory given.'


class ImageNUMATopologyForbidden(Forbidden):
    msg_fmt = ("The image property '%(name)s' may not override the NUMA configuration "
               "the flavor sets.")


class ImageNUMATopologyAsymmetric(Invalid):
    msg_fmt = ('The CPUs and/or memory of the instance do not split evenly over its NUMA '
               'nodes: assign them to the nodes explicitly.')


class ImageNUMATopologyCPUOutOfRange(Invalid):
    msg_fmt = 'CPU number %(cpunum)d is above the highest CPU number, %(cpumax)d.'


class ImageNUMATopologyCPUDuplicates(Invalid):
    msg_fmt = 'CPU number %(cpunum)d is given to two NUMA nodes.'


class ImageNUMATopologyCPUsUnassigned(Invalid):
    msg_fmt = 'CPU number %(cpuset)s is given to no NUMA node.'


class ImageNUMATopologyMemoryOutOfRange(Invalid):
    msg_fmt = 'The NUMA nodes are given %(memsize)d MB of memory in all, not %(memtotal)d MB.'


class ImageCPUPinningForbidden(Forbidden):
    msg_fmt = ("The image property 'hw_cpu_policy' may not override the CPU pinning policy "
               "the flavor sets.")


class ImageCPUThreadPolicyForbidden(Forbidden):
    msg_fmt = ("The image property 'hw_cpu_thread_policy' may not override the CPU thread "
               "pinning policy the flavor sets.")


class ImagePCINUMAPolicyForbidden(Forbidden):
    msg_fmt = ("The image property 'hw_pci_numa_affinity_policy' may not override the "
               "flavor's 'hw:pci_numa_affinity_policy'.")


class InvalidPCINUMAAffinity(Invalid):
    msg_fmt = 'Invalid PCI NUMA affinity policy: %(policy)s'


class InvalidCPUAllocationPolicy(Invalid):
    msg_fmt = ("Invalid CPU policy from %(source)s: '%(requested)s'; valid values: "
               "'%(available)s'.")


class InvalidCPUThreadAllocationPolicy(Invalid):
    msg_fmt = ("Invalid CPU thread policy from %(source)s: '%(requested)s'; valid values: "
               "'%(available)s'.")


class InvalidEmulatorThreadsPolicy(Invalid):
    msg_fmt = ("Invalid emulator threads policy: '%(requested)s'; valid values: "
               "'%(available)s'.")


class BadRequirementEmulatorThreadsPolicy(Invalid):
    msg_fmt = 'Isolating the emulator threads requires the dedicated CPU policy.'


class CPUThreadPolicyConfigurationInvalid(Invalid):
    msg_fmt = 'A CPU thread policy needs a CPU policy that pins CPUs.'


class RealtimeConfigurationInvalid(Invalid):
    msg_fmt = 'Realtime CPUs need a CPU policy that pins CPUs.'


class RealtimeMaskNotFoundOrInvalid(Invalid):
    msg_fmt = ('Realtime CPUs need at least one CPU that is not realtime, or isolated '
               'emulator threads.')


class RequiredMixedInstancePolicy(Invalid):
    msg_fmt = "'hw:cpu_dedicated_mask' may only be given with the 'mixed' CPU policy."


class RequiredMixedOrRealtimeCPUMask(Invalid):
    msg_fmt = ("The 'mixed' CPU policy needs its dedicated CPUs given by exactly one of "
               "'hw:cpu_dedicated_mask' and 'hw:cpu_realtime_mask'.")


class InvalidMixedInstanceDedicatedMask(Invalid):
    msg_fmt = ("A mixed instance needs at least one pinned and one unpinned vCPU; see "
               "'hw:cpu_dedicated_mask'.")


class MemoryPageSizeInvalid(Invalid):
    msg_fmt = "Invalid memory page size '%(pagesize)s'"


class MemoryPageSizeForbidden(Invalid):
    msg_fmt = "Page size %(pagesize)s is not allowed against '%(against)s'"


class MemoryPageSizeNotSupported(Invalid):
    msg_fmt = 'The host has no pages of size %(pagesize)s.'


class CPUPinningInvalid(Invalid):
    msg_fmt = 'CPUs %(requested)s to pin are not all among the free CPUs %(available)s'


class CPUUnpinningInvalid(Invalid):
    msg_fmt = 'CPUs %(requested)s to unpin are not all among the pinned CPUs %(available)s'


class CPUPinningUnknown(Invalid):
    msg_fmt = 'CPUs %(requested)s to pin are not all among the known CPUs %(available)s'


class CPUUnpinningUnknown(Invalid):
    msg_fmt = 'CPUs %(requested)s to unpin are not all among the known CPUs %(available)s'


class NumaTopologyNotFound(NotFound):
    msg_fmt = 'Instance %(instance_uuid)s has no NUMA topology'


class ValidationError(Invalid):
    """A request refused at the edge (Nova's API schemas and extra spec validators): the
    detail names the field, the rule and what is wrong with the value; ``kwargs['field']``
    is the field."""
    msg_fmt = '%(detail)s'


class DatabaseUnavailable(MinischedException):
    """A build task gave up on a database that stayed away for its whole retry bound."""

    msg_fmt = '%(database)s was unavailable for %(seconds)d seconds: %(reason)s'
    code = 503


class DBTransientError(MinischedException):
    """A database error that passes by itself (connection refused or lost, deadlock, lock
    timeout): the same call can be made again. The conductor answers with it in place of the
    driver's exception, which its caller could not tell from a permanent failure."""

    msg_fmt = 'The database is unavailable or busy, try again: %(reason)s'
    code = 503


class InstanceBuildStuck(MinischedException):
    msg_fmt = ('Build did not finish: no progress for %(seconds)d seconds (its compute stopped, '
               'or lost the database or the message bus). Set to error state.')


class InstanceBuildInterrupted(MinischedException):
    msg_fmt = ('Instance failed to spawn correctly: its compute service stopped during the '
               'build. Set to error state.')


class BuildRequestNotProcessed(MinischedException):
    msg_fmt = ('Build request was not processed within %(seconds)d seconds (a conductor '
               'stopped or lost the database while handling it). Set to error state.')


class InvalidSnapshot(Invalid):
    msg_fmt = 'Cannot read the scheduler snapshot %(path)s: %(reason)s'


class SnapshotNotWritten(Invalid):
    msg_fmt = 'Cannot write the scheduler snapshot to %(path)s: %(reason)s'


class FiguresNotWritten(Invalid):
    msg_fmt = 'Cannot write the replay figures to %(path)s: %(reason)s'


class InvalidTrace(Invalid):
    msg_fmt = 'Cannot read the request trace %(path)s: %(reason)s'


class InvalidReplayConfig(Invalid):
    msg_fmt = 'Cannot replay with the configuration %(name)s: %(reason)s'


# -- Placement (the messages are Nova's) ------------------------------------------------------

class ResourceProviderRetrievalFailed(MinischedException):
    msg_fmt = 'Failed to get resource provider with UUID %(uuid)s'


class ResourceProviderNotFound(NotFound):
    msg_fmt = 'No such resource provider %(name_or_uuid)s.'


class ResourceProviderAggregateRetrievalFailed(ResourceProviderRetrievalFailed):
    msg_fmt = 'Failed to get aggregates for resource provider with UUID %(uuid)s'


class PlacementAPIConnectFailure(MinischedException):
    msg_fmt = 'Unable to communicate with the Placement API.'


class TooManyComputesForHost(MinischedException):
    msg_fmt = ('Unexpected number of compute node records (%(num_computes)d) found for host '
               '%(host)s. There should only be a one-to-one mapping.')


class ResourceProviderCreationFailed(MinischedException):
    msg_fmt = 'Failed to create resource provider %(name)s'


class ResourceProviderUpdateFailed(MinischedException):
    msg_fmt = 'Failed to update resource provider via URL %(url)s: %(error)s'


class PlacementAPIConflict(MinischedException):
    """A 409 from Placement."""
    msg_fmt = 'A conflict was encountered attempting to invoke the placement API: %(error)s'
    code = 409


class ResourceProviderUpdateConflict(PlacementAPIConflict):
    """A provider generation conflict: another process changed the provider first."""
    msg_fmt = ('A conflict was encountered attempting to update resource provider %(uuid)s '
               '(generation %(generation)d): %(error)s')


class InventoryInUse(MinischedException):
    msg_fmt = 'Inventory for resource provider is in use: %(error)s'


class TraitRetrievalFailed(MinischedException):
    msg_fmt = 'Failed to retrieve traits from the placement API: %(error)s'


class TraitCreationFailed(MinischedException):
    msg_fmt = 'Failed to create trait %(name)s: %(error)s'


class AllocationUpdateFailed(MinischedException):
    msg_fmt = 'Failed to update allocations for consumer %(consumer_uuid)s. Error: %(error)s'


class AllocationDeleteFailed(MinischedException):
    msg_fmt = 'Failed to delete allocations for consumer %(consumer_uuid)s. Error: %(error)s'


class ResourceProviderAllocationRetrievalFailed(MinischedException):
    msg_fmt = 'Failed to retrieve allocations for resource provider %(rp_uuid)s: %(error)s'


class ConsumerAllocationRetrievalFailed(MinischedException):
    msg_fmt = 'Failed to retrieve allocations for consumer %(consumer_uuid)s: %(error)s'


class InstanceInfoCacheNotFound(NotFound):
    msg_fmt = 'Info cache for instance %(instance_uuid)s could not be found.'


class InstanceTagNotFound(NotFound):
    msg_fmt = 'Instance %(instance_id)s has no tag \'%(tag)s\''


class KeypairNotFound(NotFound):
    msg_fmt = 'Keypair %(name)s not found for user %(user_id)s'


class VolumeBDMNotFound(NotFound):
    msg_fmt = 'No volume Block Device Mapping with id %(volume_id)s.'


class MigrationContextNotFound(NotFound):
    msg_fmt = 'Migration context for instance %(instance_uuid)s could not be found.'


class RequestFilterFailed(MinischedException):
    msg_fmt = 'Scheduling failed: %(reason)s'
