"""Weigh hosts by their number of instances (off by default: multiplier 0.0).

Raw value ``num_instances``, bounds from the host list. A negative
``[filter_scheduler] num_instances_weight_multiplier`` spreads (fewer instances win), a
positive one packs. Overridable per aggregate with the ``num_instances_weight_multiplier`` key.
"""
from minisched.scheduler import weights
from minisched.scheduler.weights import utils

_KEY = 'num_instances_weight_multiplier'


class NumInstancesWeigher(weights.BaseHostWeigher):
    finite_values = True  # an integer column

    def _config(self):
        return self.conf.filter_scheduler.num_instances_weight_multiplier

    def weight_multiplier(self, host_state):
        return utils.get_weight_multiplier(host_state, _KEY, self._config())

    def multipliers_rows(self, view):
        return utils.weight_multipliers_rows(view, _KEY, self._config())

    def _weigh_object(self, host_state, weight_properties):
        return host_state.num_instances

    def weigh_rows(self, view, weight_properties):
        return view.column('num_instances')
