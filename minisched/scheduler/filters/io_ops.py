"""Drop hosts already running too many I/O-heavy operations (builds, resizes, snapshots...)."""
import logging

import numpy as np

from minisched.scheduler import filters
from minisched.scheduler.filters import utils

LOG = logging.getLogger(__name__)
_KEY = 'max_io_ops_per_host'


def _passes(host_state, max_io_ops):
    passes = host_state.num_io_ops < max_io_ops
    if not passes:
        LOG.debug('%(host)s fails I/O ops check: Max IOs per host is set to %(max)s',
                  {'host': host_state, 'max': max_io_ops})
    return passes


class IoOpsFilter(filters.BaseHostFilter):
    """Passes hosts with ``num_io_ops < [filter_scheduler] max_io_ops_per_host``."""

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        return _passes(host_state, self.conf.filter_scheduler.max_io_ops_per_host)

    def filter_rows(self, view, spec_obj):
        return view.column('num_io_ops') < self.conf.filter_scheduler.max_io_ops_per_host


class AggregateIoOpsFilter(filters.BaseHostFilter):
    """As IoOpsFilter with the smallest aggregate ``max_io_ops_per_host``, else the option."""

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        default = self.conf.filter_scheduler.max_io_ops_per_host
        return _passes(host_state, utils.aggregate_number(host_state, _KEY, default, int))

    def filter_rows(self, view, spec_obj):
        default = self.conf.filter_scheduler.max_io_ops_per_host
        # Python ints of any size, compared exactly (object dtype), one lookup per aggregate set.
        maxima = utils.per_aggregated_host(
            view, np.full(len(view), default, dtype=object),
            lambda state: utils.aggregate_number(state, _KEY, default, int))
        return view.column('num_io_ops') < maxima
