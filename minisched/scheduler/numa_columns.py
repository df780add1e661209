"""What the host-state table keeps of each host's NUMA cells and PCI pools, column-wise.

Per host (row) and NUMA cell (up to :data:`MAX_CELLS`, in the topology's order): the
cell's id, its shared and dedicated CPUs and their usage, its memory and memory usage, its
pages (up to three sizes, smallest first: size and free KiB, and the smallest pages' total)
and what its free sibling threads allow a pinned guest cell under each CPU thread policy.
Per host: the number of cells (:data:`UNKNOWN` when the host cannot be held so: too many
cells or page sizes, a page size twice, repeated cell ids), whether it has SMT siblings,
and per PCI device pool kind (every key of a pool but its count, registered table-wide up
to :data:`MAX_POOL_KINDS`) the free devices, with their sum.

The values are written whenever a host state's ``numa_topology`` or ``pci_stats`` is
assigned (topologies are replaced, never changed in place; a consumption and a give-back
assign the changed ``pci_stats`` again), so they are never older than the host state.
:mod:`minisched.scheduler.numa_rules` reads them to decide most hosts of a request at once.
"""
import numpy as np

from minisched.pci import stats as pci_stats_mod

#: Cells per host kept in columns; a host with more is left to the per-host fit.
MAX_CELLS = 4
#: Page sizes per cell kept in columns.
MAX_PAGE_SIZES = 3
#: Pool kinds (identities) the table registers; a host with another is left to the
#: per-host check.
MAX_POOL_KINDS = 16
#: ``numa_ncells`` of a host whose topology cannot be kept in columns.
UNKNOWN = -1

#: Per cell: ``numa_<field>`` columns of shape (rows, MAX_CELLS).
CELL_FIELDS = ('cell_id', 'cpus', 'pcpus', 'cpu_usage', 'memory', 'memory_usage', 'free_pcpus',
               'free_threads', 'require_capacity', 'isolate_capacity', 'page0_total_kb') + tuple(
    'page%d_%s' % (rank, name) for rank in range(MAX_PAGE_SIZES)
    for name in ('size', 'free_kb'))
#: Per host: one value a row.
HOST_COLUMNS = ('numa_ncells', 'numa_threads', 'pci_kinds_known', 'pci_free')
#: Every 2-D column: the cells', then the free devices per pool kind, with their widths and
#: types (32 bits but for page memory in KiB: a 2 TiB cell has more).
WIDE_COLUMNS = {('numa_' + name): (MAX_CELLS, np.int64 if name.endswith('_kb') else np.int32)
                for name in CELL_FIELDS}
WIDE_COLUMNS['pci_counts'] = (MAX_POOL_KINDS, np.int32)

#: Attribute of a NUMATopology where its column values are kept (hosts reporting the same
#: text share one parsed topology, hence one reading).
_CACHED = '_minisched_cell_columns'


def _pack_capacities(cell):
    """``(free threads, require capacity, isolate capacity)`` of a host cell: how many
    dedicated guest CPUs ``numa_fit``'s packing can pin there under the ``prefer`` (or no),
    ``require`` and ``isolate`` thread policies, without emulator CPUs; -1 for the first
    when the cell has no sibling information (the fit cannot pin there at all)."""
    if not cell.siblings:
        return -1, -1, 0
    threads_per_core = max(map(len, cell.siblings)) or 1
    free = [len(core) for core in cell.free_siblings]
    # require: some size t >= 2 of free thread groups, t threads on each core having them.
    require = max([t * sum(1 for n in free if n >= t) for t in range(2, max(free + [0]) + 1)
                   if any(n >= t for n in free)] or [-1])
    if threads_per_core <= 1:
        require = -1
    isolate = sum(1 for n in free if n >= threads_per_core)
    if threads_per_core != 1 and cell.pcpuset != cell.cpuset:
        isolate = 0  # Nova's bug #1889633: isolate needs the legacy CPU configuration
    return sum(free), require, isolate


def _pages(cell):
    """``[(size, total KiB, free KiB)]`` smallest first, or None when sizes repeat or are
    too many."""
    pages = sorted((p.size_kb, p.total_kb, p.free_kb) for p in (cell.mempages or ()))
    sizes = [size for size, _total, _free in pages]
    if len(set(sizes)) != len(sizes) or len(pages) > MAX_PAGE_SIZES:
        return None
    return pages + [(0, 0, 0)] * (MAX_PAGE_SIZES - len(pages))


def _cell_values(cell):
    pages = _pages(cell)
    if pages is None:
        return None
    free_threads, require, isolate = _pack_capacities(cell)
    # Only the smallest pages' total counts: the fit reads it for guests asking no size.
    values = [cell.id, len(cell.cpuset), len(cell.pcpuset), cell.cpu_usage, cell.memory,
              cell.memory_usage, cell.avail_pcpus, free_threads, require, isolate,
              pages[0][1]]
    for size, _total_kb, free_kb in pages:
        values.extend((size, free_kb))
    return values


def topology_values(topology):
    """``(cells, has threads, [per cell values] or None)`` of a host's ``numa_topology``."""
    if not topology:
        return 0, 0, None
    cached = getattr(topology, _CACHED, None)
    if cached is not None:
        return cached
    try:
        cells = topology.cells
        rows = [_cell_values(cell) for cell in cells]
        threads = int(topology.has_threads)
    except (AttributeError, TypeError, ValueError):
        rows, threads = [None], 0
    if (len(rows) > MAX_CELLS or any(row is None for row in rows) or
            len({row[0] for row in rows}) != len(rows)):  # the fit's memo keys on cell ids
        values = UNKNOWN, threads, None
    else:
        values = len(rows), threads, np.array(rows, dtype=np.int64).T
    try:
        setattr(topology, _CACHED, values)
    except AttributeError:
        pass
    return values


def write_topology(table, row, topology):
    """Write the columns of ``row`` for its host's new ``topology``."""
    columns = table.columns
    ncells, threads, values = topology_values(topology)
    columns['numa_ncells'][row] = ncells
    columns['numa_threads'][row] = threads
    for index, name in enumerate(CELL_FIELDS):
        column = columns['numa_' + name]
        column[row] = 0
        if values is not None:
            column[row, :values.shape[1]] = values[index]
    if values is not None:
        for rank in range(MAX_PAGE_SIZES):
            table.page_sizes.update(values[CELL_FIELDS.index('page%d_size' % rank)].tolist())


class PoolKinds:
    """The pool kinds of one table: identity -> index, and a representative pool of each
    (its count left out) whose keys decide which requests it serves."""

    def __init__(self):
        self.index = {}
        self.pools = []
        #: NUMA node of each kind: its ``numa_node`` (None: reported on no node).
        self.nodes = []

    def kind_of(self, pool):
        """The pool's index, registering it; None when the table holds too many kinds or
        its NUMA node is not a number or None."""
        identity = pci_stats_mod.pool_identity(pool)
        found = self.index.get(identity)
        if found is not None or len(self.pools) >= MAX_POOL_KINDS:
            return found
        node = pool.get('numa_node')
        if node is not None and (type(node) is not int):
            return None
        found = self.index[identity] = len(self.pools)
        self.pools.append({key: value for key, value in pool.items()
                           if key not in ('count', 'devices')})
        self.nodes.append(node)
        return found


def write_pools(table, row, pci_stats):
    """Write the columns of ``row`` for its host's ``pci_stats``: a PciDeviceStats, a
    stand-in without ``pools`` for none, or None (no stats at all: the NUMA fit then skips
    its PCI check, so such a host is left to the per-host fit)."""
    columns = table.columns
    counts = columns['pci_counts'][row]
    counts[:] = 0
    pools = getattr(pci_stats, 'pools', None) or ()
    known = int(pci_stats is not None)
    for pool in pools:
        kind = table.pool_kinds.kind_of(pool)
        if kind is None:
            known = 0
        else:
            counts[kind] += pool['count']
    columns['pci_kinds_known'][row] = known
    columns['pci_free'][row] = sum(pool['count'] for pool in pools)
