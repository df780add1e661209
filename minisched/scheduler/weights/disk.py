"""Prefer hosts with more free local disk (spread); a negative multiplier stacks instead.

Raw value ``free_disk_mb``, declared ``minval = 0``: normalised as ``free / max(free)``.
Multiplier ``[filter_scheduler] disk_weight_multiplier``, overridable per aggregate with the
``disk_weight_multiplier`` metadata key.
"""
from minisched.scheduler import weights


class DiskWeigher(weights.BaseHostWeigher):
    multiplier_name = 'disk_weight_multiplier'
    minval = 0
    finite_values = True  # an integer column

    def _weigh_object(self, host_state, weight_properties):
        """Higher weights win: spreading is the default."""
        return host_state.free_disk_mb

    def weigh_rows(self, view, weight_properties):
        return view.column('free_disk_mb')
