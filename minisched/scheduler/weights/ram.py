"""Prefer hosts with more free RAM (spread); a negative multiplier stacks instead.

Raw value ``free_ram_mb``, declared ``minval = 0``: normalised as ``free / max(free)``
(negative free RAM counts as 0). Multiplier ``[filter_scheduler] ram_weight_multiplier``,
overridable per aggregate with the ``ram_weight_multiplier`` metadata key.
"""
from minisched.scheduler import weights


class RAMWeigher(weights.BaseHostWeigher):
    multiplier_name = 'ram_weight_multiplier'
    minval = 0
    finite_values = True  # an integer column

    def _weigh_object(self, host_state, weight_properties):
        """Higher weights win: spreading is the default."""
        return host_state.free_ram_mb

    def weigh_rows(self, view, weight_properties):
        return view.column('free_ram_mb')
