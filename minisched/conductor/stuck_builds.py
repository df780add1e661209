"""Builds nothing else will finish: found and ended by the conductor, in every cell.

A build ends ACTIVE or ERROR through its compute, which retries its writes while the
conductor or the database is away. Nothing finishes a build whose compute was killed and
does not come back, whose compute gave up retrying (an outage longer than ``[DEFAULT]
long_rpc_timeout``), or whose build request a conductor was handling when it stopped: the
instance, or the build request the API shows in its place, would stay BUILDING for ever.

Decisions (``[conductor] stuck_build_timeout_seconds`` is the bound, see its help):

* An instance is stuck when it is BUILDING, not being deleted, and its record was not written
  for the bound (``updated_at``, else ``created_at``): every step of a live build writes it.
  A dead owner is told from a slow one: when the instance's host has a compute service that
  is down (``servicegroup``: silent for ``[DEFAULT] service_down_time`` while this conductor
  could hear it), the bound is ``DEAD_OWNER_DOWN_TIMES`` times the down time
  (5 minutes by default) if that is shorter. A compute that comes back finds its build
  ended and stands down. A build request a killed conductor held is not lost meanwhile:
  RabbitMQ delivers its message again (``minisched.messaging.admission``).
* It goes to ERROR with a conditional UPDATE (the vm_state and task_state it was read with):
  with several conductors, or a compute that comes back at that moment, one writer wins and
  only the winner records anything. Host, node, launched_on and availability zone are cleared
  as Nova clears them for a failed build, so that a live compute's next resource refresh
  drops the instance's usage (NUMA and PCI included: they are counted from the instances on
  the node); the schedulers are told at once with ``delete_instance_info`` (the compute
  may be dead; a live one's ``sync_instance_info`` would also correct them later).
* The reason is an instance fault, and the open events of the instance's action are finished
  with the result Error (an event of the conductor's own when none is open), which marks the
  action Error as Nova does. A build half-written by a conductor that stopped is completed as
  Nova leaves a placed instance: its instance mapping points at its cell, its build request
  is gone (its request spec stays).
* A build request older than the bound whose instance mapping names no cell was never turned
  into an instance: it is buried in cell0 in ERROR with a fault, as the conductor buries a
  build it cannot schedule, taking the mapping conditionally (a conductor that places it at
  that moment wins, and the copy in cell0 is removed). A build request without an instance
  mapping is what a create that failed half-way left (its caller got the error): it is
  removed with its request spec.

:func:`record_failure` is shared with the compute's start-up check (``_init_instance``).
"""
import copy
import logging

from oslo_utils import timeutils

from minisched import context as ms_context
from minisched import exception
from minisched.db import lazy
from minisched.objects import build_request as build_request_obj
from minisched.objects import cell_mapping as cell_mapping_obj
from minisched.objects import instance as instance_obj
from minisched.objects import instance_action
from minisched.objects import instance_fault
from minisched.objects import instance_mapping as instance_mapping_obj
from minisched.objects import request_spec as request_spec_obj
from minisched.objects import service as objects_service
from minisched.scheduler.client import query
from minisched import servicegroup

api_db = lazy.module('minisched.db.api.api')
#: Loaded on first use: a compute imports this module, and it has no database stack.
db_errors = lazy.module('minisched.conductor.db_errors')

LOG = logging.getLogger(__name__)

#: The event recorded on an action that had none open when its build was ended.
EVENT = 'conductor_fail_stuck_build'
#: Longest spacing of the periodic check (Nova's default periodic spacing).
MAX_SPACING = 60
#: The bound of a build whose compute service is down, in ``service_down_time``\s.
DEAD_OWNER_DOWN_TIMES = 5


def check_spacing(timeout):
    """Seconds between two checks for ``timeout``; negative (disabled) when it is 0."""
    if timeout <= 0:
        return -1
    return max(1, min(MAX_SPACING, timeout // 4))


def record_failure(context, instance_uuid, error, host, event_host):
    """Record why a build ended in ERROR: a fault (at ``host``), open events finished.

    ``error`` is a minisched exception whose message the user reads; ``event_host`` names
    the service finishing the events when none was open (its own event is then recorded).
    """
    fault = instance_fault.InstanceFault.from_exception(context, instance_uuid, error,
                                                        host=host, with_details=False)
    fault.create()
    finish_open_events(context, instance_uuid, error.format_message(), event_host)


def finish_open_events(context, instance_uuid, message, event_host):
    """Finish with the result Error every open event of the instance's newest create
    action (its newest action if it has no create action); without an open event, record
    one of ``event_host``'s. An instance without any action is left as it is."""
    actions = list(instance_action.InstanceActionList.get_by_instance_uuid(context,
                                                                           instance_uuid))
    if not actions:
        return
    action = next((a for a in actions if a.action == instance_action.CREATE), actions[0])
    events = instance_action.InstanceActionEventList.get_by_action(context, action.id)
    open_events = [event for event in events if event.finish_time is None]
    if not open_events:
        # Events are started in the action of their request id.
        actx = copy.copy(context)
        actx.request_id = action.request_id
        open_events = [instance_action.InstanceActionEvent.event_start(
            actx, instance_uuid, EVENT, want_result=True, host=event_host)]
    for event in open_events:
        event.finish_with_failure(message, None)


def _older_than(timestamp, seconds):
    return timestamp is not None and timeutils.is_older_than(
        timeutils.normalize_time(timestamp), seconds)


class StuckBuilds:
    """The conductor's check for builds that will not finish (see the module docstring)."""

    def __init__(self, conf, host):
        self.conf = conf
        self.host = host
        self.query_client = query.SchedulerQueryClient(conf)
        self.servicegroup_api = servicegroup.API(conf)

    @property
    def timeout(self):
        return self.conf.conductor.stuck_build_timeout_seconds

    def run(self, context):
        """One check of every cell and of the build requests; returns the uuids ended.

        A transient error of the API database (it restarts, a network cut) ends this check
        with one warning; the next runs a period later. Any other error is the periodic
        task's to report, with its traceback."""
        if self.timeout <= 0:
            return []
        try:
            return self._run(context)
        except Exception as exc:
            if not db_errors.is_transient(exc):
                raise
            LOG.warning('Could not check for stuck builds: the API database did not answer '
                        '(%s); checking again in %d s', db_errors.reason(exc),
                        check_spacing(self.timeout))
            return []

    def _run(self, context):
        ended = []
        cells = list(cell_mapping_obj.CellMappingList.get_all(context))
        for cell in [c for c in cells if not c.is_cell0()] or [None]:
            try:
                ended += self._check_cell(context, cell)
            except Exception as exc:
                LOG.warning('Could not check cell %s for stuck builds: %s',
                            _cell_name(cell), exception.first_line(exc))
        cell0 = next((c for c in cells if c.is_cell0()), None)
        if cells and cell0 is None:
            LOG.error('No cell mapping found for cell0: unprocessed build requests cannot '
                      'be recorded as failed. Setup is incomplete.')
        else:
            ended += self._check_build_requests(context, cell0)
        return ended

    # -- instances in a cell ------------------------------------------------------------

    @property
    def dead_owner_timeout(self):
        return min(self.timeout, DEAD_OWNER_DOWN_TIMES * self.conf.service_down_time)

    def _bound(self, cctxt, instance, owners):
        """The bound of ``instance``'s build: shorter when its compute service is down."""
        host = instance.host
        if not host:
            return self.timeout  # not placed yet: its conductor's message comes back
        if host not in owners:
            try:
                service = objects_service.Service.get_by_compute_host(cctxt, host)
                owners[host] = self.servicegroup_api.service_is_up(service)
            except exception.NotFound:
                owners[host] = True  # no record to judge by: the full bound
        return self.timeout if owners[host] else self.dead_owner_timeout

    def _check_cell(self, context, cell):
        ended = []
        owners = {}  # host -> whether its compute service is up (read once per check)
        with ms_context.target_cell(context, cell) as cctxt:
            building = instance_obj.InstanceList.get_by_filters(
                cctxt, {'vm_state': instance_obj.BUILDING, 'deleted': False},
                sort_key='created_at', sort_dir='asc')
            for instance in building:
                last_written = instance.updated_at or instance.created_at
                if (instance.task_state == instance_obj.DELETING or
                        not _older_than(last_written, self.dead_owner_timeout) or
                        not _older_than(last_written, self._bound(cctxt, instance, owners))):
                    continue
                try:
                    if self._end(context, cctxt, cell, instance, owners):
                        ended.append(instance.uuid)
                except Exception:
                    LOG.exception('Could not end the stuck build of instance %s',
                                  instance.uuid)
        return ended

    def _end(self, context, cctxt, cell, instance, owners=None):
        """ERROR (if this conductor wins the update) with a fault; True when it did."""
        host, task_state = instance.host, instance.task_state
        seconds = self.timeout
        if host and (owners or {}).get(host) is False:
            seconds = self.dead_owner_timeout
        instance.vm_state = instance_obj.ERROR
        instance.task_state = None
        instance.host = instance.node = instance.launched_on = None
        instance.availability_zone = None
        try:
            # A list makes None a value to match (a bare None means "no check").
            instance.save(expected_vm_state=instance_obj.BUILDING,
                          expected_task_state=[task_state])
        except (exception.UnexpectedVMStateError, exception.UnexpectedTaskStateError,
                exception.InstanceNotFound) as exc:
            LOG.debug('Instance %s moved on before its build was ended: %s', instance.uuid,
                      exc.format_message())
            return False
        LOG.warning('Instance %(uuid)s was BUILDING (task %(task)s, host %(host)s%(down)s) '
                    'with no progress for %(seconds)d s: set to ERROR.',
                    {'uuid': instance.uuid, 'task': task_state, 'host': host,
                     'seconds': seconds,
                     'down': ', its compute service down' if seconds != self.timeout else ''})
        error = exception.InstanceBuildStuck(seconds=seconds)
        record_failure(cctxt, instance.uuid, error, host, self.host)
        self._complete_api_records(context, instance.uuid, cell)
        if host:
            self._forget(cctxt, host, instance.uuid)
        return True

    def _complete_api_records(self, context, instance_uuid, cell):
        """Leave the API records as Nova leaves those of a placed instance."""
        if cell is not None:
            try:
                api_db.instance_mapping_claim_cell(context, instance_uuid, cell.id)
            except exception.InstanceMappingNotFound:
                LOG.debug('Instance %s has no instance mapping', instance_uuid)
        try:
            build_request_obj.BuildRequest.get_by_instance_uuid(context,
                                                                instance_uuid).destroy()
            LOG.info('Deleted the build request left behind by instance %s', instance_uuid)
        except exception.BuildRequestNotFound:
            pass

    def _forget(self, cctxt, host, instance_uuid):
        if not self.conf.filter_scheduler.track_instance_changes:
            return
        try:
            self.query_client.delete_instance_info(cctxt, host, instance_uuid)
        except Exception as exc:
            # The compute's next sync_instance_info corrects the schedulers as well.
            LOG.warning('Could not tell the schedulers to forget instance %s on %s: %s',
                        instance_uuid, host, exception.first_line(exc))

    # -- build requests no conductor processed --------------------------------------------

    def _check_build_requests(self, context, cell0):
        buried = []
        for build_request in build_request_obj.BuildRequestList.get_all(context):
            if not _older_than(build_request.created_at, self.timeout):
                continue
            uuid = build_request.instance_uuid
            try:
                mapping = instance_mapping_obj.InstanceMapping.get_by_instance_uuid(context,
                                                                                    uuid)
            except exception.InstanceMappingNotFound:
                self._remove_half_written(context, build_request)
                continue
            if mapping.cell_mapping is not None:
                continue  # placed: its instance is checked in its cell
            try:
                if self._bury(context, build_request, cell0):
                    buried.append(uuid)
            except Exception:
                LOG.exception('Could not record the unprocessed build of instance %s', uuid)
        return buried

    def _remove_half_written(self, context, build_request):
        uuid = build_request.instance_uuid
        LOG.warning('Removing the build request of instance %s: it has no instance mapping '
                    '(a create that failed half-way left it).', uuid)
        try:
            build_request.destroy()
        except exception.BuildRequestNotFound:
            return
        try:
            request_spec_obj.RequestSpec(context, instance_uuid=uuid).destroy()
        except exception.RequestSpecNotFound:
            pass

    def _bury(self, context, build_request, cell0):
        """The instance in ERROR in cell0 (None: the only database), mapped there; the
        build request deleted. False when a conductor placed it meanwhile."""
        error = exception.BuildRequestNotProcessed(seconds=self.timeout)
        instance = build_request.instance
        with ms_context.target_cell(context, cell0) as cctxt:
            instance._context = cctxt
            instance.vm_state = instance_obj.ERROR
            instance.task_state = None
            try:
                instance.create()
            except exception.InstanceExists:
                LOG.debug('Instance %s already exists in cell0', instance.uuid)
                return False
            # Recorded before the instance is taken, so that it is never ERROR without why.
            instance_action.InstanceAction.action_start(cctxt, instance.uuid,
                                                        instance_action.CREATE,
                                                        want_result=False)
            record_failure(cctxt, instance.uuid, error, None, self.host)
        if not self._take(context, build_request, instance, cell0):
            return False
        LOG.warning('The build request of instance %s was not processed within %d s: '
                    'recorded in %s in ERROR.', instance.uuid, self.timeout, _cell_name(cell0))
        return True

    @staticmethod
    def _take(context, build_request, instance, cell0):
        """Map the instance to cell0 and drop its build request, unless a conductor placed
        it first (its copy in cell0 is then removed), as the conductor's build flow does."""
        taken = True
        if cell0 is not None:
            try:
                taken = api_db.instance_mapping_claim_cell(context, instance.uuid, cell0.id)
            except exception.InstanceMappingNotFound:
                taken = False
        if taken:
            try:
                build_request.destroy()
            except exception.BuildRequestNotFound:
                taken = False  # the user deleted it meanwhile
        if not taken:
            instance.destroy()
        return taken


def _cell_name(cell):
    return (cell.name or cell.uuid) if cell is not None else 'the local database'
