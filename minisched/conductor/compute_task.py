"""The build flow in the conductor (namespace ``compute_task``): schedule, place, build.

``schedule_and_build_instances`` asks the scheduler for hosts with alternates, creates each
instance in the chosen host's cell, points its instance mapping there and casts
``build_and_run_instance`` to ``compute.<host>``. Instances that cannot be placed are "buried"
in cell0 in ERROR with the reason as an instance fault. ``build_instances`` is the reschedule
path: it pops the next alternate without calling the scheduler again.

Both are casts any client on the bus can send, bypassing ``compute.api``'s validation: their
arguments are checked first (``compute.validation``: types, and values against the columns
they are written to). A refusal is logged with the request id; the builds it names, when it
names them, end in ERROR with a fault naming the field, as a build that failed to schedule.
"""
import contextlib
import copy
import logging
import threading
import time
import traceback

import oslo_messaging as messaging
from oslo_serialization import jsonutils
from oslo_utils import timeutils
from oslo_utils import uuidutils

from minisched.messaging import bus_errors
from minisched.compute import rpcapi as compute_rpcapi
from minisched.compute import validation
from minisched.conductor import unsupported
from minisched.conf import filter_scheduler as fs_conf
from minisched import context as ms_context
from minisched.db.api import api as api_db
from minisched import exception
from minisched.objects import build_request as build_request_obj
from minisched.objects import cell_mapping as cell_mapping_obj
from minisched.objects import host_mapping as host_mapping_obj
from minisched.objects import instance as instance_obj
from minisched.objects import instance_action
from minisched.objects import instance_fault
from minisched.objects import instance_mapping as instance_mapping_obj
from minisched.objects import request_spec as request_spec_obj
from minisched import rpc
from minisched.messaging import admission as rpc_admission
from minisched.scheduler.client import query
from minisched.scheduler import utils as scheduler_utils

LOG = logging.getLogger(__name__)

#: select_destinations tries before a build gives up on a scheduler that does not answer.
SCHEDULE_ATTEMPTS = 3
#: Seconds a host's cell, once read, is used without reading its host mapping again.
HOST_CELL_SECONDS = 30
#: Seconds a redelivered build cast waits for the instance an earlier delivery created to
#: be mapped before it takes the build over (see ComputeTaskManager._take_over).
TAKE_OVER_AFTER_SECONDS = 10
#: Seconds between two select_destinations of a build waiting for unreachable cells
#: (``[conductor] cell_unreachable_wait_seconds``).
CELL_WAIT_INTERVAL = 3

#: ``again``: the handler runs again in this thread a delivery whose earlier run failed
#: half-way (``minisched.conductor.db_errors`` retries a run the database interrupted).
_this_run = threading.local()


@contextlib.contextmanager
def run_again():
    """Mark the handler run in this block as a second run of the same delivery: what the
    earlier run created and did not finish is taken over at once (see :func:`again`)."""
    # Restored, not cleared: _adopt_orphans runs build_instances, which db_errors may run
    # again inside a run that is itself a run again.
    previous = getattr(_this_run, 'again', False)
    _this_run.again = True
    try:
        yield
    finally:
        _this_run.again = previous


def again():
    """``'retry'`` when this run repeats a run of this delivery that the database
    interrupted, ``'redelivered'`` when RabbitMQ delivers the message again after the
    conductor that had it went away (``rpc_admission.redelivered``), else None. Either way
    the instances an earlier run created or placed and did not finish are this run's: a
    retry takes them at once (its earlier run is over), a redelivery after a wait (the
    earlier conductor may only have lost its connection, and goes on)."""
    if getattr(_this_run, 'again', False):
        return 'retry'
    if rpc_admission.redelivered():
        return 'redelivered'
    return None


class ComputeTaskManager(unsupported.UnsupportedTasks):
    """Namespace ``compute_task``: long-running build tasks driven by the conductor.

    Nova's version 1.26: the build methods below, and every other method of Nova's API
    answered with NotSupported (:mod:`minisched.conductor.unsupported`).
    """

    target = messaging.Target(namespace='compute_task', version='1.26')

    def __init__(self, conf, host):
        self.conf = conf
        self.host = host
        self.query_client = query.SchedulerQueryClient(conf)
        self.compute_rpcapi = compute_rpcapi.ComputeAPI(conf)
        self.notifier = rpc.get_notifier('compute_task', host)
        self._host_cells = {}  # host -> (CellMapping or None, when it was read)
        self._report_client = None  # Placement's, made on a reschedule's first claim

    # -- RPC methods ---------------------------------------------------------------------

    def schedule_and_build_instances(self, context, build_requests, request_specs, image,
                                     admin_password, injected_files, requested_networks,
                                     block_device_mapping, tags=None):
        refusal = _refusal(validation.check_build_requests, build_requests)
        if refusal:
            # The build requests the API wrote are read back from the database.
            _refused(context, 'schedule_and_build_instances', refusal)
            self._bury_refused(_uuids_in(build_requests, request_specs), refusal)
            return
        started = timeutils.utcnow()
        refusal = _refusal(validation.check_schedule_and_build, context, build_requests,
                           request_specs, image)
        if refusal:
            # Cleaned up as a build that failed to schedule: ERROR in cell0, with the fault.
            _refused(context, 'schedule_and_build_instances', refusal)
            pending, _gone = self._still_pending(context, build_requests,
                                                 [None] * len(build_requests))
            self._bury_in_cell0(context, None, refusal, [pair[0] for pair in pending],
                                started)
            return
        pending, gone = self._still_pending(context, build_requests, request_specs)
        if gone and again():
            self._adopt_orphans(context, gone, image)
        if not pending:
            return
        build_requests, request_specs = (list(column) for column in zip(*pending))
        instance_uuids = [spec.instance_uuid for spec in request_specs]
        try:
            host_lists = self._schedule_instances(context, request_specs[0], instance_uuids,
                                                  return_alternates=True)
        except Exception as exc:
            _unless_transient(exc)
            LOG.warning('Failed to schedule instances %s: %s', ', '.join(instance_uuids),
                        _message(exc))
            self._bury_in_cell0(context, request_specs[0], exc, build_requests, started)
            return
        placed = []
        for build_request, spec, host_list in zip(build_requests, request_specs, host_lists):
            instance = self._create_in_cell(context, build_request, spec, host_list, started)
            if instance is not None:
                placed.append((instance, spec, host_list))
        for instance, spec, host_list in placed:
            self._cast_build(context, instance, spec, host_list, image)

    def build_instances(self, context, instances, image, filter_properties, admin_password,
                        injected_files, requested_networks, security_groups,
                        block_device_mapping=None, legacy_bdm=True, request_spec=None,
                        host_lists=None):
        """Reschedule (``host_lists`` given: use the next alternate) or schedule afresh."""
        refusal = _refusal(validation.check_instances, instances)
        if refusal:
            _refused(context, 'build_instances', refusal)  # no instance to put in ERROR
            return
        refusal = _refusal(validation.check_build_instances, context, instances, image,
                           filter_properties, request_spec, host_lists)
        if refusal:
            _refused(context, 'build_instances', refusal)
            for instance in instances:
                self._set_error(context, instance, refusal, 'build_instances')
            return
        filter_properties = dict(filter_properties or {})
        is_reschedule = host_lists is not None
        try:
            scheduler_utils.populate_retry(filter_properties, instances[0].uuid,
                                           self.conf.scheduler.max_attempts)
            if is_reschedule:
                if not host_lists[0]:
                    raise exception.MaxRetriesExceeded(reason=(
                        'Exhausted all hosts available for retrying build failures for '
                        'instance %s.' % instances[0].uuid))
            else:
                request_spec.instance_uuid = instances[0].uuid
                host_lists = self._schedule_instances(
                    context, request_spec, [i.uuid for i in instances], return_alternates=True)
        except Exception as exc:
            _unless_transient(exc)
            for instance in instances:
                self._set_error(context, instance, exc, 'build_instances')
            return
        for instance, host_list in zip(instances, host_lists):
            host_list = list(host_list)
            selection = host_list.pop(0)
            if is_reschedule:
                try:
                    selection = self._claim_alternate(context, instance, selection, host_list)
                except Exception as exc:
                    self._set_error(context, instance, exc, 'build_instances')
                    continue
            try:
                instance.availability_zone = selection.availability_zone \
                    if 'availability_zone' in selection and selection.availability_zone \
                    else instance.availability_zone
                instance.save()
            except exception.InstanceNotFound:
                LOG.debug('Instance %s deleted during build', instance.uuid)
                continue
            local_props = copy.deepcopy(filter_properties)
            scheduler_utils.populate_filter_properties(local_props, selection)
            self.compute_rpcapi.build_and_run_instance(
                context, instance=instance, host=selection.service_host, image=image,
                request_spec=request_spec, filter_properties=local_props,
                admin_password=admin_password, injected_files=injected_files,
                requested_networks=requested_networks, security_groups=security_groups,
                block_device_mapping=block_device_mapping, node=selection.nodename,
                limits=selection.limits, host_list=host_list)

    def _clean_up_refused(self, method, args, reason):
        """A ``schedule_and_build_instances`` cast refused before it could be decoded (its
        context or an argument does not load; see ``monitored_dispatcher``): the builds it
        names end as :meth:`_bury_refused` ends them. Other methods leave nothing behind."""
        if method == 'schedule_and_build_instances' and isinstance(args, dict):
            self._bury_refused(_uuids_in(args.get('build_requests'),
                                         args.get('request_specs'), raw=True),
                               exception.Invalid(reason='the build message was refused: %s'
                                                 % reason))

    def _bury_refused(self, uuids, error):
        """End in ERROR in cell0, with ``error`` as the fault, the builds of ``uuids`` whose
        build request the API wrote (read back from the database), as a build that failed
        to schedule: no build request is left without a cell until the stuck-build check.
        A build request that cannot be read back is dropped with its records."""
        admin = ms_context.get_admin_context()
        for uuid in uuids:
            try:
                build_request = build_request_obj.BuildRequest.get_by_instance_uuid(admin,
                                                                                   uuid)
            except exception.NotFound:
                continue  # never written, or taken by a build
            except Exception as exc:  # written, but does not load: nothing to record
                _unless_transient(exc)
                LOG.warning('Dropping the build request of %s, refused and unreadable: %s',
                            uuid, _message(exc))
                self._forget(admin, build_request_obj.BuildRequest(admin, instance_uuid=uuid))
                continue
            LOG.warning('Ending the build of %s in ERROR: %s', uuid, _message(error))
            instance = build_request.instance
            owner = ms_context.RequestContext(user_id=instance.user_id,
                                              project_id=build_request.project_id,
                                              is_admin=True, overwrite=False)
            self._bury_in_cell0(owner, None, error, [build_request], timeutils.utcnow())

    # -- helpers -------------------------------------------------------------------------

    def _claim_alternate(self, context, instance, selection, host_list):
        """A reschedule: claim the alternate's allocation request in Placement (the
        compute that refused gave back the instance's), trying the next alternate while a
        claim fails, as Nova's conductor; the one claimed. A selection without an
        allocation request (no Placement) is taken as it is."""
        while selection is not None:
            alloc_req = (jsonutils.loads(selection.allocation_request)
                         if 'allocation_request' in selection and selection.allocation_request
                         else None)
            if not alloc_req:
                return selection
            if self._placement_client().claim_resources(
                    context.elevated(), instance.uuid, alloc_req, instance.project_id,
                    instance.user_id, selection.allocation_request_version):
                return selection
            selection = host_list.pop(0) if host_list else None
        raise exception.MaxRetriesExceeded(reason=(
            'Exhausted all hosts available for retrying build failures for instance %s.'
            % instance.uuid))

    def _give_back_allocations(self, context, instance_uuids):
        """Delete what a scheduler may have claimed for instances not built yet."""
        if not self.conf.placement.enabled:
            return
        for instance_uuid in instance_uuids:
            try:
                self._placement_client().delete_allocation_for_instance(
                    context, instance_uuid, force=True)
            except exception.AllocationDeleteFailed as exc:
                LOG.warning('Could not delete the allocations of %s: %s', instance_uuid,
                            exc.format_message())

    def _placement_client(self):
        if self._report_client is None:
            from minisched.scheduler.client import report
            self._report_client = report.SchedulerReportClient(self.conf)
        return self._report_client

    def _still_pending(self, context, build_requests, request_specs):
        """``(pending, gone)``: the (build request, spec) pairs whose build request still
        exists, and the others.

        The same message can arrive twice (a publish repeated because the broker's confirm
        was lost, a delivery repeated because its ack was): the build requests the first
        delivery took are gone, and are dropped here before the scheduler is asked, so that
        it does not consume resources for them again.
        """
        pending, gone = [], []
        for build_request, spec in zip(build_requests, request_specs):
            # Whether it exists is all that counts: its instance is not read and decoded.
            if not api_db.build_request_exists(context, build_request.instance_uuid):
                _build_request_gone(build_request.instance_uuid)
                gone.append((build_request, spec))
                continue
            pending.append((build_request, spec))
        return pending, gone

    def _adopt_orphans(self, context, gone, image):
        """Build the instances a stopped conductor placed but never sent to a compute.

        This run repeats an earlier one (:func:`again`) and some of its build requests are
        gone: the earlier run created their instances, mapped them and dropped the build
        requests, and may have stopped before it cast their builds (it casts after placing
        every instance of the message): a run the database interrupted did, and so may a
        conductor that went away with the message. An instance still BUILDING,
        ``scheduling`` and on no host then (:func:`_take_over_wait` later)
        was never claimed by a compute (a compute's claim writes its host and ``spawning``
        at once): it is scheduled afresh and its build cast (``build_instances``), as Nova's
        conductor builds an instance whose build it must start again. Had the cast gone out
        after all, the compute that claims first wins: a claim is conditional on
        ``scheduling``, and the second build stops there.
        """
        deadline = time.monotonic() + _take_over_wait()
        specs = {build_request.instance_uuid: spec for build_request, spec in gone}
        while True:
            unclaimed = {uuid: self._unclaimed(context, uuid) for uuid in specs}
            specs = {uuid: specs[uuid] for uuid, instance in unclaimed.items()
                     if instance is not None}
            if not specs or time.monotonic() >= deadline:
                break
            time.sleep(0.5)
        for uuid, spec in specs.items():
            instance = unclaimed[uuid]
            LOG.warning('Instance %s was placed by a delivery of its build request that did '
                        'not finish (its conductor stopped before sending it to a compute); '
                        'this one schedules and builds it again.', uuid)
            self.build_instances(instance._context, [instance], image, {}, None, [], None,
                                 _legacy_security_groups(spec), request_spec=spec,
                                 host_lists=None)

    @staticmethod
    def _unclaimed(context, instance_uuid):
        """The instance when it is in its cell, BUILDING, ``scheduling`` and on no host;
        else None."""
        try:
            mapping = instance_mapping_obj.InstanceMapping.get_by_instance_uuid(
                context.elevated(), instance_uuid)
        except exception.NotFound:
            return None
        if mapping.cell_mapping is None and _has_cells(context):
            return None  # not placed (yet)
        try:
            with ms_context.target_cell(context, mapping.cell_mapping) as cctxt:
                instance = instance_obj.Instance.get_by_uuid(cctxt, instance_uuid)
        except exception.InstanceNotFound:
            return None
        if (instance.vm_state, instance.task_state, instance.host) != (
                instance_obj.BUILDING, instance_obj.SCHEDULING, None):
            return None
        return instance

    def _schedule_instances(self, context, request_spec, instance_uuids,
                            return_alternates=False):
        enabled = fs_conf.enabled_filters(self.conf)
        scheduler_utils.setup_instance_group(context, request_spec, enabled,
                                             ('ServerGroupSoftAffinityWeigher',
                                              'ServerGroupSoftAntiAffinityWeigher'))
        watch = timeutils.StopWatch()
        watch.start()
        waited = 0
        while True:
            try:
                host_lists = self._select(context, request_spec, instance_uuids,
                                          return_alternates)
                break
            except exception.CellsUnreachable as exc:
                # No host while some cells' databases do not answer: wait for them, within
                # the operator's bound, rather than bury builds a cell back soon could take.
                if waited + CELL_WAIT_INTERVAL > self.conf.conductor.cell_unreachable_wait_seconds:
                    raise
                LOG.warning('%s; asking the scheduler again for %s in %d s.',
                            exc.kwargs.get('reason', _message(exc)).split(';')[0],
                            ', '.join(instance_uuids), CELL_WAIT_INTERVAL)
            time.sleep(CELL_WAIT_INTERVAL)
            waited += CELL_WAIT_INTERVAL
        LOG.debug('Took %0.2f seconds to select destinations for %s instance(s).',
                  watch.elapsed(), len(instance_uuids))
        return host_lists

    def _select(self, context, request_spec, instance_uuids, return_alternates):
        """select_destinations, asked again when its request or answer was lost."""
        for attempt in range(1, SCHEDULE_ATTEMPTS + 1):
            try:
                return self.query_client.select_destinations(
                    context, request_spec, instance_uuids, return_objects=True,
                    return_alternates=return_alternates)
            except bus_errors.UNREACHABLE as exc:
                # The request or its reply was lost (say, with the broker), or the driver
                # gave up reconnecting: ask again rather than fail a build the API accepted.
                # The hosts a lost answer consumed are given back by the computes' next
                # reports (or the consumption TTL), the allocations it claimed in Placement
                # here: asked again, the scheduler would claim on top of them.
                self._give_back_allocations(context, instance_uuids)
                if attempt == SCHEDULE_ATTEMPTS:
                    raise
                LOG.warning('No answer from the scheduler for %s (%s); asking again (%d of '
                            '%d).', ', '.join(instance_uuids), bus_errors.describe(exc),
                            attempt + 1, SCHEDULE_ATTEMPTS)

    def _create_in_cell(self, context, build_request, spec, host_list, started):
        """Create the instance in the cell of the chosen host; None when it cannot be."""
        selection = host_list[0]
        instance = build_request.instance
        try:
            cell = self._cell_of_host(context, selection.service_host)
        except exception.HostMappingNotFound as exc:
            LOG.error('No host-to-cell mapping found for selected host %(host)s. Setup is '
                      'incomplete.', {'host': selection.service_host})
            self._bury_in_cell0(context, spec, exc, [build_request], started)
            return None
        # A build request deleted meanwhile (the user deleted the instance while it was
        # scheduled) is found by _take, which then destroys the instance made here.
        with ms_context.target_cell(context, cell) as cctxt:
            instance._context = cctxt
            created = _create_once(instance, self._schedule_records(cctxt, started, None))
        if not created and again():
            return self._take_over(context, instance, cell)
        if not created:
            LOG.info('Instance %s already exists in its cell: an earlier delivery of its build '
                     'request created it; skipping this one.', instance.uuid)
            return None
        if not self._take(context, build_request, instance, cell):
            return None
        return instance

    @staticmethod
    def _mapped_to(context, instance_uuid, cell):
        """Whether the instance's mapping points at ``cell`` (None: the local database)."""
        try:
            # Elevated: a mapping's cell is read by admin contexts only (it has the URLs).
            mapping = instance_mapping_obj.InstanceMapping.get_by_instance_uuid(
                context.elevated(), instance_uuid)
        except exception.NotFound:
            return False
        mapped = mapping.cell_mapping
        return (mapped.uuid if mapped is not None else None) == (
            cell.uuid if cell is not None else None)

    def _take_over(self, context, instance, cell):
        """``instance`` exists in ``cell`` already and this run repeats an earlier one
        (:func:`again`). This delivery's own run that the database interrupted created it:
        it is taken over at once. Or the delivery is RabbitMQ's again
        (``rpc_admission.redelivered``): the conductor that created it lost its connection
        with the message unacknowledged, maybe between the creation and the mapping. When
        its build request is still there :data:`TAKE_OVER_AFTER_SECONDS` later, that
        conductor stopped (a live one takes it within milliseconds of the creation): this
        delivery takes the instance over, with the same conditional mapping, and casts its
        build. Otherwise the earlier delivery goes on: this one stops. None when it stops."""
        # The broker also delivers again the casts of a conductor that lost only its
        # connection (a broker restart) and goes on: that one maps the instance right after
        # creating it. Only a build request still there after a while is an orphan.
        deadline = time.monotonic() + _take_over_wait()
        while (api_db.build_request_exists(context, instance.uuid)
               and time.monotonic() < deadline):
            time.sleep(0.5)
        # Gone meanwhile: the take answers GONE or PLACED, and this delivery stops.
        outcome = api_db.build_request_take(context, instance.uuid,
                                            cell.id if cell is not None else None)
        if outcome != api_db.TAKEN:
            LOG.info('Instance %s already exists in its cell (%s) and an earlier delivery of '
                     'its build request owns it; skipping this one.', instance.uuid,
                     _cell_name(cell))
            return None
        with ms_context.target_cell(context, cell) as cctxt:
            existing = instance_obj.Instance.get_by_uuid(cctxt, instance.uuid)
        LOG.warning('Instance %s was created in %s by a delivery of its build request that '
                    'did not finish (its conductor stopped); this one takes the build over.',
                    instance.uuid, _cell_name(cell))
        return existing

    def _take(self, context, build_request, instance, cell):
        """Make this delivery the one that builds ``instance``, just created in ``cell``.

        Mapping the instance to its cell is conditional (only an unplaced mapping is taken),
        and the build request is dropped with it (``api_db.build_request_take``). Another
        delivery of the same message that mapped it first, or a user who deleted the build
        request meanwhile, wins: the instance this delivery created is destroyed and False
        returned (nothing is cast).
        """
        outcome = api_db.build_request_take(context, instance.uuid,
                                            cell.id if cell is not None else None)
        if outcome == api_db.PLACED and self._mapped_to(context, instance.uuid, cell):
            # The same record: another delivery took it over (_take_over) and builds it.
            LOG.info('Instance %s was taken by another delivery of its build request, which '
                     'builds it.', instance.uuid)
            return False
        if outcome == api_db.PLACED:
            LOG.info('Instance %s was placed by another delivery of its build request; '
                     'removing the copy this one made in cell %s.', instance.uuid,
                     _cell_name(cell))
        elif outcome == api_db.GONE:
            LOG.info('The build request of instance %s was deleted while it was scheduled; '
                     'deleting the instance.', instance.uuid)
            self._give_back_allocations(context, [instance.uuid])  # as Nova's conductor
        else:
            return True
        instance.destroy()
        return False

    def _cast_build(self, context, instance, spec, host_list, image):
        host_list = list(host_list)
        selection = host_list.pop(0)
        LOG.debug('Selected host: %s; Selected node: %s; Alternates: %s',
                  selection.service_host, selection.nodename,
                  [(alt.service_host, alt.nodename) for alt in host_list])
        filter_props = spec.to_legacy_filter_properties_dict()
        scheduler_utils.populate_retry(filter_props, instance.uuid,
                                       self.conf.scheduler.max_attempts)
        scheduler_utils.populate_filter_properties(filter_props, selection)
        self.compute_rpcapi.build_and_run_instance(
            instance._context, instance=instance, host=selection.service_host, image=image,
            request_spec=spec, filter_properties=filter_props, admin_password=None,
            injected_files=[], requested_networks=None,
            security_groups=_legacy_security_groups(spec),
            block_device_mapping=[], node=selection.nodename, limits=selection.limits,
            host_list=host_list)

    def _cell_of_host(self, context, host):
        """The cell ``host`` is mapped to (None without cells), a mapping remembered for
        ``HOST_CELL_SECONDS``: one lookup per host for a burst of builds, not one per build.
        A host does not move between cells while it runs; a new host is looked up when first
        chosen."""
        known = self._host_cells.get(host)
        now = time.monotonic()
        if known is not None and now - known[1] < HOST_CELL_SECONDS:
            return known[0]
        try:
            cell = host_mapping_obj.HostMapping.get_by_host(context.elevated(),
                                                            host).cell_mapping
        except exception.HostMappingNotFound:
            if _has_cells(context):
                raise
            return None  # no cells mapped at all (yet): the local [database] is the only cell
        self._host_cells[host] = (cell, now)
        return cell

    def _schedule_records(self, cctxt, started, exc):
        """The rows of the ``create`` action and of its finished ``schedule`` event (from
        when scheduling started), written with the instance (``Instance.create_with_action``)."""
        now = timeutils.utcnow()
        action = {'action': instance_action.CREATE, 'request_id': cctxt.request_id,
                  'user_id': cctxt.user_id, 'project_id': cctxt.project_id,
                  'start_time': now}
        event = {'event': 'schedule', 'start_time': started, 'finish_time': now,
                 'host': self.host, 'result': 'Error' if exc is not None else 'Success'}
        if exc is not None:
            event['details'] = _message(exc)[:255]
            event['traceback'] = ''.join(
                traceback.format_exception(type(exc), exc, exc.__traceback__)[-3:])
            action['message'] = 'Error'
        return action, event

    def _bury_in_cell0(self, context, request_spec, exc, build_requests, started):
        """Create the instances in cell0 in ERROR, with the failure as an instance fault."""
        cell0 = None
        if _has_cells(context):
            try:
                cell0 = cell_mapping_obj.CellMapping.get_by_uuid(
                    context.elevated(), cell_mapping_obj.CELL0_UUID)
            except exception.CellMappingNotFound:
                LOG.error('No cell mapping found for cell0 while trying to record scheduling '
                          'failure. Setup is incomplete.')
                return
        for build_request in build_requests or []:
            instance = build_request.instance
            if not self._fit_for_record(context, build_request, instance):
                continue
            with ms_context.target_cell(validation.fit_context(context), cell0) as cctxt:
                instance._context = cctxt
                instance.vm_state = instance_obj.ERROR
                instance.task_state = None
                if not _create_once(instance, self._schedule_records(cctxt, started, exc)):
                    continue
                instance_fault.InstanceFault.from_exception(cctxt, instance.uuid, exc,
                                                            host=None).create()
            if self._take(context, build_request, instance, cell0):
                self._notify_error(context, instance.uuid, request_spec, exc)

    def _fit_for_record(self, context, build_request, instance):
        """Make ``instance``'s values fit their columns for its ERROR record; False (and the
        build request dropped) when its uuid cannot be recorded at all."""
        if not validation.recordable(instance):
            LOG.error('Instance uuid %r cannot be recorded in a cell; dropping its build '
                      'request.', instance.uuid)
            self._forget(context, build_request)
            return False
        cut = validation.fit_instance(instance)
        if cut:
            LOG.warning('Recording instance %s in ERROR with %s cut to fit the database.',
                        instance.uuid, ', '.join(cut))
        return True

    def _forget(self, context, build_request):
        """Drop a build request, its instance mapping and its request spec."""
        uuid = build_request.instance_uuid
        with contextlib.suppress(exception.NotFound):
            build_request.destroy()
        with contextlib.suppress(exception.NotFound):
            instance_mapping_obj.InstanceMapping.get_by_instance_uuid(context, uuid).destroy()
        with contextlib.suppress(exception.NotFound):
            request_spec_obj.RequestSpec(context, instance_uuid=uuid).destroy()

    def _set_error(self, context, instance, exc, method):
        """ERROR with a fault. The fault is written first (Nova writes it second), as the
        compute's failed build does: whoever sees the instance in ERROR can read why."""
        LOG.warning('Setting instance %s to ERROR state: %s', instance.uuid, _message(exc))
        validation.fit_instance(instance)  # what the caller sent may not fit its columns
        try:
            instance_fault.InstanceFault.from_exception(context, instance.uuid, exc,
                                                        host=None).create()
            instance.vm_state = instance_obj.ERROR
            instance.task_state = None
            instance.save()
        except exception.InstanceNotFound:
            LOG.debug('Instance %s deleted during build', instance.uuid)
        self._notify_error(context, instance.uuid, None, exc)

    def _notify_error(self, context, instance_uuid, request_spec, exc):
        payload = {'instance_id': instance_uuid, 'state': instance_obj.ERROR,
                   'method': 'build_instances', 'reason': _message(exc)}
        self.notifier.error(context, 'compute_task.build_instances', payload)


def _legacy_security_groups(spec):
    """The spec's security groups as the compute RPC takes them: each group's uuid, else its
    name (Nova's ``SecurityGroup.identifier``), not the list object."""
    return [group.uuid if 'uuid' in group else group.name for group in spec.security_groups]


def _take_over_wait():
    """Seconds to leave an earlier run to finish what it started before taking it over:
    none for this delivery's own interrupted run, :data:`TAKE_OVER_AFTER_SECONDS` for
    another conductor's."""
    return 0 if again() == 'retry' else TAKE_OVER_AFTER_SECONDS


#: The most instance uuids a refused message is searched for (the API's largest request).
MAX_REFUSED_UUIDS = 1000


def _uuids_in(build_requests, request_specs, raw=False):
    """The distinct instance uuids named by the build requests and request specs of a
    refused message, objects or (``raw``) their undecoded primitives; whatever is not a
    uuid is skipped."""
    uuids = []
    for items in (build_requests, request_specs):
        for item in items[:MAX_REFUSED_UUIDS] if isinstance(items, list) else ():
            if raw:
                data = item.get('minisched_object.data') if isinstance(item, dict) else None
                value = data.get('instance_uuid') if isinstance(data, dict) else None
            else:
                value = (item.instance_uuid if hasattr(item, 'obj_attr_is_set') and
                         item.obj_attr_is_set('instance_uuid') else None)
            if (isinstance(value, str) and uuidutils.is_uuid_like(value)
                    and value not in uuids):
                uuids.append(value)
    return uuids[:MAX_REFUSED_UUIDS]


def _unless_transient(exc):
    """Raise ``exc`` again when it is a database error that passes by itself: the task is
    run again (``minisched.conductor.db_errors``), wherever in the build flow it came from,
    rather than its builds failed."""
    from minisched.conductor import db_errors  # which imports this module
    if db_errors.is_transient(exc):
        raise exc


def _refusal(check, *args):
    """The ValidationError ``check(*args)`` raises, or None. (Logged out of its except
    block, where oslo.log would append it to every line.)"""
    try:
        check(*args)
    except exception.ValidationError as exc:
        return exc
    return None


def _refused(context, method, exc):
    """Log a refused message: its request id and the precise reason (a cast has no caller
    to tell)."""
    LOG.warning('Refused %s (request %s): %s', method, getattr(context, 'request_id', None),
                _message(exc))


def _has_cells(context):
    # Cell mappings are read by admin contexts only (they carry the cells' URLs).
    return bool(cell_mapping_obj.CellMappingList.get_all(context.elevated()))


def _build_request_gone(instance_uuid):
    LOG.info('The build request of instance %s is gone (taken by another delivery of this '
             'message, or deleted); skipping it.', instance_uuid)


def _create_once(instance, records):
    """Create ``instance`` in its cell with its ``records`` (action and event rows, see
    ``_schedule_records``); False when it exists there already.

    It does when an earlier delivery of the same build message created it (see
    ``ComputeTaskManager._take_over``).
    """
    try:
        instance.create_with_action(*records)
    except exception.InstanceExists:
        return False
    return True


def _cell_name(cell):
    return cell.name or cell.uuid if cell is not None else 'the local database'


def _message(exc):
    if exc is None:
        return None
    return exc.format_message() if hasattr(exc, 'format_message') else str(exc)

