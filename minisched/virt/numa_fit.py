"""Whether and how an instance's NUMA topology fits on a host's, and what it then uses there.

Nova's rules (``nova/virt/hardware.py``), reached through :mod:`minisched.virt.hardware`:

- host cells are tried in a set order (spread or pack by free memory, then by shared CPU
  usage or free dedicated CPUs, then by free PCI devices), every permutation in turn, guest
  cell *i* on the *i*-th host cell of the permutation;
- a guest cell fits on a host cell by memory (in pages of the size asked for; without one,
  in the smallest pages, overcommit allowed for shared CPUs only), by CPUs (shared ones
  against the host's shared CPUs and ``cpu_allocation_ratio``, dedicated ones pinned to free
  host CPUs per the thread policy, plus one host CPU for isolated emulator threads on the
  first guest cell), and by RAM against ``ram_allocation_ratio`` for shared CPUs;
- a permutation then needs the PCI requests to fit (``pci_stats.support_requests`` given the
  chosen guest cells) and the requested networks' NUMA affinity (``limits.network_metadata``).

Unlike Nova, the instance topology passed in is never modified: Nova writes the chosen host
cell, page size and pinning onto the caller's guest cells as it tries permutations (and its
later attempts read them back), which is why its NUMATopologyFilter clones the whole request
spec for each host. Here the same writes go to a private record per guest cell, so the
answers are Nova's for the same input, rejections allocate nothing, and only a fitting
topology is built, as new objects of the input's classes.
"""
import collections
import copy
import itertools
import logging

from oslo_utils import units

from minisched import conf
from minisched.objects import fields

LOG = logging.getLogger(__name__)

#: ``InstanceNUMACell.pagesize`` values that name a class of page sizes, not a size.
MEMPAGES_SMALL = -1
MEMPAGES_LARGE = -2
MEMPAGES_ANY = -3

_DEDICATED = fields.CPUAllocationPolicy.DEDICATED
_SHARED = fields.CPUAllocationPolicy.SHARED
_MIXED = fields.CPUAllocationPolicy.MIXED
#: Policies with pinned guest CPUs, and policies with floating (shared) ones.
_PINNED = (_DEDICATED, _MIXED)
_FLOATING = (_SHARED, _MIXED, None)
_ISOLATE = fields.CPUThreadAllocationPolicy.ISOLATE
_REQUIRE = fields.CPUThreadAllocationPolicy.REQUIRE


def _packing_host_numa_cells():
    """``[compute] packing_host_numa_cells_allocation_strategy``: fill the busiest host cells
    first rather than the freest (Nova's option, read from the global CONF as Nova's
    ``hardware`` does: the scheduler's filter and the compute's claim share it)."""
    return conf.CONF.compute.packing_host_numa_cells_allocation_strategy


# -- memory ----------------------------------------------------------------------------------

def _fits_in_pages(host_cell, pagesize, memory_kb, use_free=True):
    """``NUMACell.can_fit_pagesize``, with False for a page size the cell lacks (Nova raises
    MemoryPageSizeNotSupported there and treats it as no fit)."""
    for pages in host_cell.mempages:
        if pages.size_kb == pagesize:
            avail_kb = pages.free_kb if use_free else pages.total_kb
            return memory_kb <= avail_kb and memory_kb % pages.size_kb == 0
    return False


def _requested_pagesize_fitting(host_cell, requested, memory_mb):
    """The page size, among those ``requested`` allows, whose free pages hold the guest
    cell's memory (the largest such), or None."""
    sizes = sorted((pages.size_kb for pages in host_cell.mempages), reverse=True)
    if requested == MEMPAGES_SMALL:
        candidates = sizes[-1:]
    elif requested == MEMPAGES_LARGE:
        candidates = sizes[:-1]
    elif requested == MEMPAGES_ANY:
        candidates = sizes
    else:
        candidates = [requested]
    memory_kb = memory_mb * units.Ki
    for size in candidates:
        if _fits_in_pages(host_cell, size, memory_kb):
            return size
    return None


def _smallest_pagesize(host_cell):
    # IndexError for a cell without pages, as in Nova: callers check first.
    return sorted(pages.size_kb for pages in host_cell.mempages)[0]


def _memory_fits(host_cell, instance_cell, state):
    """Whether the guest cell's memory fits, recording a chosen page size on ``state``."""
    if state.pagesize:
        pagesize = _requested_pagesize_fitting(host_cell, state.pagesize, instance_cell.memory)
        if not pagesize:
            return False
        state.set_pagesize(pagesize)
        return True
    pinned = instance_cell.cpu_policy in _PINNED
    if host_cell.mempages:
        # Small pages may be overcommitted, except under pinned CPUs (a legacy rule).
        return _fits_in_pages(host_cell, _smallest_pagesize(host_cell),
                              instance_cell.memory * units.Ki, use_free=pinned)
    # No page information: never more than the cell has (all of it, or its free memory
    # under pinned CPUs); sharing with others is the limits' business.
    available = host_cell.avail_memory if pinned else host_cell.memory
    return available >= instance_cell.memory


# -- pinning ---------------------------------------------------------------------------------

def _pin_to_cores(threads_no, cores, guest_cpus):
    """Guest CPUs (in order) paired with the first ``threads_no`` free threads of each of
    ``cores`` in turn, or None when they hold too few."""
    if threads_no * len(cores) < len(guest_cpus):
        return None
    threads = itertools.chain.from_iterable(list(core)[:threads_no] for core in cores)
    return list(zip(sorted(guest_cpus), threads))


def _reserve_for_emulator(cores, pinning, num_reserved=0, whole_cores=False):
    """The ``num_reserved`` host CPUs left for emulator threads once ``pinning`` is applied
    to ``cores`` (whole cores taken under ``isolate``), or None."""
    if not pinning:
        return None
    reserved = None
    usable = [list(core) for core in cores]
    if num_reserved:
        for _vcpu, pcpu in pinning:
            # Removing from the list being iterated skips the next core, as Nova's loop
            # does; kept so that the same CPUs are reserved.
            for core in usable:
                if pcpu in core:
                    if whole_cores:
                        usable.remove(core)
                    else:
                        core.remove(pcpu)
        reserved = set(list(itertools.chain.from_iterable(usable))[:num_reserved])
    return reserved or None


def _pack_onto_cores(host_cell, thread_policy, guest_cpus, num_reserved):
    """``(pinning pairs, reserved host CPUs)`` for the guest's dedicated CPUs on the host
    cell's free cores under ``thread_policy``, or None.

    Siblings are preferred, fuller sets first (even use of cores); ``require`` accepts
    siblings only, ``isolate`` one thread per wholly free core, ``prefer`` falls back to
    any free threads.
    """
    threads_per_core = max(map(len, host_cell.siblings)) or 1
    # threads wanted per core -> the cores with at least that many free threads
    cores_by_free_threads = collections.defaultdict(list)
    for core in host_cell.free_siblings:
        for threads_no in range(1, len(core) + 1):
            cores_by_free_threads[threads_no].append(core)

    pinning = reserved = None
    threads_no = 1
    if thread_policy == _ISOLATE:
        if threads_per_core not in cores_by_free_threads:
            return None  # no wholly free core
        # With SMT, ``isolate`` only works on hosts configured the legacy way
        # (vcpu_pin_set: the same CPUs shared and dedicated); Nova's bug #1889633.
        if threads_per_core != 1 and host_cell.pcpuset != host_cell.cpuset:
            LOG.debug('Host cell %s has SMT but no legacy CPU configuration: the isolate '
                      'thread policy cannot be met', host_cell.id)
            return None
        pinning = _pin_to_cores(1, cores_by_free_threads[threads_per_core], guest_cpus)
        reserved = _reserve_for_emulator(cores_by_free_threads[1], pinning, num_reserved,
                                         whole_cores=True)
        if not pinning or (num_reserved and not reserved):
            pinning = reserved = None
    else:
        if thread_policy == _REQUIRE and threads_per_core <= 1:
            return None  # no SMT at all
        for threads_no, cores in sorted(cores_by_free_threads.items(), reverse=True):
            if thread_policy == _REQUIRE and threads_no <= 1:
                continue
            pinning = _pin_to_cores(threads_no, cores, guest_cpus)
            reserved = _reserve_for_emulator(cores_by_free_threads[1], pinning, num_reserved)
            if pinning is not None and not (num_reserved and not reserved):
                break
        if thread_policy != _REQUIRE and not pinning:
            # Any free thread will do: each as a core of its own.
            cores = [{cpu} for cpu in itertools.chain.from_iterable(cores_by_free_threads[1])]
            pinning = _pin_to_cores(threads_no, cores, guest_cpus)
            reserved = _reserve_for_emulator(cores, pinning, num_reserved)

    if pinning is None or (num_reserved and not reserved):
        return None
    return pinning, reserved


# -- one guest cell on one host cell ---------------------------------------------------------

class _GuestCellState:
    """What fitting has written for one guest cell so far: host cell id, page size, pinning
    and emulator CPUs. Nova writes these onto the guest cell itself and reads them back in
    later attempts (the id keys its caches, the page size narrows later page choices); they
    are kept here instead, the guest cell left as it was."""

    __slots__ = ('cell', '_id', 'pagesize', 'changed')

    def __init__(self, cell):
        self.cell = cell
        self._id = None
        self.pagesize = cell.pagesize if 'pagesize' in cell else None
        self.changed = {}  # field name -> value, for the fitted copy

    @property
    def id(self):
        # Read on first use, as Nova does: a cell without an id fails only if it is reached.
        if self._id is None:
            self._id = self.cell.id
        return self._id

    @id.setter
    def id(self, value):
        self._id = value
        self.changed['id'] = value

    def set_pagesize(self, pagesize):
        self.pagesize = self.changed['pagesize'] = pagesize

    def pin(self, pairs, reserved):
        if pairs:
            pinning = self.changed.get('cpu_pinning')
            if 'cpu_pinning' not in self.changed:
                pinning = self.cell.cpu_pinning
            pinning = dict(pinning or {})
            pcpuset = self.cell.pcpuset
            pinning.update((vcpu, pcpu) for vcpu, pcpu in pairs if vcpu in pcpuset)
            self.changed['cpu_pinning'] = pinning
        self.changed['cpuset_reserved'] = reserved

    def fitted_cell(self):
        """A new guest cell of the input's class: the input's fields plus the writes.

        A shallow copy (four times cheaper than building and coercing every field again):
        the unchanged values are shared with the input, as Nova's result shares them by
        being the input itself. The change record is the input's, copied first so that
        the writes below do not land in the input's.
        """
        fitted = copy.copy(self.cell)
        fitted._changed_fields = set(self.cell._changed_fields)
        for name, value in self.changed.items():
            setattr(fitted, name, value)
        return fitted


def _fit_cell(host_cell, instance_cell, state, limits=None, num_reserved=0):
    """Whether the guest cell fits on the host cell (Nova's ``_numa_fit_instance_cell``),
    recording on ``state`` what Nova would write on the guest cell, even on a late failure.
    """
    if not _memory_fits(host_cell, instance_cell, state):
        return False
    policy = instance_cell.cpu_policy
    # A guest cell never overcommits against itself: its CPUs must exist in the host cell.
    if policy in _PINNED and len(instance_cell.pcpuset) + num_reserved > len(host_cell.pcpuset):
        return False
    if policy in _FLOATING and len(instance_cell.cpuset) > len(host_cell.cpuset):
        return False
    if policy in _PINNED:
        if len(instance_cell.pcpuset) + num_reserved > host_cell.avail_pcpus:
            return False
        packed = _pack_onto_cores(host_cell, instance_cell.cpu_thread_policy,
                                  instance_cell.pcpuset, num_reserved)
        if packed is None:
            return False
        state.pin(*packed)
        state.id = host_cell.id
        if not instance_cell:  # Nova's truth test: a cell of no CPUs (len 0) fails here
            return False
    if policy in _FLOATING and limits:
        cpu_limit = len(host_cell.cpuset) * limits.cpu_allocation_ratio
        if host_cell.cpu_usage + len(instance_cell.cpuset) > cpu_limit:
            return False
        ram_limit = host_cell.memory * limits.ram_allocation_ratio
        if host_cell.memory_usage + instance_cell.memory > ram_limit:
            return False
    state.id = host_cell.id
    return True


# -- the whole topology ----------------------------------------------------------------------

def _ordered_host_cells(host_topology, instance_topology, pci_requests, pci_stats):
    """The host cells in the order they are tried (only sorted when some will be left out).
    """
    host_cells = host_topology.cells
    if len(host_topology) == len(instance_topology):
        return host_cells
    pack = _packing_host_numa_cells()
    # Stable sorts, the last key deciding first: PCI, then CPUs, then memory.
    host_cells = sorted(host_cells, reverse=not pack, key=lambda cell: cell.avail_memory)
    if instance_topology.cells[0].cpu_policy in (None, _SHARED):
        host_cells = sorted(host_cells, reverse=pack, key=lambda cell: cell.cpu_usage)
    else:
        host_cells = sorted(host_cells, reverse=not pack,
                            key=lambda cell: len(cell.free_pcpus))
    if pci_stats:
        devices = collections.Counter()
        for pool in pci_stats.pools:
            devices[pool['numa_node']] += pool['count']
        # Cells with devices first when devices are requested, last otherwise.
        host_cells = sorted(host_cells, reverse=bool(pci_requests),
                            key=lambda cell: devices.get(cell.id, 0))
    return host_cells


def _numa_cells_support_network_metadata(host_topology, chosen_host_cells, network_metadata):
    """Whether the chosen host cells respect the NUMA affinity of the requested networks:
    no requested physnet, nor tunneled networks, may be local only to a host cell left out.
    """
    if not network_metadata:
        return True
    physnets = set(network_metadata.physnets) if 'physnets' in network_metadata else set()
    tunneled = network_metadata.tunneled if 'tunneled' in network_metadata else False
    if physnets:
        for cell in chosen_host_cells:
            if 'network_metadata' in cell:
                physnets -= cell.network_metadata.physnets
        # What is left is local to no chosen cell: fine unless local to another one.
        for cell in host_topology.cells:
            if 'network_metadata' in cell and physnets & cell.network_metadata.physnets:
                LOG.debug('Physnets %s are local to a host NUMA cell not chosen',
                          physnets & cell.network_metadata.physnets)
                return False
    if tunneled:
        for cell in chosen_host_cells:
            if 'network_metadata' in cell and cell.network_metadata.tunneled:
                return True
        for cell in host_topology.cells:
            if 'network_metadata' in cell and cell.network_metadata.tunneled:
                LOG.debug('Tunneled networks are local to a host NUMA cell not chosen')
                return False
    return True


def numa_fit_instance_to_host(host_topology, instance_topology, provider_mapping=None,
                              limits=None, pci_requests=None, pci_stats=None):
    """The instance topology as placed on the host, or None when it does not fit.

    The result is a new ``InstanceNUMATopology`` (of the input's class) whose cells carry
    the host cell ids, the page sizes chosen and the CPU pinning; ``instance_topology``
    itself is left unchanged.

    :param host_topology: the host's ``NUMATopology``
    :param instance_topology: the ``InstanceNUMATopology`` to place
    :param provider_mapping: passed to ``pci_stats.support_requests`` (None: the PCI
        requests carry their own provider mapping)
    :param limits: ``NUMATopologyLimits`` (overcommit ratios and network affinity), or None
        for no overcommit checks
    :param pci_requests: the instance's ``InstancePCIRequest`` list, or None
    :param pci_stats: the host's ``PciDeviceStats``, or None
    """
    if not (host_topology and instance_topology):
        return None
    if len(host_topology) < len(instance_topology):
        LOG.debug('Too few host NUMA cells: %d for %d guest cells', len(host_topology),
                  len(instance_topology))
        return None

    emulator_threads_policy = None
    if 'emulator_threads_policy' in instance_topology:
        emulator_threads_policy = instance_topology.emulator_threads_policy
    network_metadata = None
    if limits and 'network_metadata' in limits:
        network_metadata = limits.network_metadata
    # The first guest cell's host cell also runs isolated emulator threads.
    first_cell_reserved = 1 if instance_topology.emulator_threads_isolated else 0

    guest_cells = instance_topology.cells
    states = [_GuestCellState(cell) for cell in guest_cells]
    host_cells = _ordered_host_cells(host_topology, instance_topology, pci_requests,
                                     pci_stats)
    # (host cell id, guest cell id) pairs known not to fit, and known to fit. The guest
    # cell id is the one last written for it, as in Nova.
    not_fit, fit = set(), set()
    for permutation in itertools.permutations(host_cells, len(guest_cells)):
        chosen = []
        for host_cell, guest_cell, state in zip(permutation, guest_cells, states):
            pair = (host_cell.id, state.id)
            if pair in not_fit:
                break
            if pair not in fit:
                reserved = 0 if chosen else first_cell_reserved
                if not _fit_cell(host_cell, guest_cell, state, limits, reserved):
                    not_fit.add(pair)
                    break
                fit.add(pair)
            state.id = host_cell.id
            chosen.append(host_cell)
        if len(chosen) != len(permutation):
            continue

        fitted_cells = [state.fitted_cell() for state in states]
        if pci_requests and pci_stats and not pci_stats.support_requests(
                pci_requests, provider_mapping, fitted_cells):
            continue
        if network_metadata and not _numa_cells_support_network_metadata(
                host_topology, chosen, network_metadata):
            continue
        return type(instance_topology)(cells=fitted_cells,
                                       emulator_threads_policy=emulator_threads_policy)
    return None


# -- usage -----------------------------------------------------------------------------------

def _pages_after(host_cell, instance_cell, sign):
    """The host cell's page list with the guest cell's pages added (``sign`` 1) or removed
    (-1): its page size, else the host's smallest."""
    if 'pagesize' in instance_cell and instance_cell.pagesize:
        pagesize = instance_cell.pagesize
    else:
        pagesize = _smallest_pagesize(host_cell)
    result = []
    for pages in host_cell.mempages:
        if pages.size_kb != pagesize:
            result.append(pages)
            continue
        # A float, as in Nova; the integer field truncates it.
        used = max(0, pages.used + instance_cell.memory * units.Ki / pages.size_kb * sign)
        result.append(type(pages)(size_kb=pages.size_kb, total=pages.total, used=used,
                                  reserved=pages.reserved if 'reserved' in pages else 0))
    return result


def numa_usage_from_instance_numa(host_topology, instance_topology, free=False):
    """The host topology with the placed instance's usage added, or removed with
    ``free=True``: memory and pages, shared CPU counts, and pinned CPUs (whole cores under
    the ``isolate`` thread policy). A new topology of the input's class; the input is left
    unchanged.

    :raises: CPUPinningInvalid / CPUUnpinningInvalid (and the *Unknown variants) when the
        pinned CPUs are taken already / were not taken
    """
    if not host_topology or not instance_topology:
        return host_topology
    sign = -1 if free else 1
    cells = []
    for host_cell in host_topology.cells:
        memory_usage = host_cell.memory_usage
        cpu_usage = host_cell.cpu_usage
        new_cell = type(host_cell)(
            id=host_cell.id, cpuset=host_cell.cpuset, pcpuset=host_cell.pcpuset,
            memory=host_cell.memory, socket=host_cell.socket, cpu_usage=0, memory_usage=0,
            mempages=host_cell.mempages, pinned_cpus=host_cell.pinned_cpus,
            siblings=host_cell.siblings)
        if 'network_metadata' in host_cell:
            new_cell.network_metadata = host_cell.network_metadata

        for instance_cell in instance_topology.cells:
            if instance_cell.id != host_cell.id:
                continue
            new_cell.mempages = _pages_after(new_cell, instance_cell, sign)
            memory_usage += sign * instance_cell.memory
            cpu_usage += sign * len(instance_cell.cpuset)
            if instance_cell.cpu_policy in (None, _SHARED):
                continue
            pinned = set(instance_cell.cpu_pinning.values()) if instance_cell.cpu_pinning \
                else set()
            if instance_cell.cpuset_reserved:
                pinned |= instance_cell.cpuset_reserved
            whole_cores = instance_cell.cpu_thread_policy == _ISOLATE
            if free:
                (new_cell.unpin_cpus_with_siblings if whole_cores
                 else new_cell.unpin_cpus)(pinned)
            else:
                (new_cell.pin_cpus_with_siblings if whole_cores else new_cell.pin_cpus)(pinned)

        new_cell.memory_usage = max(0, memory_usage)
        new_cell.cpu_usage = max(0, cpu_usage)
        cells.append(new_cell)
    return type(host_topology)(cells=cells)
