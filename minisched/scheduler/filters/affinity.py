"""Place an instance near or away from others: server groups, instance hints, host IP."""
import operator

import netaddr
import numpy as np

from minisched.scheduler import filters
from minisched.scheduler.filters import utils


def _hint_uuids(spec_obj, name):
    uuids = spec_obj.get_scheduler_hint(name)
    return {uuids} if isinstance(uuids, str) else set(uuids or ())


def _rows(view, passes):
    return np.fromiter(map(passes, view.states()), dtype=bool, count=len(view))


class DifferentHostFilter(filters.BaseHostFilter):
    """Hint ``different_host``: pass hosts running none of the given instances."""

    # Where those instances run does not change within a request.
    run_filter_once_per_request = True
    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        uuids = spec_obj.get_scheduler_hint('different_host')
        return not (uuids and utils.instance_uuids_overlap(host_state, uuids))

    def filter_rows(self, view, spec_obj):
        uuids = _hint_uuids(spec_obj, 'different_host')
        return _rows(view, lambda state: uuids.isdisjoint(state.instances))

    def is_noop(self, spec_obj):
        return not spec_obj.get_scheduler_hint('different_host')


class SameHostFilter(filters.BaseHostFilter):
    """Hint ``same_host``: pass hosts running at least one of the given instances."""

    run_filter_once_per_request = True
    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        uuids = spec_obj.get_scheduler_hint('same_host')
        return not uuids or utils.instance_uuids_overlap(host_state, uuids)

    def filter_rows(self, view, spec_obj):
        if self.is_noop(spec_obj):
            return np.ones(len(view), dtype=bool)
        uuids = _hint_uuids(spec_obj, 'same_host')
        return _rows(view, lambda state: not uuids.isdisjoint(state.instances))

    def is_noop(self, spec_obj):
        return not spec_obj.get_scheduler_hint('same_host')


class SimpleCIDRAffinityFilter(filters.BaseHostFilter):
    """Hints ``build_near_host_ip`` and ``cidr`` (``/24``): pass hosts in that network."""

    run_filter_once_per_request = True
    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        address = spec_obj.get_scheduler_hint('build_near_host_ip')
        if not address:
            return True
        network = netaddr.IPNetwork(address + spec_obj.get_scheduler_hint('cidr', '/24'))
        return netaddr.IPAddress(host_state.host_ip) in network

    def is_noop(self, spec_obj):
        return not spec_obj.get_scheduler_hint('build_near_host_ip')


class ServerGroupAntiAffinityFilter(filters.BaseHostFilter):
    """Group policy ``anti-affinity``: fewer than ``max_server_per_host`` (1) members here."""

    RUN_ON_REBUILD = False

    def _rule(self, spec_obj):
        """(instance being placed, group members, members allowed per host)."""
        group = spec_obj.instance_group
        rules = group.rules
        limit = rules['max_server_per_host'] if rules and 'max_server_per_host' in rules else 1
        return spec_obj.instance_uuid, set(group.members), limit

    @staticmethod
    def _passes(instances, uuid, members, limit):
        # A move (resize...) may stay on the instance's own host.
        return uuid in instances or len(members.intersection(instances)) < limit

    def host_passes(self, host_state, spec_obj):
        if self.is_noop(spec_obj) or spec_obj.instance_uuid in host_state.instances:
            return True
        return self._passes(host_state.instances, *self._rule(spec_obj))

    def filter_rows(self, view, spec_obj):
        if self.is_noop(spec_obj):
            return np.ones(len(view), dtype=bool)
        uuid, members, limit = self._rule(spec_obj)
        instances = map(operator.attrgetter('instances'), view.states())
        if limit == 1:  # the default: no member at all on the host
            passes = (uuid in on_host or members.isdisjoint(on_host) for on_host in instances)
        else:
            passes = (self._passes(on_host, uuid, members, limit) for on_host in instances)
        return np.fromiter(passes, dtype=bool, count=len(view))

    def is_noop(self, spec_obj):
        group = spec_obj.instance_group
        return (group.policy if group else None) != 'anti-affinity'


class ServerGroupAffinityFilter(filters.BaseHostFilter):
    """Group policy ``affinity``: once members are placed, only their hosts pass."""

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        return self.is_noop(spec_obj) or host_state.host in spec_obj.instance_group.hosts

    def filter_rows(self, view, spec_obj):
        if self.is_noop(spec_obj):
            return np.ones(len(view), dtype=bool)
        hosts = set(spec_obj.instance_group.hosts)
        return _rows(view, lambda state: state.host in hosts)

    def is_noop(self, spec_obj):
        group = spec_obj.instance_group
        return not group or 'affinity' not in group.policies or not group.hosts
