"""Prefer hosts with a newer hypervisor (multiplier 1.0 by default; negative prefers older).

Raw value ``hypervisor_version`` (None counts as 0), bounds from the host list. Multiplier
``[filter_scheduler] hypervisor_version_weight_multiplier``, overridable per aggregate with the
``hypervisor_version_weight_multiplier`` metadata key.
"""
import numpy as np

from minisched.scheduler import weights

#: How the HostStateTable column stores a None version.
_NONE = -1


class HypervisorVersionWeigher(weights.BaseHostWeigher):
    multiplier_name = 'hypervisor_version_weight_multiplier'
    finite_values = True  # an integer column

    def _weigh_object(self, host_state, weight_properties):
        return host_state.hypervisor_version or 0

    def weigh_rows(self, view, weight_properties):
        versions = view.column('hypervisor_version')
        return np.where(versions == _NONE, 0, versions)
