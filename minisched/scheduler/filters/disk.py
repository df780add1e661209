"""Drop hosts whose disk, after overcommit, cannot hold the flavor (Nova's classic DiskFilter).

The request is ``1024 * (root_gb + ephemeral_gb) + swap`` MB (swap counts here although
``consume_from_request`` does not subtract it). The host needs that much physical disk, and
``total_mb * ratio - (total_mb - free_disk_mb)`` must hold it; ``limits['disk_gb']`` gets
``total_mb * ratio / 1024``.
"""
import logging

from minisched.scheduler.filters import utils

LOG = logging.getLogger(__name__)
_RATIO = 'disk_allocation_ratio'


def _requested_mb(spec_obj):
    return 1024 * (spec_obj.root_gb + spec_obj.ephemeral_gb) + spec_obj.swap


def _limits(host_state, spec_obj, ratio_of):
    return {'disk_gb': host_state.total_usable_disk_gb * 1024 * ratio_of(host_state) / 1024}


def _passes(host_state, spec_obj, ratio_of):
    requested = _requested_mb(spec_obj)
    total = host_state.total_usable_disk_gb * 1024
    if total < requested:  # an instance may not overcommit against itself
        LOG.debug('%(host)s does not have %(req)s MB usable disk space before overcommit, '
                  'it only has %(total)s MB.',
                  {'host': host_state, 'req': requested, 'total': total})
        return False
    limit = total * ratio_of(host_state)
    usable = limit - (total - host_state.free_disk_mb)
    if not usable >= requested:
        LOG.debug('%(host)s does not have %(req)s MB usable disk, it only has %(usable)s MB '
                  'usable disk.', {'host': host_state, 'req': requested, 'usable': usable})
        return False
    host_state.limits['disk_gb'] = limit / 1024
    return True


def _rows_pass(view, spec_obj, ratios):
    requested = _requested_mb(spec_obj)
    total = view.column('total_usable_disk_gb') * 1024
    usable = total * ratios - (total - view.column('free_disk_mb'))
    return ~(total < requested) & (usable >= requested)


class DiskFilter(utils.OvercommitFilter):
    """Disk check with the node's ``disk_allocation_ratio``."""

    # Nova deprecated it in 19.0.0 (Stein) for Placement, which minisched has not: here it is
    # the disk check of every default request, so starting with it warns of nothing.

    RATIO, passes, rows_pass = _RATIO, staticmethod(_passes), staticmethod(_rows_pass)
    limits = staticmethod(_limits)


class AggregateDiskFilter(utils.OvercommitFilter):
    """Disk check with the smallest aggregate ``disk_allocation_ratio``, else the node's."""

    # Nova 22.0.0 (Victoria) removed it; Nova's warning named Placement, which minisched has
    # not: this one says what a configuration moving to a current Nova must change.
    DEPRECATION = ('The AggregateDiskFilter is deprecated: Nova removed it in 22.0.0 (Victoria), '
                   'where disk_allocation_ratio is set per compute host in its configuration, '
                   'not in aggregate metadata.')

    RATIO, passes, rows_pass = _RATIO, staticmethod(_passes), staticmethod(_rows_pass)
    limits = staticmethod(_limits)
    AGGREGATE = True
