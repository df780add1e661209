"""Host states: the scheduler's view of one compute node, stored column-wise for speed.

A :class:`HostState` keeps Nova's attribute interface (``free_ram_mb``, ``vcpus_used`` ...),
so filters and weighers read it exactly as Nova's do. Its numeric attributes live in the
columns of a :class:`HostStateTable` shared by every host of a HostManager: the row proxy
keeps one copy of the truth while vectorised filters and weighers read whole columns at
once (one NumPy operation over 50,000 hosts instead of 50,000 Python calls).

As in Nova, a host's ``numa_topology`` is a NUMATopology object (with the usage the compute
reported) and its ``pci_stats`` a PciDeviceStats built from the reported device pools;
consuming a request fits its NUMA topology and takes its PCI devices, and, since host states
outlive requests here, a request that fails as a whole gives exactly that back.
"""
import collections
import collections.abc
import functools
import heapq
import json
import logging
import threading

import numpy as np
from oslo_utils import timeutils

from minisched.db import utils as db_utils
from minisched import objects
from minisched.objects import pci_device_pool
from minisched.pci import stats as pci_stats_mod
from minisched.scheduler import numa_bounds
from minisched.scheduler import numa_columns
from minisched.virt import hardware

LOG = logging.getLogger(__name__)

#: Integer attributes of a host state, each one int64 column. -1 encodes None where allowed.
INT_COLUMNS = ('total_usable_ram_mb', 'free_ram_mb', 'total_usable_disk_gb', 'disk_mb_used',
               'free_disk_mb', 'vcpus_total', 'vcpus_used', 'num_instances', 'num_io_ops',
               'failed_builds', 'hypervisor_version')
#: Float attributes (allocation ratios), float64 columns; NaN encodes None.
FLOAT_COLUMNS = ('ram_allocation_ratio', 'cpu_allocation_ratio', 'disk_allocation_ratio')
#: Per-row flags kept by the HostManager (not host attributes): ``mapped`` = schedulable.
BOOL_COLUMNS = ('mapped',)
_NULLABLE_INTS = frozenset(['hypervisor_version'])
#: Attributes whose truthiness the table tracks per row (:attr:`HostStateTable.flagged`).
TRACKED_ATTRIBUTES = ('aggregates', 'numa_topology')
#: Columns the table keeps of each row's ``numa_topology`` (not host attributes).
NUMA_COLUMNS = numa_bounds.FREE_PCPU_COLUMNS
#: Flagged rows whose ``pci_stats`` has device pools (a PciDeviceStats is always truthy).
PCI_POOLS = 'pci_stats'
#: Flagged rows whose ``allocation_candidates`` is a list (the Placement path), even empty.
CANDIDATES = 'allocation_candidates'
#: Attribute of a RequestSpec where consume_from_request records what it took, per host, for
#: unconsume_from_request (not a field: it never travels).
_CONSUMED = '_host_consumptions'

_NONE_INT = -1

#: One reported metric (Nova's MonitorMetric): ``value`` is None for a metric reported
#: without one, such as ``numa.membw.current`` with only ``numa_membw_values``.
Metric = collections.namedtuple('Metric', 'name value timestamp source numa_membw_values',
                                defaults=(None,))


class HostStateTable:
    """Column store of every host state of one HostManager (rows are reused on removal)."""

    def __init__(self, capacity=64):
        self.capacity = max(1, capacity)
        self.size = 0
        self.columns = {}
        for name in INT_COLUMNS:
            self.columns[name] = np.zeros(self.capacity, dtype=np.int64)
        for name in FLOAT_COLUMNS:
            self.columns[name] = np.full(self.capacity, np.nan, dtype=np.float64)
        for name in BOOL_COLUMNS:
            self.columns[name] = np.zeros(self.capacity, dtype=bool)
        for name in NUMA_COLUMNS + numa_columns.HOST_COLUMNS:
            self.columns[name] = np.zeros(self.capacity, dtype=np.int64)
        for name, (width, dtype) in numa_columns.WIDE_COLUMNS.items():
            self.columns[name] = np.zeros((self.capacity, width), dtype=dtype)
        self.columns['hypervisor_version'][:] = _NONE_INT
        #: The PCI pool kinds whose free devices ``pci_counts`` holds, and every page size
        #: the NUMA cell columns hold (see :mod:`minisched.scheduler.numa_columns`).
        self.pool_kinds = numa_columns.PoolKinds()
        self.page_sizes = set()
        #: Per-row Python objects for whatever is not numeric (filled by the HostState).
        self.states = [None] * self.capacity
        #: Compute node uuid -> the rows of the host states that have it (HostState.uuid
        #: keeps it): the Placement path narrows its candidates to Placement's providers
        #: by uuid without visiting every host state.
        self.uuid_rows = {}
        self.active = np.zeros(self.capacity, dtype=bool)
        #: Heap of ``(consumed_at, row)``, one entry per in-memory consumption: the TTL check
        #: pops what is due instead of visiting every consumed row on each refresh. An entry
        #: stands only while it equals its row's ``consumed_at`` (the row's latest).
        self.consumption_due = []
        #: Bumped whenever a row's service record is replaced (HostState.service).
        self.service_changes = 0
        #: Rows whose attribute of that name is truthy (see :func:`_tracked_attribute`):
        #: weighers learn "no host has aggregates" without visiting every host state.
        self.flagged = {name: set() for name in TRACKED_ATTRIBUTES + (PCI_POOLS, CANDIDATES)}
        self._free_rows = []

    def _grow(self):
        new_capacity = self.capacity * 2
        for name, column in self.columns.items():
            fill = np.nan if column.dtype == np.float64 else column.dtype.type(0)
            grown = np.full((new_capacity,) + column.shape[1:], fill, dtype=column.dtype)
            grown[:self.capacity] = column
            if name == 'hypervisor_version':
                grown[self.capacity:] = _NONE_INT
            self.columns[name] = grown
        active = np.zeros(new_capacity, dtype=bool)
        active[:self.capacity] = self.active
        self.active = active
        self.states.extend([None] * (new_capacity - self.capacity))
        self.capacity = new_capacity

    def allocate(self, state):
        """Give ``state`` a row with Nova's initial values and return its index."""
        if self._free_rows:
            row = self._free_rows.pop()
        else:
            if self.size == self.capacity:
                self._grow()
            row = self.size
            self.size += 1
        for name in (INT_COLUMNS + NUMA_COLUMNS + numa_columns.HOST_COLUMNS +
                     tuple(numa_columns.WIDE_COLUMNS)):
            self.columns[name][row] = 0
        for name in FLOAT_COLUMNS:
            self.columns[name][row] = np.nan
        for name in BOOL_COLUMNS:
            self.columns[name][row] = True
        self.columns['hypervisor_version'][row] = _NONE_INT
        self.states[row] = state
        self.active[row] = True
        return row

    def index_uuid(self, row, old, new):
        """Row ``row``'s compute node uuid changed from ``old`` to ``new``."""
        if old is not None:
            rows = self.uuid_rows.get(old)
            if rows is not None:
                rows.discard(row)
                if not rows:
                    del self.uuid_rows[old]
        if new is not None:
            self.uuid_rows.setdefault(new, set()).add(row)

    def rows_of_uuids(self, uuids):
        """The rows whose compute node uuid is one of ``uuids``, in no order."""
        index = self.uuid_rows
        return [row for uuid in uuids for row in index.get(uuid, ())]

    def release(self, row):
        for rows in self.flagged.values():
            rows.discard(row)
        state = self.states[row]
        if state is not None:
            self.index_uuid(row, state.uuid, None)
        self.states[row] = None
        self.active[row] = False
        self._free_rows.append(row)

    def rows(self):
        """Indexes of the rows in use, ascending."""
        return np.flatnonzero(self.active[:self.size])


def _int_column(name):
    nullable = name in _NULLABLE_INTS

    def getter(self):
        value = int(self._table.columns[name][self._row])
        return None if nullable and value == _NONE_INT else value

    def setter(self, value):
        if value is None and nullable:
            value = _NONE_INT
        self._table.columns[name][self._row] = value

    return property(getter, setter, doc='%s (int column)' % name)


def _float_column(name):
    def getter(self):
        value = float(self._table.columns[name][self._row])
        return None if value != value else value  # NaN means unset

    def setter(self, value):
        self._table.columns[name][self._row] = np.nan if value is None else value

    return property(getter, setter, doc='%s (float column)' % name)


def _tracked_attribute(name, flags=bool):
    """A plain attribute whose truthiness (or ``flags(value)``) is also recorded in the
    table's ``flagged[name]``.

    Assignments keep the record; a value changed in place would not (the host manager always
    assigns new lists and records).
    """
    slot = '_' + name

    def getter(self):
        return self.__dict__[slot]

    def setter(self, value):
        self.__dict__[slot] = value
        rows = self._table.flagged[name]
        if flags(value):
            rows.add(self._row)
        else:
            rows.discard(self._row)

    return property(getter, setter, doc='%s (truthiness tracked per row)' % name)


def _numa_topology_property():
    """``numa_topology``, its truthiness tracked, with the free dedicated CPUs of its cells
    kept in the table's :data:`NUMA_COLUMNS` (see :mod:`minisched.scheduler.numa_bounds`)
    and its cells in the columns of :mod:`minisched.scheduler.numa_columns`.
    """
    tracked = _tracked_attribute('numa_topology')

    def setter(self, value):
        tracked.fset(self, value)
        columns, row = self._table.columns, self._row
        for name, free in zip(NUMA_COLUMNS, numa_bounds.free_pcpus(value)):
            columns[name][row] = free
        numa_columns.write_topology(self._table, row, value)

    return property(tracked.fget, setter, doc='NUMATopology of the host, or None')


def _pci_stats_property():
    """``pci_stats``, with the rows whose stats have device pools recorded in the table
    (pools emptied in place by a consumption leave the row flagged: weighers then find no
    free device, the answer they would give anyway) and their free devices per pool kind in
    its columns (:mod:`minisched.scheduler.numa_columns`; whoever changes the pools in place
    assigns the stats again)."""

    def getter(self):
        value = self.__dict__['_pci_stats']
        if value is _NO_POOLS:
            # Made when first read: most hosts report no pools, and 10,000 empty stats
            # objects made at every refresh would cost 3 MB a scheduler worker.
            value = self.__dict__['_pci_stats'] = pci_stats_mod.PciDeviceStats(
                self.numa_topology)
        return value

    def setter(self, value):
        self.__dict__['_pci_stats'] = value
        rows = self._table.flagged[PCI_POOLS]
        if value is not None and getattr(value, 'pools', None):
            rows.add(self._row)
        else:
            rows.discard(self._row)
        numa_columns.write_pools(self._table, self._row, value)

    return property(getter, setter, doc='PciDeviceStats of the host, or None')


#: ``pci_stats`` of a host that reported no device pools, until something reads it.
_NO_POOLS = object()


@functools.lru_cache(maxsize=4096)
def _host_numa_topology(raw):
    """A compute node record's ``numa_topology`` JSON as a NUMATopology.

    Shared between the hosts reporting the same text: topologies are never changed in place
    (a consumption makes a new one), so one parse serves them all.
    """
    return objects.NUMATopology.obj_from_db_obj(raw)


class HostState:
    """Mutable, unpersisted state of one compute node as the scheduler sees it."""

    @property
    def uuid(self):
        """The compute node's uuid (its resource provider's), indexed by the table."""
        return self._uuid

    @uuid.setter
    def uuid(self, value):
        if value != self._uuid:
            if self._table.states[self._row] is self:  # not once released (row reused)
                self._table.index_uuid(self._row, self._uuid, value)
            self._uuid = value

    def __init__(self, host, node, cell_uuid, table=None):
        self.host = host
        self.nodename = node
        self._uuid = None
        self.cell_uuid = cell_uuid
        self._lock = threading.Lock()
        self._table = table if table is not None else HostStateTable(capacity=1)
        self._row = self._table.allocate(self)
        self.pci_stats = None
        self.numa_topology = None
        #: The allocation requests Placement offered this host for the request being
        #: filtered, each ``{'allocations': ..., 'mappings': {group: [rp uuid]}}``, which
        #: NUMATopologyFilter and PciPassthroughFilter narrow to those that fit (Nova's
        #: ``HostState.allocation_candidates``); None on the path without Placement, where
        #: those filters decide once with no provider mapping (Nova's default is ``[]``:
        #: it has no such path outside a rebuild, where these filters do not run).
        self.allocation_candidates = None
        self.host_ip = None
        self.hypervisor_type = None
        self.hypervisor_hostname = None
        self.cpu_info = None
        self.supported_instances = None
        self.limits = {}
        self.metrics = []
        self.stats = {}
        self.aggregates = []
        self.instances = {}
        self.service = None
        self.updated = None
        #: When this process last consumed from the host (None: state is as last reported).
        self.consumed_at = None
        #: The compute node row the state was last built from, and its record object.
        self.last_record = None
        self.last_compute = None

    locals().update({name: _int_column(name) for name in INT_COLUMNS})
    locals().update({name: _float_column(name) for name in FLOAT_COLUMNS})
    aggregates = _tracked_attribute('aggregates')
    allocation_candidates = _tracked_attribute(CANDIDATES, lambda value: value is not None)
    numa_topology = _numa_topology_property()
    pci_stats = _pci_stats_property()

    @property
    def row(self):
        """This host's row in its :class:`HostStateTable`."""
        return self._row

    def release(self):
        self._table.release(self._row)

    @property
    def service(self):
        return self._service

    @service.setter
    def service(self, value):
        # Counted per table: the ComputeFilter's vectorised form re-reads service records
        # only when one of them was replaced.
        self._service = value
        self._table.service_changes += 1

    def update(self, compute=None, service=None, aggregates=None, inst_dict=None):
        """Refresh from a compute node record, its service, aggregates and instances."""
        if compute is not None:
            with self._lock:
                self.last_compute = compute
                self._update_from_compute_node(compute)
        if aggregates is not None:
            self.aggregates = list(aggregates)
        if service is not None:
            self.service = ReadOnlyDict(service)
        if inst_dict is not None:
            self.instances = inst_dict

    def _update_from_compute_node(self, compute):
        if 'free_disk_gb' not in compute or compute.free_disk_gb is None:
            LOG.debug('Ignoring compute node %s as its usage has not been updated yet.',
                      compute.uuid if 'uuid' in compute else None)
            return
        updated_at = compute.updated_at if 'updated_at' in compute else None
        if self.updated and updated_at and self.updated > updated_at:
            return
        free_gb = compute.free_disk_gb
        least_gb = compute.disk_available_least
        if least_gb is not None:
            if least_gb > free_gb:
                LOG.warning('Host %(hostname)s has more disk space than database expected '
                            '(%(physical)s GB > %(database)s GB)',
                            {'physical': least_gb, 'database': free_gb,
                             'hostname': compute.hypervisor_hostname})
            free_gb = min(least_gb, free_gb)
        self.uuid = compute.uuid
        self.free_disk_mb = free_gb * 1024
        self.disk_mb_used = compute.local_gb_used * 1024
        self.free_ram_mb = compute.free_ram_mb
        self.total_usable_ram_mb = compute.memory_mb
        self.total_usable_disk_gb = compute.local_gb
        self.vcpus_total = compute.vcpus
        self.vcpus_used = compute.vcpus_used
        self.updated = updated_at
        raw_numa = compute.numa_topology
        self.numa_topology = _host_numa_topology(raw_numa) if raw_numa else None
        pools = compute.pci_device_pools
        if pools is None or isinstance(pools, str):
            pools = pci_device_pool.from_pci_stats(pools) if pools else None
        self.pci_stats = (pci_stats_mod.PciDeviceStats(self.numa_topology, stats=pools)
                          if pools else _NO_POOLS)
        self.host_ip = compute.host_ip
        self.hypervisor_type = compute.hypervisor_type
        self.hypervisor_version = compute.hypervisor_version
        self.hypervisor_hostname = compute.hypervisor_hostname
        self.cpu_info = compute.cpu_info
        if compute.supported_hv_specs:
            self.supported_instances = [spec.to_list() for spec in compute.supported_hv_specs]
        else:
            self.supported_instances = []
        self.stats = compute.stats or {}  # shared, as Nova does: never changed in place
        self.num_instances = int(self.stats.get('num_instances', 0))
        self.num_io_ops = int(self.stats.get('io_workload', 0))
        self.failed_builds = int(self.stats.get('failed_builds', 0))
        self.metrics = _metrics_from_json(compute.metrics)
        self.cpu_allocation_ratio = compute.cpu_allocation_ratio
        self.ram_allocation_ratio = compute.ram_allocation_ratio
        self.disk_allocation_ratio = compute.disk_allocation_ratio

    def consume_from_request(self, spec_obj, limits=None):
        """Account for one instance of ``spec_obj`` placed here (swap is not counted); its
        NUMA topology is fitted with ``limits`` (the request's, else ``self.limits``)."""
        with self._lock:
            times = (self.updated, self.consumed_at)
            try:
                self._consume(spec_obj, self.limits if limits is None else limits)
            except Exception:
                # What was taken before the failure stays taken, and expires with the rest;
                # as in Nova (set_update_time_on_success), ``updated`` is left as it was.
                LOG.exception('Failed to consume request on host %s', self.host)
                self.consumed_at = timeutils.utcnow(with_timezone=True)
            else:
                self.updated = self.consumed_at = timeutils.utcnow(with_timezone=True)
            heapq.heappush(self._table.consumption_due, (self.consumed_at, self._row))
            consumed = getattr(spec_obj, _CONSUMED, None)
            if consumed and consumed[-1].host_state is self:
                consumed[-1].times = times
                consumed[-1].consumed_at = self.consumed_at

    def _consume(self, spec_obj, limits):
        """Nova's ``_locked_consume_from_request``, recording on ``spec_obj`` what it took
        from this host (see :meth:`unconsume_from_request`)."""
        taken = _Consumption(self)
        _consumptions(spec_obj).append(taken)
        self._count(spec_obj, 1)
        taken.counted = True
        pci_requests = spec_obj.pci_requests if 'pci_requests' in spec_obj else None
        pci_requests = pci_requests.requests if pci_requests and self.pci_stats else None
        numa_topology = spec_obj.numa_topology if 'numa_topology' in spec_obj else None
        # The providers of the claimed allocation (Placement path) pick the PCI devices.
        provider_mapping = spec_obj.get_request_group_mapping()
        if self.numa_topology and numa_topology:
            fitted = hardware.numa_fit_instance_to_host(
                self.numa_topology, numa_topology, limits=limits.get('numa_topology'),
                pci_requests=pci_requests, pci_stats=self.pci_stats,
                provider_mapping=provider_mapping)
            # As in Nova, a topology that does not fit (no NUMATopologyFilter ran, or the
            # host was forced) is dropped from the request: the host's NUMA usage stays as
            # it is, the PCI devices are still taken (with no NUMA cells to match) and the
            # I/O operation still counted; the request's later instances are not fitted.
            spec_obj.numa_topology = fitted
            if fitted is not None:
                self.numa_topology = hardware.numa_usage_from_instance_numa(
                    self.numa_topology, fitted)
                taken.numa_topology = fitted
        if pci_requests:
            instance_cells = spec_obj.numa_topology.cells if spec_obj.numa_topology else None
            before = _pool_counts(self.pci_stats)
            try:
                self.pci_stats.apply_requests(pci_requests, provider_mapping, instance_cells)
            finally:
                taken.pci_pools = _pools_taken(before, _pool_counts(self.pci_stats))
                self.pci_stats = self.pci_stats  # the table's columns follow the counts
        # Counted last, as in Nova: a failure above leaves the I/O operation uncounted.
        self.num_io_ops += 1
        taken.io_op = True

    def _count(self, spec_obj, sign):
        disk_mb = (spec_obj.root_gb + spec_obj.ephemeral_gb) * 1024
        self.free_ram_mb -= sign * spec_obj.memory_mb
        self.free_disk_mb -= sign * disk_mb
        self.vcpus_used += sign * spec_obj.vcpus
        self.num_instances += sign

    def unconsume_from_request(self, spec_obj):
        """Give back one ``consume_from_request`` of a request that failed as a whole.

        Host states outlive requests here (in Nova they were rebuilt for the next one), so a
        failed multi-instance request must return exactly what it took, and keep what
        earlier, successful requests consumed until the compute reports.
        """
        with self._lock:
            try:
                self._unconsume(spec_obj)
            except Exception:
                LOG.exception('Failed to give back a request on host %s', self.host)

    def _unconsume(self, spec_obj):
        mine = [taken for taken in _consumptions(spec_obj) if taken.host_state is self]
        if not mine:
            return
        taken = mine[-1]
        _consumptions(spec_obj).remove(taken)
        if taken.counted:
            self._count(spec_obj, -1)
        if taken.io_op:
            self.num_io_ops -= 1
        if taken.numa_topology is not None and self.numa_topology:
            self.numa_topology = hardware.numa_usage_from_instance_numa(
                self.numa_topology, taken.numa_topology, free=True)
        if taken.pci_pools and self.pci_stats is not None:
            for pool, count in taken.pci_pools:
                self.pci_stats.give_back(pool, count)
            self.pci_stats = self.pci_stats  # the row has pools again
        if taken.consumed_at is not None and self.consumed_at == taken.consumed_at:
            # Still the host's latest consumption: its times are again those from before,
            # so that what expires is the earlier consumption's (if any) and a record older
            # than this one is not ignored.
            self.updated, self.consumed_at = taken.times
            if self.consumed_at is not None:
                heapq.heappush(self._table.consumption_due, (self.consumed_at, self._row))
            elif self.last_compute is not None:
                # Nothing consumed in memory any more: the host is its latest record (which
                # a refresh may have skipped, as older than this consumption).
                self._update_from_compute_node(self.last_compute)

    def __repr__(self):
        text = ('(%s, %s) ram: %sMB disk: %sMB io_ops: %s instances: %s' %
                (self.host, self.nodename, self.free_ram_mb, self.free_disk_mb,
                 self.num_io_ops, self.num_instances))
        if self.allocation_candidates is not None:
            text += ', allocation_candidates: %d' % len(self.allocation_candidates)
        return text


class _Consumption:
    """What one ``consume_from_request`` took from one host."""

    __slots__ = ('host_state', 'counted', 'io_op', 'numa_topology', 'pci_pools', 'times',
                 'consumed_at')

    def __init__(self, host_state):
        self.host_state = host_state
        self.counted = self.io_op = False
        #: The host's ``(updated, consumed_at)`` before, and its ``consumed_at`` after.
        self.times = (None, None)
        self.consumed_at = None
        #: The fitted instance topology whose usage was added to the host's, or None.
        self.numa_topology = None
        #: ``[(pool dict, devices taken)]``.
        self.pci_pools = []


def _consumptions(spec_obj):
    consumed = getattr(spec_obj, _CONSUMED, None)
    if consumed is None:
        consumed = []
        setattr(spec_obj, _CONSUMED, consumed)
    return consumed


def _pool_counts(stats):
    """``{pool identity: (count, copy of the pool)}`` of a PciDeviceStats."""
    return {pci_stats_mod.pool_identity(pool): (pool['count'], dict(pool))
            for pool in stats.pools}


def _pools_taken(before, after):
    """``[(pool, devices taken)]`` from two ``_pool_counts``: every pool whose count fell,
    and every pool that left the list even with nothing taken (as Nova's rule drops an
    empty pool a request reaches), so that giving back puts it in its place again."""
    taken = []
    for key, (count, pool) in before.items():
        left = after[key][0] if key in after else None
        if left is None or left < count:
            taken.append((pool, count - (left or 0)))
    return taken


class ReadOnlyDict(collections.abc.Mapping):
    """The service record as a dict filters may read but not change."""

    def __init__(self, source):
        # A plain dict or a FrozenRow is wrapped, not copied: the host manager's service rows
        # are replaced on update, never changed in place (a copy per host state cost 6 MB at
        # 10,000).
        self._data = source if type(source) in (dict, db_utils.FrozenRow) else dict(source)

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def __repr__(self):
        return repr(self._data)


#: The metric types a compute may report (Nova's ``MonitorMetricType``).
METRIC_NAMES = frozenset([
    'cpu.frequency', 'cpu.user.time', 'cpu.kernel.time', 'cpu.idle.time', 'cpu.iowait.time',
    'cpu.user.percent', 'cpu.kernel.percent', 'cpu.idle.percent', 'cpu.iowait.percent',
    'cpu.percent', 'numa.membw.max', 'numa.membw.current'])
#: Percentages travel as fractions (0.975) and are held in hundredths of a percent.
PERCENT_METRICS = frozenset(['cpu.user.percent', 'cpu.kernel.percent', 'cpu.idle.percent',
                             'cpu.iowait.percent', 'cpu.percent'])


def _metric(item):
    """One reported metric as Nova's ``MonitorMetricList.from_json`` reads it: a known type;
    an integer value when one is reported (a percentage times 100 first, then truncated);
    per-NUMA-node values (``numa_membw_values``: node id string -> integer) when reported.
    Either may be missing: a ``numa.membw.*`` metric comes with the node values only."""
    name = item['name']
    if name not in METRIC_NAMES:
        raise ValueError('unknown metric type %r' % name)
    value = item['value'] if 'value' in item else None
    if 'value' in item:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise TypeError('metric %s value %r is not a number' % (name, value))
        if name in PERCENT_METRICS:
            if isinstance(value, str):
                raise TypeError('metric %s value %r is not a number' % (name, value))
            value *= 100
        value = int(value)
    return Metric(name, value, item.get('timestamp'), item.get('source'),
                  _numa_membw_values(name, item.get('numa_membw_values')))


def _numa_membw_values(name, values):
    """Nova's ``DictOfIntegersField``: None, or string keys (as JSON gives) to integers."""
    if values is None:
        return None
    if not isinstance(values, dict) or not all(isinstance(key, str) for key in values):
        raise TypeError('metric %s numa_membw_values %r is not a dict by node' % (name, values))
    if any(isinstance(v, bool) or not isinstance(v, (int, float, str)) for v in values.values()):
        raise TypeError('metric %s numa_membw_values %r are not numbers' % (name, values))
    return {key: int(value) for key, value in values.items()}


class MetricList(list):
    """A host's metrics: Metric tuples, with ``to_list()`` as Nova's MonitorMetricList has."""

    def to_list(self):
        """The metrics as dicts of their reported fields (Nova's ``MonitorMetric.to_dict``)."""
        return [{name: value for name, value in metric._asdict().items() if value is not None}
                for metric in self]


def _metrics_from_json(raw):
    if not raw or raw == '[]':
        return MetricList()
    try:
        items = json.loads(raw) if isinstance(raw, str) else raw
        iter(items)
    except (ValueError, TypeError):
        LOG.warning('Ignoring malformed metrics %r', raw)
        return MetricList()
    metrics = MetricList()
    for item in items:
        try:
            metrics.append(_metric(item))
        except (ValueError, KeyError, TypeError, OverflowError) as exc:
            LOG.warning('Ignoring the malformed metric %r: %s', item, exc)
    return metrics
