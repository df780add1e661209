"""Claims: a compute's last check that an instance fits, against the scheduler's limits."""
import logging

from minisched import exception

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


class Claim:
    """Resources reserved for one instance on one node; abort() gives them back."""

    def __init__(self, tracker, instance, nodename, compute_node, limits):
        self.tracker = tracker
        self.instance = instance
        self.nodename = nodename
        limits = limits or {}
        flavor = instance.flavor
        reasons = [reason for reason in (
            _check('Memory', flavor.memory_mb, compute_node.memory_mb,
                   compute_node.memory_mb_used, limits.get('memory_mb'), 'MB'),
            _check('Disk', flavor.root_gb + flavor.ephemeral_gb, compute_node.local_gb,
                   compute_node.local_gb_used, limits.get('disk_gb'), 'GB'),
            _check('vcpu', flavor.vcpus, compute_node.vcpus, compute_node.vcpus_used,
                   limits.get('vcpu'), 'VCPU'),
        ) if reason]
        if reasons:
            raise exception.ComputeResourcesUnavailable(reason='; '.join(reasons))

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if exc_type is not None:
            self.abort()

    def abort(self):
        LOG.debug('Aborting claim of instance %s on %s', self.instance.uuid, self.nodename)
        self.tracker.abort_instance_claim(self.instance, self.nodename)
