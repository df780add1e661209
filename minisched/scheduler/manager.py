"""Scheduler RPC endpoint (topic ``scheduler``, API 4.5). No scheduling logic lives here."""
import gc
import logging
import threading

import oslo_messaging as messaging
from oslo_serialization import jsonutils
from oslo_service import periodic_task

from minisched.api.validation import parameter_types
from minisched import exception
from minisched import manager
from minisched import rpc
from minisched import utils
from minisched.objects import host_mapping as host_mapping_obj
from minisched.objects import instance as instance_obj
from minisched.objects import request_spec as request_spec_obj
from minisched.scheduler import filters
from minisched.scheduler import placement_claims
from minisched.scheduler import plugins
from minisched.scheduler.replay import recorder

LOG = logging.getLogger(__name__)

_sentinel = object()
#: Upper bound of instances in one request; a larger one is rejected, not attempted.
MAX_INSTANCES_PER_REQUEST = 10000
#: The smallest value of each flavor size a request may carry: Nova's API bounds for a
#: flavor (RAM and vCPUs at least 1, disks and swap at least 0), all at most MAX_INT.
FLAVOR_SIZES = {'memory_mb': 1, 'vcpus': 1, 'root_gb': 0, 'ephemeral_gb': 0, 'swap': 0}
MAX_INT = parameter_types.MAX_INT


class SchedulerManager(manager.Manager):
    """Chooses a host to run instances on."""

    target = messaging.Target(version='4.5')

    def __init__(self, conf, host=None, scheduler_driver=None):
        super().__init__(conf, host=host, service_name='scheduler')
        self.driver = plugins.load_driver(plugins.DRIVERS,
                                          scheduler_driver or conf.scheduler.driver, conf)
        self.configure_periodic_tasks({
            '_discover_hosts_in_cells': conf.scheduler.discover_hosts_in_cells_interval,
            '_run_periodic_tasks': conf.scheduler.periodic_task_interval,
        })
        self._discover_warned = False
        #: Appends each request and its answer to ``[scheduler] record_requests_to``.
        self.recorder = recorder.RequestRecorder.from_conf(conf)
        self._cell_servers = {}  # cell bus URL -> RPC server on it
        #: At most ``[scheduler] max_concurrent_decisions`` requests are decided at once;
        #: the others wait for a turn in arrival order, using no CPU.
        self._deciding = utils.Turnstile(conf.scheduler.max_concurrent_decisions)

    def post_start_hook(self):
        # Runs in each worker after the fork: build host states before the first request.
        from minisched import context
        try:
            self.driver.host_manager.ensure_initialized(context.get_admin_context())
        except Exception:
            LOG.exception('Could not build host states at start-up; the first request will '
                          'try again')
        _freeze_long_lived_objects()
        self._listen_on_cell_buses()

    def _listen_on_cell_buses(self):
        """Also serve the scheduler topic on each cell's own message bus.

        Computes of a cell with a bus of its own send their update/delete/sync_instance_info
        fanouts (and their cell conductor its calls) there; in Nova those never reach the
        schedulers, whose instance information for such hosts then goes stale until a sync
        mismatch. Cells are those the host manager knows (read at start and on SIGHUP).
        """
        for cell in self.driver.host_manager.cells or ():
            url = rpc.cell_transport_url(cell)
            if url is None or url in self._cell_servers:
                continue
            self._cell_servers[url] = None  # starting
            # In a thread: oslo.messaging connects before start() returns, for as long as
            # it takes, and a cell whose bus is down must not hold up this service.
            threading.Thread(target=self._listen_on, args=(url, cell.name or cell.uuid),
                             daemon=True, name='cell-bus-%s' % (cell.name or cell.uuid)).start()

    def _listen_on(self, url, cell_name):
        target = messaging.Target(topic='scheduler', server=self.host)
        try:
            server = rpc.get_cell_server(url, target, [self])
            server.start()
        except Exception:
            LOG.exception('Could not listen on the message bus of cell %s', cell_name)
            self._cell_servers.pop(url, None)
            return
        self._cell_servers[url] = server
        LOG.info('Listening for scheduler messages on the bus of cell %s too', cell_name)

    def cleanup_host(self):
        for server in self._cell_servers.values():
            if server is None:
                continue  # still connecting: its thread dies with the process
            try:
                server.stop()
                server.wait()
            except Exception:
                LOG.exception('Error while stopping a cell bus listener')
        self._cell_servers.clear()
        super().cleanup_host()

    @periodic_task.periodic_task(spacing=60, run_immediately=True)
    def _discover_hosts_in_cells(self, context):
        try:
            host_mappings = host_mapping_obj.discover_hosts(context)
        except exception.HostMappingExists as exc:
            (LOG.debug if self._discover_warned else LOG.warning)(
                'This periodic task should only be enabled on a single scheduler to prevent '
                'collisions between multiple schedulers: %s', exc)
            self._discover_warned = True
            return
        if host_mappings:
            LOG.info('Discovered %(count)i new hosts: %(hosts)s',
                     {'count': len(host_mappings),
                      'hosts': ', '.join('%s:%s' % (hm.cell_mapping.name, hm.host)
                                         for hm in host_mappings)})

    @periodic_task.periodic_task(spacing=60, run_immediately=True)
    def _run_periodic_tasks(self, context):
        self.driver.run_periodic_tasks(context)

    def reset(self):
        self.driver.host_manager.refresh_cells_caches()
        self._listen_on_cell_buses()  # a cell added since start, with a bus of its own

    @messaging.expected_exceptions(exception.NoValidHost, exception.InvalidRequestSpec)
    def select_destinations(self, ctxt, request_spec=None, filter_properties=None,
                            spec_obj=_sentinel, instance_uuids=None, return_objects=False,
                            return_alternates=False, dry_run=False):
        """Return, per instance, the chosen host (and alternates when asked).

        ``dry_run`` (minisched's own, never sent by Nova's callers): decide as usual, but
        keep nothing of the request's consumption once it is answered.
        """
        if spec_obj is _sentinel:
            spec_obj = _spec_from_primitives(ctxt, request_spec, filter_properties)
        _validate(spec_obj, instance_uuids)
        return_alternates = bool(return_alternates and return_objects)
        with self._deciding:
            candidates = self._allocation_candidates(ctxt, spec_obj)
            if self.recorder is None or dry_run:
                selections = self.driver.select_destinations(
                    ctxt, spec_obj, instance_uuids, *candidates, return_alternates,
                    dry_run=bool(dry_run))
            else:
                selections = self._recorded(ctxt, spec_obj, instance_uuids,
                                            return_alternates, candidates)
        if not return_objects:
            return jsonutils.to_primitive([sel[0].to_dict() for sel in selections])
        return selections

    def _allocation_candidates(self, ctxt, spec_obj):
        """``(alloc_reqs_by_rp_uuid, provider_summaries, allocation_request_version)``:
        Placement's answer with ``[placement] enabled`` and a driver that uses it (not for
        a rebuild's check of the current host, as in Nova), else ``(None, None, None)``."""
        if not (self.conf.placement.enabled and self.driver.USES_ALLOCATION_CANDIDATES) or \
                filters.is_rebuild(spec_obj):
            return None, None, None
        return placement_claims.get_allocation_candidates(
            ctxt, spec_obj, self.driver.placement_client, self.conf)

    def _recorded(self, ctxt, spec_obj, instance_uuids, return_alternates, candidates):
        """The driver's selections, the request and its answer recorded on the way."""
        started = self.recorder.start(spec_obj, instance_uuids, return_alternates)
        try:
            selections = self.driver.select_destinations(ctxt, spec_obj, instance_uuids,
                                                         *candidates, return_alternates)
        except exception.NoValidHost as exc:
            self.recorder.finish(started, error=exc)
            raise
        self.recorder.finish(started, selections=selections)
        return selections

    def update_aggregates(self, ctxt, aggregates):
        self.driver.host_manager.update_aggregates(aggregates)

    def delete_aggregate(self, ctxt, aggregate):
        self.driver.host_manager.delete_aggregate(aggregate)

    def update_instance_info(self, context, host_name: str,
                             instance_info: instance_obj.InstanceList):
        self.driver.host_manager.update_instance_info(context, host_name, instance_info)

    def delete_instance_info(self, context, host_name: str, instance_uuid: str):
        self.driver.host_manager.delete_instance_info(context, host_name, instance_uuid)

    def sync_instance_info(self, context, host_name: str, instance_uuids: list):
        self.driver.host_manager.sync_instance_info(context, host_name, instance_uuids)


def _freeze_long_lived_objects():
    """Keep the garbage collector away from what lives as long as the worker.

    The host states (and the rows and records behind them) are built after the fork, so the
    launcher's ``gc.freeze()`` does not cover them: every collection then walked them, and a
    select_destinations at 1,000 hosts took 2.3 ms instead of 1.6 ms, its (de)serializations
    a quarter longer. Collected first, so no garbage is frozen with them; objects made later
    (changed records, new hosts) are collected as usual.
    """
    gc.collect()
    gc.freeze()


def _spec_from_primitives(ctxt, request_spec, filter_properties):
    if not isinstance(request_spec or {}, dict) or \
            not isinstance(filter_properties or {}, dict):
        raise exception.InvalidRequestSpec(
            reason='request_spec and filter_properties must be dicts')
    try:
        return request_spec_obj.RequestSpec.from_primitives(ctxt, request_spec,
                                                            filter_properties)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise exception.InvalidRequestSpec(reason='%s: %s' % (type(exc).__name__, exc))


def _validate(spec_obj, instance_uuids):
    """Reject requests the scheduler cannot act on, with a reason for the caller."""
    if not isinstance(spec_obj, request_spec_obj.RequestSpec):
        raise exception.InvalidRequestSpec(reason='spec_obj must be a RequestSpec, got %s' %
                                           type(spec_obj).__name__)
    if not spec_obj.obj_attr_is_set('flavor') or spec_obj.flavor is None:
        raise exception.InvalidRequestSpec(reason='the request has no flavor')
    for size, least in FLAVOR_SIZES.items():
        if not spec_obj.flavor.obj_attr_is_set(size):
            if size == 'swap':
                continue  # optional: 0
            raise exception.InvalidRequestSpec(reason='the flavor has no %s' % size)
        value = getattr(spec_obj.flavor, size)
        if not least <= value <= MAX_INT:
            # A negative size would give the hosts it is "placed" on resources, as a
            # build's consumption of them does, until their next report.
            raise exception.InvalidRequestSpec(
                reason='the flavor\'s %s must be between %d and %d (as for a flavor made by '
                       'the API), got %r' % (size, least, MAX_INT, value))
    if instance_uuids is not None and (not isinstance(instance_uuids, list) or
                                       not all(isinstance(u, str) for u in instance_uuids)):
        raise exception.InvalidRequestSpec(reason='instance_uuids must be a list of strings')
    count = len(instance_uuids) if instance_uuids else spec_obj.num_instances
    if not isinstance(count, int) or count < 1 or count > MAX_INSTANCES_PER_REQUEST:
        raise exception.InvalidRequestSpec(
            reason='num_instances must be between 1 and %d, got %r' %
            (MAX_INSTANCES_PER_REQUEST, count))
