"""Drop hosts whose memory, after overcommit, cannot hold the flavor (Nova's classic RamFilter).

A host passes when it could hold the flavor with no overcommit at all (an instance may not
overcommit against itself) and when ``limit - (total - free_ram_mb) >= memory_mb`` with
``limit = total_usable_ram_mb * ratio``. The limit goes to ``limits['memory_mb']`` for the
compute claim.
"""
import logging

from minisched.scheduler.filters import utils

LOG = logging.getLogger(__name__)
_RATIO = 'ram_allocation_ratio'


def _limits(host_state, spec_obj, ratio_of):
    return {'memory_mb': host_state.total_usable_ram_mb * ratio_of(host_state)}


def _passes(host_state, spec_obj, ratio_of):
    requested = spec_obj.memory_mb
    total = host_state.total_usable_ram_mb
    if not total >= requested:
        LOG.debug('%(host)s does not have %(req)s MB usable ram before overcommit, it only '
                  'has %(total)s MB.', {'host': host_state, 'req': requested, 'total': total})
        return False
    limit = _limits(host_state, spec_obj, ratio_of)['memory_mb']
    usable = limit - (total - host_state.free_ram_mb)
    if not usable >= requested:
        LOG.debug('%(host)s does not have %(req)s MB usable ram, it only has %(usable)s MB '
                  'usable ram.', {'host': host_state, 'req': requested, 'usable': usable})
        return False
    host_state.limits['memory_mb'] = limit
    return True


def _rows_pass(view, spec_obj, ratios):
    requested = spec_obj.memory_mb
    total = view.column('total_usable_ram_mb')
    usable = total * ratios - (total - view.column('free_ram_mb'))
    return (total >= requested) & (usable >= requested)


class RamFilter(utils.OvercommitFilter):
    """RAM check with the node's ``ram_allocation_ratio``."""

    # Nova deprecated it in 19.0.0 (Stein) for Placement, which minisched has not: here it is
    # the memory check of every default request, so starting with it warns of nothing.

    RATIO, passes, rows_pass = _RATIO, staticmethod(_passes), staticmethod(_rows_pass)
    limits = staticmethod(_limits)


class AggregateRamFilter(utils.OvercommitFilter):
    """RAM check with the smallest aggregate ``ram_allocation_ratio``, else the node's."""

    # Nova 22.0.0 (Victoria) removed it; Nova's warning named Placement, which minisched has
    # not: this one says what a configuration moving to a current Nova must change.
    DEPRECATION = ('The AggregateRamFilter is deprecated: Nova removed it in 22.0.0 (Victoria), '
                   'where ram_allocation_ratio is set per compute host in its configuration, '
                   'not in aggregate metadata.')

    RATIO, passes, rows_pass = _RATIO, staticmethod(_passes), staticmethod(_rows_pass)
    limits = staticmethod(_limits)
    AGGREGATE = True
