"""A column-wise necessary condition of the NUMA fit: enough free dedicated CPUs per cell.

Each row of the host-state table keeps the free dedicated CPUs (``avail_pcpus``) of its
host's NUMA cells, most first, in :data:`FREE_PCPU_COLUMNS` (written whenever a host state's
``numa_topology`` is assigned: topologies are replaced, never changed in place). An instance
of ``k`` guest cells pinning ``n`` CPUs each needs ``k`` distinct host cells with ``n`` free
dedicated CPUs (``numa_fit_instance_to_host``: a permutation of host cells, and ``_fit_cell``
refusing a pinned guest cell on a host cell with fewer), so a host whose ``k``-th freest
cell has fewer than ``n`` cannot take it: :func:`may_fit` rules such hosts out with one
array comparison, before the per-host fit.

Only guest cells that all pin the same number of CPUs are bounded: the fit remembers which
(host cell, guest cell id) pairs fitted, and a guest cell may be taken on the strength of
another's fit (Nova's behaviour, kept); with equal counts that changes nothing here.
"""
import numpy as np

from minisched.objects import fields

#: Columns of the free dedicated CPUs of a host's cells, freest first (0 past its last cell).
FREE_PCPU_COLUMNS = tuple('numa_free_pcpus_%d' % rank for rank in range(1, 5))
#: Written for a topology that cannot be read: never rules a host out.
UNKNOWN = np.iinfo(np.int64).max

_PINNED = (fields.CPUAllocationPolicy.DEDICATED, fields.CPUAllocationPolicy.MIXED)


def free_pcpus(topology):
    """The values of :data:`FREE_PCPU_COLUMNS` for a host's ``numa_topology`` (or None)."""
    if not topology:
        return (0,) * len(FREE_PCPU_COLUMNS)
    try:
        free = sorted((cell.avail_pcpus for cell in topology.cells), reverse=True)
    except (AttributeError, TypeError):
        return (UNKNOWN,) * len(FREE_PCPU_COLUMNS)
    free += [0] * len(FREE_PCPU_COLUMNS)
    return tuple(free[:len(FREE_PCPU_COLUMNS)])


def may_fit(table, rows, instance_topology):
    """Bool array over ``rows``: False where ``instance_topology``'s pinned CPUs cannot fit.

    Never False for a host ``numa_fit_instance_to_host`` would accept; True where the
    condition does not apply (no pinned CPUs, guest cells pinning different numbers of CPUs,
    more guest cells than columns).
    """
    cells = instance_topology.cells
    counts = {len(cell.pcpuset) if cell.cpu_policy in _PINNED else 0 for cell in cells}
    if len(counts) != 1 or len(cells) > len(FREE_PCPU_COLUMNS):
        return np.ones(len(rows), dtype=bool)
    needed, = counts
    return table.columns[FREE_PCPU_COLUMNS[len(cells) - 1]][rows] >= needed
