"""Drop hosts whose NUMA cells cannot hold the request's instance NUMA topology.

Nova's NUMATopologyFilter: a request without a NUMA topology passes (unless it asks for
dedicated CPUs with the ``require`` thread policy and the host has no SMT siblings); one
with a topology fails on hosts reporting none, and elsewhere must fit
(:func:`minisched.virt.hardware.numa_fit_instance_to_host`, with the host's CPU and RAM
allocation ratios as ``NUMATopologyLimits``, its PCI devices for the requests' NUMA
affinity). A passing host gets those limits as ``limits['numa_topology']``, which the
compute's claim fits against again. minisched has no Placement, hence no allocation
candidates to narrow.
"""
import logging

import numpy as np

from minisched import objects
from minisched.objects import fields
from minisched.scheduler import filters
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


class NUMATopologyFilter(filters.BaseHostFilter):
    """Passes hosts whose NUMA topology can take the requested instance topology."""

    RUN_ON_REBUILD = False
    SETS_LIMITS = True

    def host_passes(self, host_state, spec_obj):
        passes, limits = self._fit(host_state, spec_obj)
        if limits is not None:
            host_state.limits['numa_topology'] = limits
        return passes

    def _fit(self, host_state, spec_obj):
        """``(passes, NUMATopologyLimits to record or None)``."""
        host_topology = host_state.numa_topology
        if host_topology and _requires_threads(spec_obj) and not host_topology.has_threads:
            LOG.debug("%(host_state)s fails CPU policy requirements: it has no SMT siblings "
                      "and the 'require' thread policy was asked for.",
                      {'host_state': host_state})
            return False, None
        requested = spec_obj.numa_topology if 'numa_topology' in spec_obj else None
        if not requested:
            return True, None
        if not host_topology:
            LOG.debug('%(host)s, %(node)s fails NUMA topology requirements: the host reports '
                      'no NUMA topology and the instance asks for one.',
                      {'host': host_state.host, 'node': host_state.nodename})
            return False, None
        limits = objects.NUMATopologyLimits(
            cpu_allocation_ratio=host_state.cpu_allocation_ratio,
            ram_allocation_ratio=host_state.ram_allocation_ratio)
        network_metadata = (spec_obj.network_metadata if 'network_metadata' in spec_obj
                            else None)
        if network_metadata:
            limits.network_metadata = network_metadata
        pci_requests = spec_obj.pci_requests if 'pci_requests' in spec_obj else None
        # Unlike Nova's, the fit leaves the topology it is given alone: no copy per host.
        fitted = hardware.numa_fit_instance_to_host(
            host_topology, requested, limits=limits,
            pci_requests=pci_requests.requests if pci_requests else None,
            pci_stats=host_state.pci_stats)
        if fitted is None:
            LOG.debug('%(host)s, %(node)s fails NUMA topology requirements: the instance '
                      'does not fit on this host.',
                      {'host': host_state.host, 'node': host_state.nodename})
            return False, None
        return True, limits

    def is_noop(self, spec_obj):
        # Limits are only set for requests with a topology, so this can skip the others.
        requested = spec_obj.numa_topology if 'numa_topology' in spec_obj else None
        return not requested and not _requires_threads(spec_obj)

    def filter_rows(self, view, spec_obj):
        # Hosts without a topology are decided at once; the fit runs for the others only.
        requested = 'numa_topology' in spec_obj and spec_obj.numa_topology
        mask = np.full(len(view), not requested, dtype=bool)
        states, rows = view.table.states, view.rows
        for pos in view.flagged('numa_topology').tolist():
            mask[pos] = self._fit(states[rows[pos]], spec_obj)[0]
        return mask
