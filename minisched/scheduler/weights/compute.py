"""Push back hosts whose recent builds failed (the compute node counts them).

Raw value ``failed_builds``, bounds from the host list, so the host(s) with the most failures
lose the whole multiplier. The multiplier is the **negated**
``[filter_scheduler] build_failure_weight_multiplier`` (1000000.0: failures dominate every
other weigher), overridable per aggregate with the ``build_failure_weight_multiplier`` key.
"""
from minisched.scheduler import weights
from minisched.scheduler.weights import utils

_KEY = 'build_failure_weight_multiplier'


class BuildFailureWeigher(weights.BaseHostWeigher):
    finite_values = True  # an integer column

    def _config(self):
        return self.conf.filter_scheduler.build_failure_weight_multiplier

    def weight_multiplier(self, host_state):
        """Note this is negated."""
        return -1 * utils.get_weight_multiplier(host_state, _KEY, self._config())

    def multipliers_rows(self, view):
        return -1 * utils.weight_multipliers_rows(view, _KEY, self._config())

    def _weigh_object(self, host_state, weight_properties):
        """Higher weights win; the negated multiplier turns failures into a penalty."""
        return host_state.failed_builds

    def weigh_rows(self, view, weight_properties):
        return view.column('failed_builds')
