"""Soft (anti-)affinity: prefer hosts with more (fewer) members of the request's server group.

Raw value: the number of the group's members among the host's instances when the group's
policy is the weigher's own (``soft-affinity`` / ``soft-anti-affinity``, negated for the
latter), else 0; bounds from the host list. Multipliers
``[filter_scheduler] soft_affinity_weight_multiplier`` / ``soft_anti_affinity_weight_multiplier``
(>= 0), overridable per aggregate with the same metadata keys.
"""

from minisched.scheduler import weights


class _SoftAffinityWeigherBase(weights.BaseHostWeigher):
    policy_name = None
    sign = 1

    def _applies(self, request_spec):
        group = request_spec.instance_group
        return bool(group) and group.policy == self.policy_name

    def _weigh_object(self, host_state, request_spec):
        """Higher weights win."""
        if not self._applies(request_spec):
            return 0
        members = set(request_spec.instance_group.members)
        return self.sign * len(set(host_state.instances.keys()) & members)

    def weigh_rows(self, view, request_spec):
        # Without a group of this policy every host weighs 0; otherwise count per host.
        return None if self._applies(request_spec) else 0


class ServerGroupSoftAffinityWeigher(_SoftAffinityWeigherBase):
    policy_name = 'soft-affinity'
    multiplier_name = 'soft_affinity_weight_multiplier'


class ServerGroupSoftAntiAffinityWeigher(_SoftAffinityWeigherBase):
    policy_name = 'soft-anti-affinity'
    multiplier_name = 'soft_anti_affinity_weight_multiplier'
    sign = -1
