"""Drop hosts whose vCPUs, after overcommit, cannot hold the flavor (Nova's classic CoreFilter).

A host reporting no vCPUs passes (Nova assumes broken CPU accounting). Otherwise
``limit = vcpus_total * ratio``; when positive it goes to ``limits['vcpu']`` and the flavor
may not need more vCPUs than the host physically has; then ``limit - vcpus_used`` must hold it.
"""
import logging

from minisched.scheduler.filters import utils

LOG = logging.getLogger(__name__)
_RATIO = 'cpu_allocation_ratio'


def _passes(host_state, spec_obj, ratio_of):
    total = host_state.vcpus_total
    if not total:
        LOG.warning('VCPUs not set; assuming CPU collection broken')
        return True
    requested = spec_obj.vcpus
    limit = total * ratio_of(host_state)
    # Only a positive limit is a real count of installed vCPUs worth enforcing; Nova sets
    # it even when the host then fails.
    if limit > 0:
        host_state.limits['vcpu'] = limit
        if requested > total:  # an instance may not overcommit against itself
            return False
    return not limit - host_state.vcpus_used < requested


def _rows_pass(view, spec_obj, ratios):
    requested = spec_obj.vcpus
    total = view.column('vcpus_total')
    limit = total * ratios
    if not total.all():
        LOG.warning('VCPUs not set; assuming CPU collection broken')
    fits = ~((limit > 0) & (requested > total)) & ~(limit - view.column('vcpus_used') < requested)
    return (total == 0) | fits


class CoreFilter(utils.OvercommitFilter):
    """vCPU check with the node's ``cpu_allocation_ratio``."""

    # Deprecated in Nova 19.0.0 (Stein); 19.3.2, its last release with it, logs this.
    DEPRECATION = ('The CoreFilter is deprecated since the 19.0.0 Stein release. VCPU filtering '
                   'is performed natively using the Placement service when using the '
                   'filter_scheduler driver. Furthermore, enabling CoreFilter may incorrectly '
                   'filter out baremetal nodes which must be scheduled using custom resource '
                   'classes.')

    RATIO, passes, rows_pass = _RATIO, staticmethod(_passes), staticmethod(_rows_pass)


class AggregateCoreFilter(utils.OvercommitFilter):
    """vCPU check with the smallest aggregate ``cpu_allocation_ratio``, else the node's."""

    # Deprecated in Nova 20.0.0 (Train); 21.2.4 (Ussuri), its last release with it, logs this.
    DEPRECATION = ('The AggregateCoreFilter is deprecated since the 20.0.0 Train release. VCPU '
                   'filtering is performed natively using the Placement service when using the '
                   'filter_scheduler driver. Operators should define cpu allocation ratios either'
                   ' per host in the nova.conf or via the placement API.')

    RATIO, passes, rows_pass = _RATIO, staticmethod(_passes), staticmethod(_rows_pass)
    AGGREGATE = True
