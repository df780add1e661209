"""Prefer hosts with fewer I/O-heavy operations in flight (multiplier -1.0 by default).

Raw value ``num_io_ops`` (builds, resizes, snapshots... counted by the compute node), declared
``minval = 0``. Multiplier ``[filter_scheduler] io_ops_weight_multiplier``; a positive value
prefers busy hosts. Overridable per aggregate with the ``io_ops_weight_multiplier`` key.
"""
from minisched.scheduler import weights


class IoOpsWeigher(weights.BaseHostWeigher):
    multiplier_name = 'io_ops_weight_multiplier'
    minval = 0
    finite_values = True  # an integer column

    def _weigh_object(self, host_state, weight_properties):
        """Higher weights win; the negative default multiplier favours light workloads."""
        return host_state.num_io_ops

    def weigh_rows(self, view, weight_properties):
        return view.column('num_io_ops')
