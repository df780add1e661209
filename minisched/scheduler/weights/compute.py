"""Push back hosts whose recent builds failed (the compute node counts them).

Raw value ``failed_builds``, bounds from the host list, so the host(s) with the most failures
lose the whole multiplier. The multiplier is the **negated**
``[filter_scheduler] build_failure_weight_multiplier`` (1000000.0: failures dominate every
other weigher), overridable per aggregate with the ``build_failure_weight_multiplier`` key.
"""
from minisched.scheduler import weights


class BuildFailureWeigher(weights.BaseHostWeigher):
    multiplier_name = 'build_failure_weight_multiplier'
    finite_values = True  # an integer column

    def weight_multiplier(self, host_state):
        """Note this is negated."""
        return -1 * super().weight_multiplier(host_state)

    def multipliers_rows(self, view):
        return -1 * super().multipliers_rows(view)

    def _weigh_object(self, host_state, weight_properties):
        """Higher weights win; the negated multiplier turns failures into a penalty."""
        return host_state.failed_builds

    def weigh_rows(self, view, weight_properties):
        return view.column('failed_builds')
