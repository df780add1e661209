"""Drop hosts whose vCPUs, after overcommit, cannot hold the flavor (Nova's classic CoreFilter).

A host reporting no vCPUs passes (Nova assumes broken CPU accounting). Otherwise
``limit = vcpus_total * ratio``; when positive it goes to ``limits['vcpu']`` and the flavor
may not need more vCPUs than the host physically has; then ``limit - vcpus_used`` must hold it.
"""
import logging

from minisched.scheduler import filters
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


def _rows_pass(view, requested, ratios):
    total = view.column('vcpus_total')
    limit = total * ratios
    if not total.all():
        LOG.warning('VCPUs not set; assuming CPU collection broken')
    fits = ~((limit > 0) & (requested > total)) & ~(limit - view.column('vcpus_used') < requested)
    return (total == 0) | fits


class CoreFilter(filters.BaseHostFilter):
    """vCPU check with the node's ``cpu_allocation_ratio``."""

    RUN_ON_REBUILD = False
    SETS_LIMITS = True

    def _ratio(self, host_state):
        return utils.node_ratio(self.conf, host_state, _RATIO)

    def host_passes(self, host_state, spec_obj):
        return _passes(host_state, spec_obj, self._ratio)

    def filter_rows(self, view, spec_obj):
        return _rows_pass(view, spec_obj.vcpus, utils.node_ratio_rows(self.conf, view, _RATIO))


class AggregateCoreFilter(filters.BaseHostFilter):
    """vCPU check with the smallest aggregate ``cpu_allocation_ratio``, else the node's."""

    RUN_ON_REBUILD = False
    SETS_LIMITS = True

    def _ratio(self, host_state):
        return utils.aggregate_ratio(self.conf, host_state, _RATIO)

    def host_passes(self, host_state, spec_obj):
        return _passes(host_state, spec_obj, self._ratio)

    def filter_rows(self, view, spec_obj):
        return _rows_pass(view, spec_obj.vcpus, utils.aggregate_ratio_rows(self.conf, view, _RATIO))
