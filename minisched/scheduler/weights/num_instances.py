"""Weigh hosts by their number of instances (off by default: multiplier 0.0).

Raw value ``num_instances``, bounds from the host list. A negative
``[filter_scheduler] num_instances_weight_multiplier`` spreads (fewer instances win), a
positive one packs. Overridable per aggregate with the ``num_instances_weight_multiplier`` key.
"""
from minisched.scheduler import weights


class NumInstancesWeigher(weights.BaseHostWeigher):
    multiplier_name = 'num_instances_weight_multiplier'
    finite_values = True  # an integer column

    def _weigh_object(self, host_state, weight_properties):
        return host_state.num_instances

    def weigh_rows(self, view, weight_properties):
        return view.column('num_instances')
