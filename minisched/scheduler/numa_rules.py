"""Column-wise answers of the NUMA fit and the PCI check: most hosts of a request at once.

From the columns of :mod:`minisched.scheduler.numa_columns`, each host of a request is
found to pass, to fail, or left open for the exact per-host check
(``numa_fit_instance_to_host``, ``PciDeviceStats.support_requests``). A host is decided
only where the exact check is known to give that answer:

- whether one guest cell fits on one host cell (``numa_fit._fit_cell``) is a handful of
  comparisons: memory in the pages asked for (or the smallest pages, free ones under pinned
  CPUs; the cell's memory without pages), shared CPUs against ``cpu_allocation_ratio`` and
  memory against ``ram_allocation_ratio``, and pinned CPUs: the free sibling threads the
  packing of the thread policy can use (``prefer``: any free thread, ``require``: groups of
  two or more free siblings, ``isolate``: wholly free cores). That is exact per cell, so
- a guest of one cell fits where some host cell takes it (every host cell is tried, the
  first that fits wins), and where, with one PCI request, that cell also has the devices
  its NUMA affinity policy allows (``required``, ``legacy``, ``preferred``);
- a guest of several identical cells fails where fewer host cells take one of them (the
  fit needs that many distinct cells) and, without page size classes, PCI requests or
  network affinity, passes where enough do: its memo of (host cell, guest cell) answers is
  then right for every guest cell, so every permutation of fitting cells is accepted;
- a PCI request without NUMA cells passes where the host's usable devices of the pool
  kinds it matches number enough, and fails where they do not.

Anything else (emulator threads on their own CPU, different guest cells, several PCI
requests, the ``socket`` policy, Placement providers, hosts or cells the columns do not
hold) is left open, save for the failures that hold whatever the rest.
"""
import numpy as np

from minisched.objects import fields
from minisched.pci import stats as pci_stats_mod
from minisched.scheduler import numa_columns
from minisched.virt import numa_fit

_PINNED = (fields.CPUAllocationPolicy.DEDICATED, fields.CPUAllocationPolicy.MIXED)
_FLOATING = (fields.CPUAllocationPolicy.SHARED, fields.CPUAllocationPolicy.MIXED, None)
_THREADS = fields.CPUThreadAllocationPolicy
#: The cell column saying how many dedicated CPUs each thread policy can pin there.
_CAPACITY = {None: 'free_threads', _THREADS.PREFER: 'free_threads',
             _THREADS.REQUIRE: 'require_capacity', _THREADS.ISOLATE: 'isolate_capacity'}
_CLASSES = (numa_fit.MEMPAGES_SMALL, numa_fit.MEMPAGES_LARGE, numa_fit.MEMPAGES_ANY)
_POLICY = fields.PCINUMAAffinityPolicy
#: The PCI NUMA affinity policies decided here (``socket`` reads the host's sockets).
_PCI_POLICIES = (None, _POLICY.LEGACY, _POLICY.REQUIRED, _POLICY.PREFERRED)
#: Node of a pool kind reported on no NUMA node: equal to no cell id.
_NO_NODE = np.iinfo(np.int32).min
_GUEST_FIELDS = ('memory', 'cpuset', 'pcpuset', 'cpu_policy', 'cpu_thread_policy')


class Decision:
    """``passes`` and ``open`` (left to the exact check): bool arrays over the rows; where
    ``open`` is False, ``passes`` is the exact check's answer."""

    __slots__ = ('passes', 'open')

    def __init__(self, passes, open_):
        self.passes = passes
        self.open = open_


def _guest_cell(cell):
    """``(memory MB, shared CPUs, pinned CPUs, policy, thread policy, page size)`` of a
    guest cell, or None when the columns cannot answer for it."""
    if not all(name in cell for name in _GUEST_FIELDS):
        return None
    pagesize = cell.pagesize if 'pagesize' in cell else None
    key = (cell.memory, len(cell.cpuset), len(cell.pcpuset), cell.cpu_policy,
           cell.cpu_thread_policy, pagesize or None)
    if key[3] not in _PINNED + _FLOATING:
        return None
    if key[3] in _PINNED and (key[2] < 1 or key[4] not in _CAPACITY):
        return None
    return key


def _pages_hold(size, avail_kb, memory_kb, sizes):
    """Where pages of ``size`` KiB, ``avail_kb`` of them, hold exactly ``memory_kb`` (Nova's
    ``can_fit_pagesize``: no more than they have, in whole pages); ``sizes``: every size
    the table holds."""
    whole = np.zeros(size.shape, dtype=bool)
    for candidate in sizes:
        if candidate > 0 and memory_kb % candidate == 0:
            whole |= size == candidate
    return whole & (avail_kb >= memory_kb)


def _memory_fits(col, guest, sizes):
    memory, _shared, _pinned, policy, _thread, pagesize = guest
    memory_kb = memory * 1024
    memory = np.int64(memory)
    if pagesize:
        fits = np.zeros(col('numa_cpus').shape, dtype=bool)
        for rank in range(numa_columns.MAX_PAGE_SIZES):
            size = col('numa_page%d_size' % rank)
            if pagesize == numa_fit.MEMPAGES_SMALL:
                eligible = size > 0 if rank == 0 else None
            elif pagesize == numa_fit.MEMPAGES_LARGE:
                eligible = size > 0 if rank else None
            elif pagesize == numa_fit.MEMPAGES_ANY:
                eligible = size > 0
            else:
                eligible = size == pagesize
            if eligible is not None:
                fits |= eligible & _pages_hold(size, col('numa_page%d_free_kb' % rank),
                                               memory_kb, sizes)
        return fits
    pinned = policy in _PINNED
    size = col('numa_page0_size')
    in_pages = _pages_hold(size, col('numa_page0_free_kb' if pinned else 'numa_page0_total_kb'),
                           memory_kb, sizes)
    memory_mb = col('numa_memory')
    plain = (memory_mb - col('numa_memory_usage') if pinned else memory_mb) >= memory
    return np.where(size > 0, in_pages, plain)


def cell_fits(table, rows, guest):
    """``(fits, known, spoils)``, bool arrays of shape (rows, MAX_CELLS): where the guest
    cell fits on the host cell, where that answer is exact (a cell the host has, held in
    full), and where its memory fits but not the rest (a guest asking for a class of page
    sizes then keeps the size chosen there for the cells tried after, as in Nova)."""
    columns = table.columns
    # Rows covering much of the table: computed over all of it (slices, no copies), the
    # answers picked at the end.
    whole = len(rows) * 4 > table.size
    pick = slice(0, table.size) if whole else rows

    def col(name):
        return columns[name][pick]

    # As 64-bit integers: the 32-bit columns are widened, never the values narrowed.
    memory, shared, pinned = (np.int64(value) for value in guest[:3])
    policy, thread = guest[3:5]
    ncells = col('numa_ncells')
    # A host is held in full or not at all (numa_ncells UNKNOWN): its cells are known.
    known = np.arange(numa_columns.MAX_CELLS) < ncells[:, None]
    memory_fits = _memory_fits(col, guest, table.page_sizes)
    fits = memory_fits.copy()
    if policy in _PINNED:
        capacity = col('numa_' + _CAPACITY[thread])
        fits &= (pinned <= col('numa_pcpus')) & (pinned <= col('numa_free_pcpus')) & (
            capacity >= pinned)
        known &= col('numa_free_threads') >= 0  # no sibling information: the fit raises
    if policy in _FLOATING:
        cpu_ratio = col('cpu_allocation_ratio')[:, None]
        ram_ratio = col('ram_allocation_ratio')[:, None]
        cpus = col('numa_cpus')
        fits &= (shared <= cpus) & (col('numa_cpu_usage') + shared <= cpus * cpu_ratio) & (
            col('numa_memory_usage') + memory <= col('numa_memory') * ram_ratio)
        known &= ~(np.isnan(cpu_ratio) | np.isnan(ram_ratio))
    fits &= known
    spoils = memory_fits & ~fits
    if whole:
        return fits[rows], known[rows], spoils[rows]
    return fits, known, spoils


class PciNeeds:
    """One request's PCI needs by pool kind: the kinds its specs match, and among them those
    every per-pool stage keeps (``PciDeviceStats.pool_serves``)."""

    def __init__(self, table, request):
        self.count = request.count
        self.policy = (request.numa_policy if 'numa_policy' in request else None) or None
        kinds = table.pool_kinds
        probe = pci_stats_mod.PciDeviceStats(None)
        served = [probe.pool_serves(pool, request) for pool in kinds.pools]
        self.matching = [kind for kind, (matches, _usable) in enumerate(served) if matches]
        self.usable = np.array([served[kind][1] for kind in self.matching], dtype=bool)
        self.nodes = np.array([_NO_NODE if kinds.nodes[kind] is None else kinds.nodes[kind]
                               for kind in self.matching], dtype=np.int64)

    def counts(self, table, rows):
        """Free devices of the matching kinds at ``rows``, shape (rows, matching kinds)."""
        return table.columns['pci_counts'][rows[:, None], self.matching]

    def total(self, counts, usable=True, where=None):
        """Devices per row: the usable ones (all matching with ``usable`` False), of the
        kinds ``where`` selects (all by default)."""
        selected = self.usable if usable else np.ones(len(self.matching), dtype=bool)
        if where is not None:
            selected = selected & where
        return counts @ selected.astype(np.int64)

    def by_cell(self, counts, cell_ids, usable):
        """Devices per row and host cell (on that cell's node), shape of ``cell_ids``."""
        result = np.zeros(cell_ids.shape, dtype=np.int64)
        for index, node in enumerate(self.nodes.tolist()):
            if not usable or self.usable[index]:
                result += counts[:, index:index + 1] * (cell_ids == node)
        return result

    def off_node(self, counts, usable):
        """Devices per row reported on no NUMA node, shape (rows, 1)."""
        return self.total(counts, usable, where=self.nodes == _NO_NODE)[:, None]


def simple_pci_request(requests):
    """The one PCI request the columns can answer for, or None."""
    if not requests or len(requests) != 1:
        return None
    request = requests[0]
    if request.count < 1 or not request.spec or request.spec[0].get('rp_uuids'):
        return None
    policy = (request.numa_policy if 'numa_policy' in request else None) or None
    return request if policy in _PCI_POLICIES else None


def pci_decision(table, rows, requests):
    """PciPassthroughFilter's answers (no NUMA cells), or None when left to each host."""
    if any(request.count < 1 for request in requests):
        return None
    known = table.columns['pci_kinds_known'][rows] > 0
    fails = np.zeros(len(rows), dtype=bool)
    for request in requests:
        needs = PciNeeds(table, request)
        # Too few usable devices for one request alone: too few for them all.
        fails |= needs.total(needs.counts(table, rows)) < request.count
    single = simple_pci_request(requests)
    open_ = ~known | (~fails if single is None else False)
    return Decision(~fails, open_)


def _pci_on_cells(needs, counts, cell_ids):
    """Where the request's devices suit a guest cell placed on each host cell (the NUMA
    stage of ``_filter_pools`` then the usable pools), shape (rows, MAX_CELLS)."""
    wanted = needs.count
    on_matching = needs.by_cell(counts, cell_ids, usable=False)
    on_usable = needs.by_cell(counts, cell_ids, usable=True)
    if needs.policy == _POLICY.REQUIRED:
        return on_usable >= wanted
    near = on_usable + needs.off_node(counts, usable=True)
    if needs.policy == _POLICY.PREFERRED:
        anywhere = needs.total(counts)[:, None]
        wider = np.where(on_matching + needs.off_node(counts, usable=False) >= wanted,
                         near >= wanted, anywhere >= wanted)
    else:
        wider = near >= wanted
    return np.where(on_matching >= wanted, on_usable >= wanted, wider)


def _pci_fails(table, rows, needs):
    """Where some request of one device or more cannot be met, whatever the cells: no free
    device at all, or too few usable ones of the kinds it matches (``needs``: PciNeeds)."""
    columns = table.columns
    known = columns['pci_kinds_known'][rows] > 0
    fails = known & (columns['pci_free'][rows] == 0)
    sub = np.flatnonzero(known & ~fails)
    for each in needs:
        fails[sub] |= each.total(each.counts(table, rows[sub])) < each.count
    return fails


def _pci_cells(table, rows, fits, needs):
    """``(positions, passes)`` for the hosts with free devices: some host cell takes the
    (one) guest cell and has the devices the PCI request's affinity policy allows."""
    columns = table.columns
    sub = np.flatnonzero((columns['pci_kinds_known'][rows] > 0) &
                         (columns['pci_free'][rows] > 0))
    suits = _pci_on_cells(needs, needs.counts(table, rows[sub]),
                          columns['numa_cell_id'][rows[sub]])
    return sub, (fits[sub] & suits).any(axis=1)


def numa_decision(table, rows, topology, pci_requests=None, network_metadata=None):
    """NUMATopologyFilter's fit answers for ``rows`` (hosts with a NUMA topology) and the
    instance ``topology``, or None when the columns cannot answer at all."""
    if topology.emulator_threads_isolated:
        return None
    guests = [_guest_cell(cell) for cell in topology.cells]
    if not guests or None in guests or len(set(guests)) != 1:
        return None
    guest, wanted = guests[0], len(guests)
    fits, known, spoils = cell_fits(table, rows, guest)
    ncells = table.columns['numa_ncells'][rows]
    valid = np.arange(numa_columns.MAX_CELLS) < ncells[:, None]
    unknown = (valid & ~known).sum(axis=1)
    fitting = fits.sum(axis=1)
    fails = (fitting + unknown < wanted) & (ncells >= 0)
    passes = (fitting >= wanted) & (ncells >= 0)
    if guest[5] in _CLASSES:
        # The first cell whose memory fits fixes the page size: it must take the guest.
        passes &= (unknown == 0) & ~(spoils & valid).any(axis=1)
    if pci_requests:
        passes = np.zeros(len(rows), dtype=bool)
        if all(request.count >= 1 for request in pci_requests):
            needs = [PciNeeds(table, request) for request in pci_requests]
            fails |= _pci_fails(table, rows, needs)
            if wanted == 1 and guest[5] not in _CLASSES and simple_pci_request(pci_requests):
                sub, sub_passes = _pci_cells(table, rows, fits, needs[0])
                readable = ncells[sub] >= 0
                passes[sub] = sub_passes & readable
                fails[sub] |= ~sub_passes & (unknown[sub] == 0) & readable
    if network_metadata or (wanted > 1 and (pci_requests or guest[5] in _CLASSES)):
        passes = np.zeros(len(rows), dtype=bool)  # what else the fit checks: left open
    return Decision(passes & ~fails, ~(passes | fails))
