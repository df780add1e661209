"""Prefer hosts with more free vCPUs after overcommit (spread); negative multiplier stacks.

Raw value ``vcpus_total * cpu_allocation_ratio - vcpus_used``, declared ``minval = 0``.
Multiplier ``[filter_scheduler] cpu_weight_multiplier``, overridable per aggregate with the
``cpu_weight_multiplier`` metadata key.
"""
import numpy as np

from minisched.scheduler import weights


class CPUWeigher(weights.BaseHostWeigher):
    multiplier_name = 'cpu_weight_multiplier'
    minval = 0

    def _weigh_object(self, host_state, weight_properties):
        """Higher weights win: spreading is the default."""
        return host_state.vcpus_total * host_state.cpu_allocation_ratio - host_state.vcpus_used

    def weigh_rows(self, view, weight_properties):
        ratio = view.column('cpu_allocation_ratio')
        if np.isnan(ratio).any():
            return None  # an unset ratio fails per host, as in Nova
        total = view.column('vcpus_total').astype(np.float64)
        return total * ratio - view.column('vcpus_used').astype(np.float64)
