"""The HostManager's incremental refresh of its host states from the cell databases.

Unlike Nova's HostManager (which rebuilds every host state from the database on every
request), minisched's keeps its host states for the life of the process and refreshes them
incrementally: each refresh reads only the compute node and service rows changed since the
previous one (``updated_at``), so an unchanged cluster costs one indexed query per cell.
Instance lists come from the computes' fanout casts (with ``[filter_scheduler]
track_instance_changes`` off, from the cell databases: read for each request's candidates),
aggregates from the API's; host mappings are read while a host held is unmapped or new, else
at most every ``MAPPINGS_SECONDS``.

A row can be committed after a row with a newer timestamp was read (two conductors, a slow
commit). Each read therefore looks back before the newest timestamp seen: ``QUICK_SKEW`` on
every request, ``SKEW`` (from the newest timestamp of the previous look-back) at most every
``LOOKBACK_SECONDS``. At start-up every row is read; every ``FULL_RESYNC_SECONDS`` every row
is checked (listed by version and key: rows whose version is not the one applied are read,
hosts whose rows are gone are dropped). Rows found in a window are listed by version first
and read whole only when the version is not one applied lately (kept per cell while it can
still fall in a window): in a cluster whose computes report, the windows hold hundreds to
thousands of unchanged rows. A report is thus seen by the next request unless it was
committed more than ``QUICK_SKEW`` after its timestamp, and then within
``LOOKBACK_SECONDS``. When the database can say cheaply that nothing was committed since the
last read (an SQLite file: ``minisched.db.markers``), the queries are skipped altogether.
"""
import contextlib
import datetime
import functools
import gc
import heapq
import json
import logging
import sys
import time
import uuid

import futurist.waiters
from oslo_utils import timeutils

from minisched import context as ms_context
from minisched.db.api import api as api_db
from minisched.db.main import api as db
from minisched.db import utils as db_utils
from minisched.objects import compute_node as compute_node_obj
from minisched.objects import fields
from minisched.scheduler import metrics
from minisched import thread_pool_factory

LOG = logging.getLogger(__name__)

COMPUTE_BINARY = 'minisched-compute'
#: Cell uuid of the implicit cell (the local [database]) used while no cell is mapped.
LOCAL_CELL_UUID = str(uuid.uuid5(uuid.NAMESPACE_URL, 'minisched:local-cell'))
#: Seconds between full re-reads of every cell (the incremental refresh's safety net).
FULL_RESYNC_SECONDS = 60
#: While every host held is mapped, the host mappings are read at most this often (seconds):
#: see ``HostManager._mappings_settled``.
MAPPINGS_SECONDS = 1.0
#: Every request's read looks back this far before the newest timestamp seen.
QUICK_SKEW = datetime.timedelta(seconds=0.5)
#: At most this often (seconds), a read looks back ``SKEW`` before the previous look-back's
#: newest timestamp, for rows committed later than ``QUICK_SKEW`` after their timestamp.
LOOKBACK_SECONDS = 1.0
SKEW = datetime.timedelta(seconds=2)
#: The kinds of read of a cell (see the module's docstring): every row whole, every row
#: checked, and the two windows.
FULL, CHECK, LOOKBACK, QUICK = 'full', 'check', 'lookback', 'quick'
#: Seconds to wait for one cell's rows before skipping it for this refresh.
CELL_TIMEOUT_SECONDS = 60
class _HVSpec:
    __slots__ = ('_triple',)

    def __init__(self, triple):
        self._triple = [fields.Architecture.canonicalize(triple[0]),
                        fields.HVType.canonicalize(triple[1]),
                        fields.VMMode.canonicalize(triple[2])]

    def to_list(self):
        return list(self._triple)


@functools.lru_cache(maxsize=1024)
def _hv_specs(raw):
    """Parsed ``supported_instances`` (hosts of one kind share the string: parse it once)."""
    return tuple(_HVSpec(t) for t in json.loads(raw or '[]'))


class NodeRecord:
    """A compute node row with ComputeNode's attribute interface, without ovo's cost.

    Building 10,000 versioned objects takes seconds; the scheduler only reads them, so it
    reads rows and applies the object's conversions (JSON fields, ratio defaults, UTC) itself.
    """

    def __init__(self, row, conf):
        # The row itself answers every other attribute (see __getattr__): copying it into
        # __dict__ cost 1 KB per node, 12 MB of a worker at 10,000 hosts.
        self._row = row
        self.stats = {sys.intern(k): None if v is None else str(v)  # keys: a few, on every host
                      for k, v in (json.loads(row['stats']) if row['stats'] else {}).items()}
        self.supported_hv_specs = _hv_specs(row['supported_instances'])
        self.pci_device_pools = row.get('pci_stats')
        for name in compute_node_obj.DEFAULT_RATIOS:
            setattr(self, name, compute_node_obj.effective_ratio(name, row[name], conf))
        for name in ('updated_at', 'created_at'):
            value = row[name]
            if value is not None and value.tzinfo is None:
                setattr(self, name, value.replace(tzinfo=datetime.timezone.utc))

    def __getattr__(self, name):  # only for names not set in __init__
        try:
            return self.__dict__['_row'][name]
        except KeyError:
            raise AttributeError(name) from None

    def __contains__(self, name):
        return name in self.__dict__ or name in self._row


class IncrementalRefresh:
    """The refresh of :class:`~minisched.scheduler.host_manager.HostManager`: reads the cells'
    changed rows and applies them to the host states (see the module's docstring). Uses the
    state the HostManager keeps (its table, maps, locks, cell caches)."""

    # -- refresh -----------------------------------------------------------------------

    def refresh(self, context, full=False):
        """Bring host states up to date with the cell databases (incrementally by default).

        Each cell's rows are read concurrently with a per-cell timeout; a cell that fails or
        times out is logged, its hosts are left out of scheduling until it answers again, and
        the others go on.
        """
        start = time.monotonic()
        with self._refresh_lock, _gc_paused(full):
            if not full and self._refresh_started > start:
                # Concurrent requests share one refresh: the one that just ran began after
                # this request arrived, so it already read everything this one would.
                return
            now = self._refresh_started = time.monotonic()
            results = self._scatter_gather(context, full, now)
            for cell_uuid, (fetched, error) in results.items():
                if error is not None:
                    self._mark_cell_down(cell_uuid, error)
                    continue
                self._down_cells.pop(cell_uuid, None)
                self._apply_cell(cell_uuid, *fetched, now=now)
            # After the cells' rows: a host they brought is looked up in the same refresh.
            self._refresh_host_mappings(context, full or self._host_cells_since is None,
                                        forced=full, now=now)
            self._expire_consumption()
            self._apply_mappings()
        self.last_refresh_seconds = time.monotonic() - start
        metrics.record_refresh(self.last_refresh_seconds)

    def _scatter_gather(self, context, full, now):
        """``{cell uuid: (fetched, None) or (None, error)}`` for every cell (``fetched``: see
        :meth:`_fetch_cell`)."""
        jobs = {}
        for cell in self.cells:
            cell_uuid = cell.uuid if cell is not None else LOCAL_CELL_UUID
            sync = self._cell_sync.setdefault(cell_uuid, {
                'since': None, 'marker': None, 'full_at': 0.0, 'full_marker': None,
                'lookback_since': None, 'lookback_at': 0.0, 'lookback_marker': None,
                # Per table: id -> (updated_at, created_at) of the rows applied lately.
                'recent': {'services': {}, 'compute_nodes': {}}})
            if full or sync['since'] is None:
                kind, since = FULL, None
            elif now - sync['full_at'] > FULL_RESYNC_SECONDS:
                kind, since = CHECK, None
            elif now - sync['lookback_at'] >= LOOKBACK_SECONDS:
                kind, since = LOOKBACK, sync['lookback_since'] - SKEW
            else:
                kind, since = QUICK, sync['since'] - QUICK_SKEW
            # Unchanged since the last read of this kind or a wider one: nothing to read. A
            # forced full read always reads.
            unchanged = None if full else sync[_MARKER_OF[kind]]
            jobs[cell_uuid] = (cell, since, kind, unchanged, sync['recent'])
        if len(jobs) == 1:  # the common single-cell case needs no threads
            (cell_uuid, args), = jobs.items()
            return {cell_uuid: self._fetch_guarded(context, *args)}
        # On the process's cell worker pool, as Nova's scatter_gather_cells: a cell that
        # has not answered in time is reported, its read left to end in the background.
        pending = {cell_uuid: thread_pool_factory.spawn_on(
                       self.conf, thread_pool_factory.ExecutorType.SCATTER_GATHER,
                       self._fetch_guarded, context, *args)
                   for cell_uuid, args in jobs.items()}
        done, _ = futurist.waiters.wait_for_all(pending.values(), CELL_TIMEOUT_SECONDS)
        results = {}
        for cell_uuid, future in pending.items():
            if future in done:
                results[cell_uuid] = future.result()
                continue
            started = not future.cancel()
            results[cell_uuid] = (None, TimeoutError(
                'no answer in %d s%s' % (CELL_TIMEOUT_SECONDS, '' if started else
                                         ': no cell worker thread was free, see [DEFAULT] '
                                         'cell_worker_thread_pool_size')))
        return results

    def _fetch_guarded(self, context, cell, since, kind, unchanged, recent):
        try:
            return self._fetch_cell(context, cell, since, kind, unchanged, recent), None
        except Exception as exc:
            return None, exc

    def _fetch_cell(self, context, cell, since, kind, unchanged, recent):
        """``(services, nodes, kind, marker, live)``: the cell's rows changed since ``since``
        but for the versions in ``recent``; for a ``FULL`` read all of them, for a ``CHECK``
        those not applied, with ``live`` the keys of every compute node (else None).
        Services and nodes are None when the cell's change marker still equals ``unchanged``
        (nothing to read). The marker is read before the rows, so a commit racing the read
        shows next time."""
        with ms_context.target_cell(context, cell) as cctxt:
            marker = db.changes_marker(cctxt)
            if marker is not None and marker == unchanged:
                return None, None, kind, marker, None
            if kind == FULL:
                return (*db.compute_hosts_get_all(cctxt, COMPUTE_BINARY), kind, marker, None)
            if kind == CHECK:
                live = set()
                return (*db.compute_hosts_get_all(cctxt, COMPUTE_BINARY,
                                                  unheld=self._unapplied(live)),
                        kind, marker, live)
            return (*db.compute_changes_since(cctxt, COMPUTE_BINARY, since,
                                              unheld=_not_recent(recent)),
                    kind, marker, None)

    def _unapplied(self, live):
        """``unheld`` of a ``CHECK`` read: the ids of the listed rows whose version is not the
        one applied to their host; the keys of the listed compute nodes are added to ``live``.
        """
        def unheld(table_name, versions):
            if table_name == 'services':
                return [row_id for row_id, updated_at, created_at, host in versions
                        if not _is_version(self._services.get(host), row_id, updated_at,
                                           created_at)]
            ids = []
            for row_id, updated_at, created_at, host, node in versions:
                live.add((host, node))
                state = self.host_state_map.get((host, node))
                if state is None or not _is_version(state.last_record, row_id, updated_at,
                                                    created_at):
                    ids.append(row_id)
            return ids
        return unheld

    def _mark_cell_down(self, cell_uuid, error):
        if cell_uuid not in self._down_cells:
            LOG.warning('Cell %s did not answer (%s: %s); its hosts are skipped until it '
                        'does.', cell_uuid, type(error).__name__, error)
            self._down_cells[cell_uuid] = timeutils.utcnow()  # since when, for NoValidHost

    def _apply_cell(self, cell_uuid, services, nodes, kind, marker, live, now):
        sync = self._cell_sync[cell_uuid]
        full = kind in (FULL, CHECK)
        if services is None:  # nothing committed since the read this one would repeat
            _mark_done(sync, kind, now)
            return
        newest = sync['since']
        # The versions met in windows; a full read's (every row) would mostly be forgotten at
        # once, and a window meeting one of those reads it whole once instead.
        recent = None if full else sync['recent']
        for row in services:
            newest = _newest(newest, row)
            if recent is not None:
                recent['services'][row['id']] = _version(row)
            if row['deleted']:
                self._services.pop(row['host'], None)
                continue
            if _same_version(self._services.get(row['host']), row):
                continue  # read again only because it lies in the look-back window
            row = self._services[row['host']] = _frozen(row)
            for state in self._states_by_host.get(row['host'], ()):
                state.update(service=row)
        seen = set()
        for row in nodes:
            newest = _newest(newest, row)
            key = (row['host'], row['hypervisor_hostname'])
            if row['deleted']:
                self._remove_state(key)
            elif self._update_node(row, cell_uuid):
                seen.add(key)
            else:
                continue  # not applied: read whole again while it is in a window
            if recent is not None:
                recent['compute_nodes'][row['id']] = _version(row)
        if full:
            present = seen if live is None else live
            stale = [key for key, state in self.host_state_map.items()
                     if state.cell_uuid == cell_uuid and key not in present]
            for key in stale:
                self._remove_state(key)
        sync['since'] = newest or timeutils.utcnow()
        for name in _MARKERS_SET_BY[kind]:
            sync[name] = marker
        _mark_done(sync, kind, now)
        if kind != QUICK:
            _forget_out_of_reach(sync['recent'], sync['lookback_since'] - SKEW)

    # -- host mappings: only mapped hosts are schedulable ------------------------------

    def _refresh_host_mappings(self, context, full, forced, now):
        if self.cells == [None]:
            return  # no cells mapped: every host of the local database is schedulable
        if not full and self._mappings_settled(now):
            return
        since = None if full else self._host_cells_since - SKEW
        started = timeutils.utcnow()
        try:
            marker = api_db.changes_marker()
            if not forced and marker is not None and marker == self._host_cells_marker:
                self._host_cells_read_at = now
                return  # nothing committed to the API database since the last read
            found = api_db.host_mapping_get_host_cells(context, since=since)
        except Exception as exc:
            LOG.warning('Could not read host mappings (%s); keeping the known ones', exc)
            return
        if full:
            self._mappings_dirty = self._mappings_dirty or found != self._host_cells
            self._host_cells = found
        elif found:
            self._host_cells.update(found)
            self._mappings_dirty = True
        self._host_cells_since = started
        self._host_cells_marker = marker
        self._host_cells_read_at = now

    def _mappings_settled(self, now):
        """Whether an incremental read of the host mappings can wait: every host held is
        mapped to its cell and none appeared since the last read.

        That read returns the mappings created since the previous one, and a host has one
        mapping: a new one can only be for a host not held (kept for when it comes) or one
        held and unmapped. A host deleted and mapped again (perhaps to another cell) is the
        exception, so the read still runs every ``MAPPINGS_SECONDS``. Without a change
        marker (PostgreSQL, MySQL) it was a transaction per request; on SQLite, every build
        commits to the API database and made it run.
        """
        return (self._all_mapped and not self._mappings_dirty and
                now - self._host_cells_read_at < MAPPINGS_SECONDS)

    def _apply_mappings(self):
        """Flag the rows of mapped hosts; tell the operator about unmapped ones, once each."""
        if not self._mappings_dirty:
            return
        self._mappings_dirty = False
        local = self.cells == [None]
        mapped = self.table.columns['mapped']
        all_mapped = True
        for (host, _node), state in self.host_state_map.items():
            is_mapped = local or self._host_cells.get(host) == state.cell_uuid
            mapped[state.row] = is_mapped
            all_mapped = all_mapped and is_mapped
            if not is_mapped and host not in self._unmapped_warned:
                self._unmapped_warned.add(host)
                LOG.warning('Compute host %s has no host mapping and is not schedulable. Run '
                            '"minisched-manage cell discover_hosts" to map it.', host)
            elif is_mapped:
                self._unmapped_warned.discard(host)
        self._all_mapped = all_mapped

    def _update_node(self, row, cell_uuid):
        """Apply a compute node row to its host state (made if new); False when it cannot be
        (no service record for its host)."""
        host = row['host']
        service = self._services.get(host)
        if service is None:
            LOG.warning('No compute service record found for host %(host)s', {'host': host})
            return False
        key = (host, row['hypervisor_hostname'])
        state = self.host_state_map.get(key)
        if state is not None and _same_version(state.last_record, row):
            return True  # read again only because it lies in the look-back window
        row = _frozen(row)
        if state is None:
            state = self._new_host_state(row, cell_uuid)
            self._mappings_dirty = True
            self.host_state_map[key] = state
            self._states_by_host[host].append(state)
            state.update(service=service, aggregates=self._aggregates_for(host),
                         inst_dict=self._instance_dict_for(host, row))
        state.last_record = row
        state.update(compute=NodeRecord(row, self.conf))
        return True

    def _new_host_state(self, row, cell_uuid):
        """Factory of host states (the ironic host manager picks a class per node)."""
        return self.host_state_cls(row['host'], row['hypervisor_hostname'], cell_uuid,
                                   table=self.table)

    def _remove_state(self, key):
        state = self.host_state_map.pop(key, None)
        if state is None:
            return
        states = self._states_by_host.get(key[0], [])
        if state in states:
            states.remove(state)
        state.release()
        if not self._all_mapped:
            self._mappings_dirty = True  # perhaps the last unmapped host: see again

    def _expire_consumption(self):
        """Drop in-memory consumption that no compute report followed within
        ``[filter_scheduler] consumption_ttl_seconds``.

        Only the consumptions that came due are visited (popped from the table's heap): a
        refresh costs the same whether ten or ten thousand hosts were consumed lately.
        """
        table = self.table
        due = table.consumption_due
        if not due:
            return
        cutoff = timeutils.utcnow(with_timezone=True) - datetime.timedelta(
            seconds=self.conf.filter_scheduler.consumption_ttl_seconds)
        while due and due[0][0] < cutoff:
            consumed_at, row = heapq.heappop(due)
            state = table.states[row]
            # Stale unless it is the row's latest consumption: a row released (or given to
            # another host), expired already, or consumed again later (that entry is due then).
            if state is None or state.consumed_at != consumed_at:
                continue
            state.consumed_at = None
            state.updated = None
            if state.last_record is not None:
                state.update(compute=NodeRecord(state.last_record, self.conf))


#: Per kind of read: the marker of the last read that this one would repeat, and the markers
#: it sets (a full read is also a look-back, and every read is a quick one).
_MARKER_OF = {FULL: 'full_marker', CHECK: 'full_marker', LOOKBACK: 'lookback_marker',
              QUICK: 'marker'}
_MARKERS_SET_BY = {FULL: ('full_marker', 'lookback_marker', 'marker'),
                   CHECK: ('full_marker', 'lookback_marker', 'marker'),
                   LOOKBACK: ('lookback_marker', 'marker'), QUICK: ('marker',)}


def _version(row):
    """What ``recent`` keeps of an applied row: its timestamps (by id)."""
    return row['updated_at'], row['created_at']


def _not_recent(recent):
    """``unheld`` of a window's read: the ids of the listed rows whose version is not in
    ``recent``."""
    def unheld(table_name, versions):
        applied = recent[table_name].get
        return [row_id for row_id, updated_at, created_at in versions
                if applied(row_id) != (updated_at, created_at)]
    return unheld


def _forget_out_of_reach(recent, horizon):
    """Drop from ``recent`` the versions no later window can hold (every later read looks
    back no further than ``horizon``: a row falls in a window by its newer timestamp)."""
    for versions in recent.values():
        gone = []
        for row_id, stamps in versions.items():
            latest = max(filter(None, stamps), default=None)
            if latest is None or latest < horizon:
                gone.append(row_id)
        for row_id in gone:
            del versions[row_id]


def _mark_done(sync, kind, now):
    """Record a read of ``kind`` (or one found unnecessary) of a cell at ``now``: the next
    look-back starts from the newest timestamp seen so far."""
    if kind in (FULL, CHECK):
        sync['full_at'] = now
    if kind != QUICK:
        sync['lookback_at'] = now
        sync['lookback_since'] = sync['since']


@contextlib.contextmanager
def _gc_paused(paused):
    """Building thousands of host states at once triggers collection after collection of
    objects that all stay alive: pause the collector for a full build."""
    was_enabled = gc.isenabled()
    if paused and was_enabled:
        gc.disable()
    try:
        yield
    finally:
        if paused and was_enabled:
            gc.enable()


def _frozen(row):
    """``row`` as kept for its host (rows not read by this module, e.g. synthetic ones, are
    dicts): a FrozenRow, its repeating strings shared."""
    if type(row) is db_utils.FrozenRow:
        return row
    return db_utils.FrozenRow.from_mapping(row, db.SHARED_HOST_COLUMNS)


def _same_version(known, row):
    """Whether ``row`` is the very version of a record already applied (same id, timestamps)."""
    return _is_version(known, row['id'], row['updated_at'], row['created_at'])


def _is_version(known, row_id, updated_at, created_at):
    """Whether the record ``known`` (or None) is this version of row ``row_id``."""
    return known is not None and (known['id'], known['updated_at'], known['created_at']) == (
        row_id, updated_at, created_at)


def _newest(current, row):
    for name in ('updated_at', 'created_at', 'deleted_at'):
        value = row.get(name)
        if value is not None and (current is None or value > current):
            current = value
    return current


def cell_name(cell):
    """How logs name a cell: its identity, or ``local`` for the local [database]."""
    return 'local' if cell is None else cell.identity
