"""Drop hosts whose vCPUs, after overcommit, cannot hold the flavor (Nova's classic CoreFilter).

A host reporting no vCPUs passes (Nova assumes broken CPU accounting). Otherwise
``limit = vcpus_total * ratio``; when positive it goes to ``limits['vcpu']`` and the flavor
may not need more vCPUs than the host physically has; then ``limit - vcpus_used`` must hold it.
"""
import logging

from minisched.scheduler.filters import utils

LOG = logging.getLogger(__name__)
_RATIO = 'cpu_allocation_ratio'


def _limits(host_state, spec_obj, ratio_of):
    total = host_state.vcpus_total
    limit = total * ratio_of(host_state) if total else 0
    return {'vcpu': limit} if limit > 0 else {}


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

    # Nova deprecated it in 19.0.0 (Stein) for Placement, which minisched has not: here it is
    # the vCPU check of every default request, so starting with it warns of nothing.

    RATIO, passes, rows_pass = _RATIO, staticmethod(_passes), staticmethod(_rows_pass)
    limits = staticmethod(_limits)


class AggregateCoreFilter(utils.OvercommitFilter):
    """vCPU check with the smallest aggregate ``cpu_allocation_ratio``, else the node's."""

    # Nova 22.0.0 (Victoria) removed it; Nova's warning named Placement, which minisched has
    # not: this one says what a configuration moving to a current Nova must change.
    DEPRECATION = ('The AggregateCoreFilter is deprecated: Nova removed it in 22.0.0 (Victoria), '
                   'where cpu_allocation_ratio is set per compute host in its configuration, '
                   'not in aggregate metadata.')

    RATIO, passes, rows_pass = _RATIO, staticmethod(_passes), staticmethod(_rows_pass)
    limits = staticmethod(_limits)
    AGGREGATE = True
