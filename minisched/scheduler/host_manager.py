"""The HostManager: which hosts exist, what they have, and which filters and weighers run.

This module is the part Nova's scheduler code knows: start-up (cells, aggregates, instance
info), the candidates of a request, ``get_filtered_hosts``/``get_weighed_hosts``, and the
aggregate and instance-info updates the API and the computes cast. Host states live for the
process and are kept current by the incremental refresh of
:mod:`minisched.scheduler.host_refresh`, mixed into :class:`HostManager`.
"""
import collections
import logging
import threading

import numpy as np

from minisched.conf import filter_scheduler as fs_conf
from minisched import context as ms_context
from minisched.db.main import api as db
from minisched import exception
from minisched.objects import aggregate as aggregate_obj
from minisched.objects import cell_mapping as cell_mapping_obj
from minisched.objects import instance as instance_obj
from minisched.scheduler import filters
from minisched.scheduler import host_refresh
from minisched.scheduler import host_state
from minisched.scheduler import plugins
from minisched.scheduler import weights

LOG = logging.getLogger(__name__)

#: Cell uuid of the implicit cell (the local [database]) used while no cell is mapped.
LOCAL_CELL_UUID = host_refresh.LOCAL_CELL_UUID
#: With ``track_instance_changes`` off, a cell with more candidate hosts than this has all
#: its live instances read rather than those of the hosts listed (one query either way).
HOSTS_PER_INSTANCE_QUERY = 500


class HostManager(host_refresh.IncrementalRefresh):
    """Keeps the host states of every cell and runs the filter and weigher handlers."""

    host_state_cls = host_state.HostState

    def __init__(self, conf):
        self.conf = conf
        options = conf.filter_scheduler
        self.filter_handler = filters.HostFilterHandler()
        self.filter_classes = plugins.classes(plugins.FILTERS, options.available_filters,
                                              plugins.ALL_FILTERS)
        self.enabled_filters = self._choose_host_filters(self._enabled_filter_names())
        self.weight_handler = weights.HostWeightHandler()
        weigher_classes = plugins.classes(plugins.WEIGHERS, options.weight_classes,
                                          plugins.ALL_WEIGHERS)
        self.weighers = [cls(conf) for cls in weigher_classes.values()]
        self.table = host_state.HostStateTable(capacity=1024)
        self.host_state_map = {}                       # (host, node) -> HostState
        self._states_by_host = collections.defaultdict(list)
        self._services = {}                            # host -> service row
        self.aggs_by_id = {}
        self.host_aggregates_map = collections.defaultdict(set)
        self._instance_info = {}
        self._instance_lock = threading.Lock()
        self._refresh_lock = threading.Lock()
        self._refresh_started = 0.0
        self._cell_sync = {}
        self._down_cells = {}                          # cell uuid -> failing since
        self._host_cells = {}                          # mapped host -> cell uuid
        self._host_cells_since = None
        self._host_cells_marker = None
        self._host_cells_read_at = -host_refresh.MAPPINGS_SECONDS
        self._unmapped_warned = set()
        self._mappings_dirty = True
        self._all_mapped = False                       # every host held is mapped
        self.cells = None
        self.enabled_cells = None
        self._initialized = False
        self.last_refresh_seconds = 0.0

    def _enabled_filter_names(self):
        return fs_conf.enabled_filters(self.conf)

    def _choose_host_filters(self, names):
        """Instantiate the enabled filters once, in order; an unknown name stops start-up."""
        chosen = []
        for name in names:
            cls = self.filter_classes.get(name)
            if cls is None:
                raise exception.SchedulerHostFilterNotFound(filter_name=name)
            chosen.append(cls(self.conf))
        return chosen

    # -- start-up ----------------------------------------------------------------------

    def ensure_initialized(self, context):
        """Load cells, aggregates, instance info and host states once (after any fork)."""
        if self._initialized:
            return
        with self._refresh_lock:
            if self._initialized:
                return
            self.refresh_cells_caches(context)
            self._init_aggregates(context)
            if self.conf.filter_scheduler.track_instance_changes:
                self._init_instance_info(context)
            self._initialized = True
        self.refresh(context, full=True)

    def refresh_cells_caches(self, context=None):
        """Re-read the cell mappings (cell0 excluded). No mappings: the local [database]."""
        context = context or ms_context.get_admin_context()
        try:
            mappings = [c for c in cell_mapping_obj.CellMappingList.get_all(context)
                        if not c.is_cell0()]
        except Exception:
            LOG.exception('Could not read cell mappings; using the local database only')
            mappings = []
        if not mappings:
            LOG.warning('No cell mappings found: scheduling from the local [database] only. '
                        'Run "minisched-manage cell simple_cell_setup" to map cells and hosts.')
        self.cells = mappings or [None]
        self.enabled_cells = [c for c in self.cells if c is None or not c.disabled]

    def _init_aggregates(self, context):
        try:
            aggregates = aggregate_obj.AggregateList.get_all(context)
        except Exception:
            LOG.exception('Could not read aggregates')
            return
        for agg in aggregates:
            self.aggs_by_id[agg.id] = agg
            for host in agg.hosts:
                self.host_aggregates_map[host].add(agg.id)

    def _init_instance_info(self, context):
        """Read every cell's live instances once; the computes' casts keep them current."""
        info = collections.defaultdict(dict)
        for cell in self.cells:
            with ms_context.target_cell(context, cell) as cctxt:
                try:
                    rows = db.instance_get_all_by_filters(cctxt, {'deleted': False},
                                                          sort_key='id', sort_dir='asc')
                except Exception:
                    LOG.exception('Could not read instances of cell %s',
                                  host_refresh.cell_name(cell))
                    continue
            for row in rows:
                if row['host']:
                    info[row['host']][row['uuid']] = _tracked_instance(row)
        with self._instance_lock:
            for host, instances in info.items():
                self._instance_info[host] = {'instances': instances, 'updated': False}

    # -- candidates --------------------------------------------------------------------

    def candidate_rows(self, spec_obj=None):
        """Rows a request may use: mapped hosts of enabled, answering cells (or of the
        requested cell)."""
        table = self.table
        usable = table.active[:table.size] & table.columns['mapped'][:table.size]
        rows = np.flatnonzero(usable)
        cell = requested_cell(spec_obj)
        if cell is not None:
            wanted = {cell.uuid}
        elif len(self.enabled_cells) == len(self.cells) and not self._down_cells:
            return rows
        else:
            wanted = {c.uuid if c is not None else LOCAL_CELL_UUID for c in self.enabled_cells}
        wanted -= set(self._down_cells)
        states = table.states
        return np.asarray([row for row in rows if states[row].cell_uuid in wanted],
                          dtype=np.int64)

    def unreachable_cells(self, spec_obj=None):
        """``[(cell name, failing since)]`` of the cells a request may use whose database
        does not answer (their hosts are left out), oldest failure first."""
        cell = requested_cell(spec_obj)
        cells = [cell] if cell is not None else self.enabled_cells or ()
        down = []
        for cell in cells:
            since = self._down_cells.get(cell.uuid if cell is not None else LOCAL_CELL_UUID)
            if since is not None:
                down.append((since, cell.name or cell.uuid if cell is not None else 'local'))
        return [(name, since) for since, name in sorted(down)]

    def get_host_states(self, rows):
        states = self.table.states
        return [states[row] for row in rows]

    def get_all_host_states(self, context):
        """Every host state of every cell (what the caching scheduler caches)."""
        self.ensure_initialized(context)
        self.refresh(context)
        return list(self.host_state_map.values())

    def pre_filter_rows(self, rows, spec_obj):
        """Apply requested_destination, ignore_hosts, force_hosts and force_nodes.

        :returns: ``(rows, skip_filters)``; forced hosts skip every filter unless the request
            carries the ``_nova_check_type`` hint.
        """
        dest = spec_obj.requested_destination if spec_obj.obj_attr_is_set(
            'requested_destination') else None
        ignore = [h.lower() for h in (spec_obj.ignore_hosts or [])]
        force_hosts = [h.lower() for h in (spec_obj.force_hosts or [])]
        force_nodes = list(spec_obj.force_nodes or [])
        if dest is None and not (ignore or force_hosts or force_nodes):
            return rows, False
        states = self.table.states
        if dest is not None and 'host' in dest and dest.host:
            rows = np.asarray([r for r in rows if states[r].host == dest.host and
                               (dest.node is None or states[r].nodename == dest.node)],
                              dtype=np.int64)
        if ignore:
            rows = np.asarray([r for r in rows if states[r].host.lower() not in ignore],
                              dtype=np.int64)
            if not len(rows):
                LOG.info('Host filter ignoring hosts: %s', ', '.join(ignore))
                return rows, True
        if force_hosts:
            rows = np.asarray([r for r in rows if states[r].host.lower() in force_hosts],
                              dtype=np.int64)
            if not len(rows):
                LOG.info("No hosts matched due to not matching 'force_hosts' value of '%s'",
                         ', '.join(force_hosts))
        if force_nodes:
            rows = np.asarray([r for r in rows if states[r].nodename in force_nodes],
                              dtype=np.int64)
            if not len(rows):
                LOG.info("No nodes matched due to not matching 'force_nodes' value of '%s'",
                         ', '.join(force_nodes))
        hints = spec_obj.scheduler_hints if spec_obj.obj_attr_is_set('scheduler_hints') else {}
        check_type = (hints or {}).get('_nova_check_type')
        skip = bool((force_hosts or force_nodes) and not check_type and len(rows))
        return rows, skip

    # -- filtering and weighing (Nova's HostManager interface) -------------------------

    def get_filtered_hosts(self, host_states, spec_obj, index=0):
        """Per-host reference path: Nova's ``get_filtered_hosts`` over HostState objects."""
        host_states = list(host_states)
        rows = np.asarray([s.row for s in host_states], dtype=np.int64)
        rows, skip = self.pre_filter_rows(rows, spec_obj)
        states = self.get_host_states(rows)
        if skip:
            return states
        return self.filter_handler.get_filtered_objects(self.enabled_filters, states,
                                                        spec_obj, index)

    def get_weighed_hosts(self, hosts, spec_obj):
        return self.weight_handler.get_weighed_objects(self.weighers, hosts, spec_obj)

    # -- aggregates (fanout from the API) ----------------------------------------------

    def _aggregates_for(self, host):
        return [self.aggs_by_id[i] for i in self.host_aggregates_map.get(host, ())
                if i in self.aggs_by_id]

    def _refresh_host_aggregates(self, hosts):
        for host in hosts:
            aggregates = self._aggregates_for(host)
            for state in self._states_by_host.get(host, ()):
                state.update(aggregates=aggregates)

    def update_aggregates(self, aggregates):
        """Replace the given aggregates (a cast from the API when one changes)."""
        touched = set()
        for agg in aggregates:
            self.aggs_by_id[agg.id] = agg
            for host in agg.hosts:
                self.host_aggregates_map[host].add(agg.id)
            for host, ids in self.host_aggregates_map.items():
                if agg.id in ids and host not in agg.hosts:
                    ids.discard(agg.id)
                    touched.add(host)
            touched.update(agg.hosts)
        self._refresh_host_aggregates(touched)

    def delete_aggregate(self, aggregate):
        self.aggs_by_id.pop(aggregate.id, None)
        touched = [host for host, ids in self.host_aggregates_map.items() if aggregate.id in ids]
        for host in touched:
            self.host_aggregates_map[host].discard(aggregate.id)
        self._refresh_host_aggregates(touched)

    # -- instance info (fanout from the computes) --------------------------------------

    def _instance_dict_for(self, host, row=None):
        info = self._instance_info.get(host)
        if info is None:
            info = self._instance_info[host] = {'instances': {}, 'updated': False}
        return info['instances']

    def read_instances(self, context, states):
        """Give each host state its instances as the cell databases list them now.

        Nova's ``_get_instance_info`` when computes send no updates (``[filter_scheduler]
        track_instance_changes`` off): the affinity, Same/DifferentHost and TypeAffinity
        filters then see each request's candidates as the databases have them. One query
        per cell of the candidates, not one per host.
        """
        hosts_by_cell = collections.defaultdict(set)
        for state in states:
            hosts_by_cell[state.cell_uuid].add(state.host)
        cells = {cell.uuid if cell is not None else LOCAL_CELL_UUID: cell
                 for cell in self.cells or (None,)}
        found = collections.defaultdict(dict)
        for cell_uuid, hosts in hosts_by_cell.items():
            filters = {'deleted': False}
            if len(hosts) <= HOSTS_PER_INSTANCE_QUERY:
                filters['host'] = sorted(hosts)
            with ms_context.target_cell(context, cells.get(cell_uuid)) as cctxt:
                rows = db.instance_get_all_by_filters(cctxt, filters, sort_key='id',
                                                      sort_dir='asc')
            for row in rows:
                if row['host'] in hosts:
                    found[row['host']][row['uuid']] = _tracked_instance(row)
        for state in states:
            # A dict of its own: the request adds the instances it places to it.
            state.instances = dict(found.get(state.host, ()))

    def _set_host_instances(self, host, instances, updated):
        self._instance_info[host] = {'instances': instances, 'updated': updated}
        for state in self._states_by_host.get(host, ()):
            state.update(inst_dict=instances)

    def _recreate_instance_info(self, context, host):
        """Re-read ``host``'s instances from its cell (the host mapping says which).

        As the scheduler: whoever sent the update, the cache must hold every project's
        instances (a user's context would read its own project's only).
        """
        from minisched.objects import host_mapping as host_mapping_obj
        context = context.elevated()
        cell = None
        try:
            cell = host_mapping_obj.HostMapping.get_by_host(context, host).cell_mapping
        except exception.HostMappingNotFound:
            if self.cells != [None]:
                LOG.info('Host mapping not found for host %s. Not tracking instance info '
                         'for this host.', host)
                self._set_host_instances(host, {}, False)
                return
        with ms_context.target_cell(context, cell) as cctxt:
            rows = db.instance_get_all_by_host(cctxt, host)
        self._set_host_instances(host, {row['uuid']: _tracked_instance(row) for row in rows},
                                 False)

    def update_instance_info(self, context, host_name, instance_info):
        """Record instances a compute built (a list of one, or its full list at start)."""
        with self._instance_lock:
            info = self._instance_info.get(host_name)
            if info is not None:
                for instance in instance_info:
                    info['instances'][instance.uuid] = instance
                info['updated'] = True
            elif len(instance_info) > 1:
                self._set_host_instances(host_name, {i.uuid: i for i in instance_info}, True)
            else:
                self._recreate_instance_info(context, host_name)
        LOG.debug('Successfully updated the cached instance information for host %s',
                  host_name)

    def delete_instance_info(self, context, host_name, instance_uuid):
        with self._instance_lock:
            info = self._instance_info.get(host_name)
            if info is not None:
                info['instances'].pop(instance_uuid, None)
                info['updated'] = True
            else:
                self._recreate_instance_info(context, host_name)

    def sync_instance_info(self, context, host_name, instance_uuids):
        """Reconcile: a compute's own list wins when it disagrees with the cache."""
        with self._instance_lock:
            info = self._instance_info.get(host_name)
            if info is not None and set(info['instances']) == set(instance_uuids):
                info['updated'] = True
                LOG.debug('Successfully synced instances from host %s.', host_name)
                return
            self._recreate_instance_info(context, host_name)
            LOG.info('The instance sync for host %s did not match. Re-created its '
                     'InstanceList.', host_name)


def _tracked_instance(row):
    """What filters read of an instance on a host: its uuid and flavor id (TypeAffinity)."""
    return instance_obj.Instance(uuid=row['uuid'], instance_type_id=row['instance_type_id'])


def requested_cell(spec_obj):
    """The one cell a request is restricted to: its destination's cell, unless the request
    is a move allowed to leave that cell (as Nova's host manager decides)."""
    if spec_obj is None or not spec_obj.obj_attr_is_set('requested_destination'):
        return None
    dest = spec_obj.requested_destination
    if dest is None or 'cell' not in dest or dest.allow_cross_cell_move:
        return None
    return dest.cell
