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


class ConfigInvalid(Invalid):
    msg_fmt = 'Invalid configuration: %(reason)s'


class DBNotAllowed(MinischedException):
    msg_fmt = '%(binary)s attempted direct database access which is not allowed by policy'


class ObjectActionError(MinischedException):
    msg_fmt = 'Object action %(action)s failed because: %(reason)s'


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


class BuildNotAccepted(MinischedException):
    msg_fmt = ('The build of %(count)d instance(s) was not accepted: the message bus did not '
               'take the request (%(reason)s). Nothing was created; try again.')
    code = 503
