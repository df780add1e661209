"""The ChanceScheduler: random hosts among the compute hosts that are up (no filters)."""
import random

from minisched import context as ms_context
from minisched import exception
from minisched.objects import compute_node as compute_node_obj
from minisched.objects import host_mapping as host_mapping_obj
from minisched.objects import request_spec
from minisched.objects import selection as selection_obj
from minisched.scheduler import driver
from minisched.scheduler import host_manager


class ChanceScheduler(driver.Scheduler):
    """Implements Scheduler as a random node selector (Nova's, deprecated in Pike)."""

    def _filter_hosts(self, hosts, spec_obj):
        ignore_hosts = spec_obj.ignore_hosts or []
        return [host for host in hosts if host not in ignore_hosts]

    def _schedule(self, context, topic, spec_obj, instance_uuids, return_alternates=False):
        elevated = context.elevated()
        hosts = self.hosts_up(elevated, topic)
        if not hosts:
            raise exception.NoValidHost(reason='Is the appropriate service running?')
        hosts = self._filter_hosts(hosts, spec_obj)
        if not hosts:
            raise exception.NoValidHost(reason='Could not find another compute')
        num_instances = len(instance_uuids) if instance_uuids else spec_obj.num_instances
        if len(hosts) >= num_instances:
            selected = random.sample(hosts, num_instances)
        else:
            selected = [random.choice(hosts) for _ in range(num_instances)]
        if not return_alternates:
            return [[host] for host in selected]
        num_alts = min(len(hosts), self.conf.scheduler.max_attempts) - 1
        selections = []
        for host in selected:
            others = [h for h in hosts if h not in selected]
            selections.append([host] + random.sample(others, min(num_alts, len(others))))
        return selections

    def select_destinations(self, context, spec_obj, instance_uuids, alloc_reqs_by_rp_uuid,
                            provider_summaries, allocation_request_version=None,
                            return_alternates=False, dry_run=False):
        # Consumes nothing: a dry run is an ordinary run.
        num_instances = len(instance_uuids) if instance_uuids else spec_obj.num_instances
        host_lists = self._schedule(context, 'compute', spec_obj, instance_uuids,
                                    return_alternates)
        if len(host_lists) < num_instances:
            raise exception.NoValidHost(reason='There are not enough hosts available.')
        return [[self._selection(context, host) for host in hosts] for hosts in host_lists]

    def _selection(self, context, host):
        """A real Selection for ``host`` (Rocky passed bare names here; see nova-reference)."""
        elevated = context.elevated()
        try:
            cell = host_mapping_obj.HostMapping.get_by_host(elevated, host).cell_mapping
        except exception.HostMappingNotFound:
            cell = None
        with ms_context.target_cell(elevated, cell) as cctxt:
            node = compute_node_obj.ComputeNodeList.get_all_by_host(cctxt, host)[0]
        return selection_obj.Selection(
            compute_node_uuid=node.uuid, service_host=host, nodename=node.hypervisor_hostname,
            cell_uuid=cell.uuid if cell is not None else host_manager.LOCAL_CELL_UUID,
            limits=request_spec.SchedulerLimits.from_dict({}), allocation_request='null',
            allocation_request_version=None, availability_zone=None)
