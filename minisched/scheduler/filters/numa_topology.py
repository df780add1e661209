"""Drop hosts whose NUMA cells cannot hold the request's instance NUMA topology.

Nova's NUMATopologyFilter: a request without a NUMA topology passes (unless it asks for
dedicated CPUs with the ``require`` thread policy and the host has no SMT siblings); one
with a topology fails on hosts reporting none, and elsewhere must fit
(:func:`minisched.virt.hardware.numa_fit_instance_to_host`, with the host's CPU and RAM
allocation ratios as ``NUMATopologyLimits``, its PCI devices for the requests' NUMA
affinity). A passing host gets those limits as ``limits['numa_topology']``, which the
compute's claim fits against again. On the Placement path the fit runs once per allocation
candidate of the host, with that candidate's provider mapping (which providers the PCI
devices come from), and the candidates that do not fit are dropped from
``host_state.allocation_candidates``; the host passes while one is left.
"""
import logging

import numpy as np

from minisched import objects
from minisched.objects import fields
from minisched.scheduler import filters
from minisched.scheduler import numa_bounds
from minisched.scheduler import numa_rules
from minisched.virt import hardware

LOG = logging.getLogger(__name__)


def _policies(spec_obj):
    """``(cpu policies, thread policies)`` the flavor and the image ask for."""
    flavor = spec_obj.flavor
    extra_specs = flavor.extra_specs if 'extra_specs' in flavor else {}
    image = spec_obj.image if 'image' in spec_obj else None
    props = image.properties if image is not None and 'properties' in image else None
    return ([extra_specs.get('hw:cpu_policy'), _prop(props, 'hw_cpu_policy')],
            [extra_specs.get('hw:cpu_thread_policy'), _prop(props, 'hw_cpu_thread_policy')])


def _prop(props, name):
    return props.get(name) if props is not None else None


def _requires_threads(spec_obj):
    """Dedicated CPUs with the ``require`` thread policy: only SMT hosts will do."""
    cpu_policies, thread_policies = _policies(spec_obj)
    return (fields.CPUAllocationPolicy.DEDICATED in cpu_policies and
            fields.CPUThreadAllocationPolicy.REQUIRE in thread_policies)


class _Request:
    """What the filter reads of one request, read once for all hosts.

    ``memo`` keeps the answer per (host topology object, ratios, devices per NUMA node) for
    requests without PCI requests: hosts reporting the same topology text share one parsed
    NUMATopology (see ``host_state``), and identical idle hosts are the common case of a real
    cluster, so the fit runs once for all of them. (The devices count because the fit tries
    host cells with devices last.) With PCI requests the answer depends on each host's
    devices themselves, and the fit runs per host. A provider mapping only matters to PCI
    requests, so the memo also answers for a host with a single allocation candidate; one
    with several is fitted once per candidate, as Nova does.
    """

    def __init__(self, spec_obj):
        self.topology = spec_obj.numa_topology if 'numa_topology' in spec_obj else None
        self.requires_threads = _requires_threads(spec_obj)
        pci_requests = spec_obj.pci_requests if 'pci_requests' in spec_obj else None
        self.pci_requests = pci_requests.requests if pci_requests else None
        self.network_metadata = (spec_obj.network_metadata if 'network_metadata' in spec_obj
                                 else None)
        self.memo = None if self.pci_requests else {}
        self.spec_obj = spec_obj


def _limits(ratios, request):
    """The ``NUMATopologyLimits`` a host with these (cpu, ram) ratios passes with."""
    limits = objects.NUMATopologyLimits(cpu_allocation_ratio=ratios[0],
                                        ram_allocation_ratio=ratios[1])
    if request.network_metadata:
        limits.network_metadata = request.network_metadata
    return limits


def _devices_by_node(pci_stats):
    pools = pci_stats.pools if pci_stats else ()
    return tuple(sorted((pool['numa_node'] is None, pool['numa_node'] or 0, pool['count'])
                        for pool in pools if pool['count']))


class NUMATopologyFilter(filters.BaseHostFilter, filters.CandidateFilterMixin):
    """Passes hosts whose NUMA topology can take the requested instance topology."""

    RUN_ON_REBUILD = False
    SETS_LIMITS = True

    def host_passes(self, host_state, spec_obj):
        passes, limits = self._fit(host_state, _Request(spec_obj))
        if limits is not None:
            host_state.limits['numa_topology'] = limits
        return passes

    def _fit(self, host_state, request):
        """``(passes, NUMATopologyLimits to record or None)``."""
        host_topology = host_state.numa_topology
        if host_topology and request.requires_threads and not host_topology.has_threads:
            LOG.debug("%(host_state)s fails CPU policy requirements: it has no SMT siblings "
                      "and the 'require' thread policy was asked for.",
                      {'host_state': host_state})
            return False, None
        if not request.topology:
            return True, None
        if not host_topology:
            LOG.debug('%(host)s, %(node)s fails NUMA topology requirements: the host reports '
                      'no NUMA topology and the instance asks for one.',
                      {'host': host_state.host, 'node': host_state.nodename})
            return False, None
        ratios = (host_state.cpu_allocation_ratio, host_state.ram_allocation_ratio)
        candidates = self.candidates_of(host_state, request.spec_obj)
        memo = request.memo
        if candidates is not None and len(candidates) != 1:
            memo = None  # none left (fails unfitted) or several (each fitted)
        key = (id(host_topology), ratios, _devices_by_node(host_state.pci_stats))
        if memo is not None and key in memo:
            answer = memo[key]
            if not answer[0] and candidates is not None:
                self.keep_candidates(host_state, request.spec_obj, [])
            return answer
        limits = _limits(ratios, request)
        # Unlike Nova's, the fit leaves the topology it is given alone: no copy per host.
        fits = self.passes_candidates(
            host_state, request.spec_obj, lambda mapping: hardware.numa_fit_instance_to_host(
                host_topology, request.topology, limits=limits,
                pci_requests=request.pci_requests, pci_stats=host_state.pci_stats,
                provider_mapping=mapping))
        if not fits:
            LOG.debug('%(host)s, %(node)s fails NUMA topology requirements: the instance '
                      'does not fit on this host.',
                      {'host': host_state.host, 'node': host_state.nodename})
            answer = False, None
        else:
            answer = True, limits
        if memo is not None:
            memo[key] = answer
        return answer

    def limits_for(self, host_state, spec_obj):
        request = _Request(spec_obj)
        if not (request.topology and host_state.numa_topology):
            return {}
        return {'numa_topology': _limits((host_state.cpu_allocation_ratio,
                                          host_state.ram_allocation_ratio), request)}

    def is_noop(self, spec_obj):
        # Limits are only set for requests with a topology, so this can skip the others.
        requested = spec_obj.numa_topology if 'numa_topology' in spec_obj else None
        return not requested and not _requires_threads(spec_obj)

    def filter_rows(self, view, spec_obj):
        # Hosts without a topology are decided at once, most others from the columns of
        # their cells (numa_rules); the fit runs for the rest only. On the Placement path,
        # hosts whose candidates' mappings matter are fitted per candidate.
        request = _Request(spec_obj)
        columns, rows = view.table.columns, view.rows
        ncells = columns['numa_ncells'][rows]
        mask = np.full(len(view), not request.topology, dtype=bool)
        positions = np.flatnonzero(ncells)
        if not len(positions):
            return mask
        sub = rows[positions]
        readable = ncells[positions] >= 0
        open_ = np.ones(len(positions), dtype=bool)
        passes = np.zeros(len(positions), dtype=bool)
        if request.requires_threads:
            open_ &= ~(readable & (columns['numa_threads'][sub] == 0))
        # The hosts Nova decides per allocation candidate: the others failed or passed before.
        reach = open_.copy() if request.topology else np.zeros(len(positions), dtype=bool)
        if not request.topology:
            passes = open_ & readable
            open_ &= ~readable
        else:
            decision = numa_rules.numa_decision(view.table, sub, request.topology,
                                                request.pci_requests,
                                                request.network_metadata)
            if decision is None:
                # Hosts without the free dedicated CPUs the request pins fail without a fit.
                open_ &= numa_bounds.may_fit(view.table, sub, request.topology)
            else:
                passes = open_ & ~decision.open & decision.passes
                open_ &= decision.open
        same = np.zeros(len(positions), dtype=bool)
        if reach.any():
            per_host, none_left, same = (
                kind[positions] & reach
                for kind in filters.candidate_kinds(view, spec_obj, request.pci_requests))
            open_ = (open_ | per_host) & ~none_left
            passes &= ~none_left
        mask[positions] = passes
        states = view.table.states
        for pos in positions[open_].tolist():
            mask[pos] = self._fit(states[rows[pos]], request)[0]
        # Decided once for all their candidates: a host that fails keeps none.
        for pos in positions[same & ~open_ & ~passes].tolist():
            self.keep_candidates(states[rows[pos]], spec_obj, [])
        return mask
