"""Claims: a compute's last check that an instance fits, against the scheduler's limits.

CPU, RAM and disk are checked against the limits the resource filters computed (Rocky's
claim, as there is no Placement); the instance's NUMA topology is fitted to the node's, with
the ``NUMATopologyLimits`` the NUMATopologyFilter gave, and its PCI requests must be
supported by the node's free devices, as in Nova's HEAD claim. So a claim never accepts what
the filters would have rejected, whatever the scheduler's view was when it chose the host.
"""
import logging

from minisched import exception
from minisched import objects
from minisched.virt import hardware

LOG = logging.getLogger(__name__)


def _check(name, requested, total, used, limit, unit):
    """Return a reason string when ``requested`` does not fit, else None (no limit: fits)."""
    LOG.debug('%(name)s: requested %(req)s %(unit)s, total %(total)s %(unit)s, used '
              '%(used)s %(unit)s, limit %(limit)s', {'name': name, 'req': requested,
                                                      'total': total, 'used': used,
                                                      'limit': limit, 'unit': unit})
    if limit is None:
        return None
    free = limit - used
    if requested > free:
        return ('Free %(name)s %(free).2f %(unit)s < requested %(req)d %(unit)s' %
                {'name': name.lower(), 'free': free, 'unit': unit, 'req': requested})
    return None


def _field(instance, name):
    """An optional object field of the instance; None where it is not set (an instance
    built before minisched kept it)."""
    return getattr(instance, name) if name in instance else None


class Claim:
    """Resources reserved for one instance on one node; abort() gives them back.

    ``claimed_numa_topology`` is the instance's NUMA topology fitted to the node (host CPUs
    pinned, page size chosen), or None when the instance asks for no topology.
    """

    def __init__(self, tracker, instance, nodename, compute_node, limits, pci_stats=None):
        self.tracker = tracker
        self.instance = instance
        self.nodename = nodename
        self.claimed_numa_topology = None
        limits = limits or {}
        if hasattr(limits, 'to_dict'):
            limits = limits.to_dict()
        flavor = instance.flavor
        pci_requests = _field(instance, 'pci_requests')
        pci_requests = pci_requests.requests if pci_requests else []
        reasons = [reason for reason in (
            _check('Memory', flavor.memory_mb, compute_node.memory_mb,
                   compute_node.memory_mb_used, limits.get('memory_mb'), 'MB'),
            _check('Disk', flavor.root_gb + flavor.ephemeral_gb, compute_node.local_gb,
                   compute_node.local_gb_used, limits.get('disk_gb'), 'GB'),
            _check('vcpu', flavor.vcpus, compute_node.vcpus, compute_node.vcpus_used,
                   limits.get('vcpu'), 'VCPU'),
            self._test_numa_topology(compute_node, limits.get('numa_topology'), pci_requests,
                                     pci_stats),
            self._test_pci(pci_requests, pci_stats),
        ) if reason]
        if reasons:
            LOG.info('Failed to claim on node %s: %s', nodename, '; '.join(reasons))
            raise exception.ComputeResourcesUnavailable(reason='; '.join(reasons))

    def _test_pci(self, pci_requests, pci_stats):
        if pci_requests and (pci_stats is None or not pci_stats.support_requests(
                pci_requests, provider_mapping=None)):
            return 'Claim pci failed'
        return None

    def _test_numa_topology(self, compute_node, limit, pci_requests, pci_stats):
        requested = _field(self.instance, 'numa_topology')
        raw = compute_node.numa_topology if 'numa_topology' in compute_node else None
        if not raw:
            if requested:
                return 'Requested instance NUMA topology but the host has none'
            return None
        host_topology = objects.NUMATopology.obj_from_db_obj(raw)
        fitted = hardware.numa_fit_instance_to_host(
            host_topology, requested, limits=limit,
            pci_requests=pci_requests, pci_stats=pci_stats)
        if requested and not fitted:
            if pci_requests:
                return ('Requested instance NUMA topology together with requested PCI '
                        'devices cannot fit the given host NUMA topology')
            return 'Requested instance NUMA topology cannot fit the given host NUMA topology'
        self.claimed_numa_topology = fitted
        return None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if exc_type is not None:
            self.abort()

    def abort(self):
        LOG.debug('Aborting claim of instance %s on %s', self.instance.uuid, self.nodename)
        self.tracker.abort_instance_claim(self.instance, self.nodename)
