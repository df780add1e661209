"""Drop hosts already running too many instances."""
import logging

import numpy as np

from minisched.scheduler import filters
from minisched.scheduler.filters import utils

LOG = logging.getLogger(__name__)
_KEY = 'max_instances_per_host'


def _passes(host_state, max_instances):
    passes = host_state.num_instances < max_instances
    if not passes:
        LOG.debug('%(host)s fails num_instances check: Max instances per host is set to '
                  '%(max)s', {'host': host_state, 'max': max_instances})
    return passes


class NumInstancesFilter(filters.BaseHostFilter):
    """Passes hosts with ``num_instances < [filter_scheduler] max_instances_per_host``."""

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        return _passes(host_state, self.conf.filter_scheduler.max_instances_per_host)

    def filter_rows(self, view, spec_obj):
        return view.column('num_instances') < self.conf.filter_scheduler.max_instances_per_host


class AggregateNumInstancesFilter(filters.BaseHostFilter):
    """As NumInstancesFilter with the smallest aggregate ``max_instances_per_host``."""

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        default = self.conf.filter_scheduler.max_instances_per_host
        return _passes(host_state, utils.aggregate_number(host_state, _KEY, default, int))

    def filter_rows(self, view, spec_obj):
        default = self.conf.filter_scheduler.max_instances_per_host
        # Python ints of any size, compared exactly (object dtype), one lookup per aggregate set.
        maxima = utils.per_aggregated_host(
            view, np.full(len(view), default, dtype=object),
            lambda state: utils.aggregate_number(state, _KEY, default, int))
        return view.column('num_instances') < maxima
