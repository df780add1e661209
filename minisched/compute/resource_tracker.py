"""Resource tracker: keeps each node's ComputeNode record true and holds build claims."""
import logging
import threading

from oslo_utils import uuidutils

from minisched.compute import claims
from minisched.compute import stats as stats_mod
from minisched import exception
from minisched.objects import base as objects_base
from minisched.objects import compute_node as compute_node_obj
from minisched.objects import hv_spec
from minisched.objects import instance as instance_obj

LOG = logging.getLogger(__name__)

#: Copied from the driver's resource dict onto the node record.
_DRIVER_FIELDS = ('vcpus', 'memory_mb', 'local_gb', 'cpu_info', 'vcpus_used', 'memory_mb_used',
                  'local_gb_used', 'numa_topology', 'hypervisor_type', 'hypervisor_version',
                  'hypervisor_hostname', 'disk_available_least', 'host_ip')
_RATIOS = ('cpu_allocation_ratio', 'ram_allocation_ratio', 'disk_allocation_ratio')


class ResourceTracker:
    """Per-compute view of its nodes' resources; usage is recomputed from instances."""

    def __init__(self, conf, host, driver):
        self.conf = conf
        self.host = host
        self.driver = driver
        self.compute_nodes = {}
        self.stats = {}
        self.old_resources = {}  # nodename -> the node record as last saved
        self.tracked_instances = set()
        self._lock = threading.RLock()

    # -- periodic refresh ---------------------------------------------------------------

    def update_available_resource(self, context, nodename, startup=False):
        """Refresh ``nodename`` from the driver and the instances on it, then save it."""
        resources = self.driver.get_available_resource(nodename)
        if not resources:
            LOG.warning('Virt driver reported no resources for node %s', nodename)
            return
        resources['host_ip'] = self.conf.my_ip
        if resources.get('cpu_info') is None:
            resources['cpu_info'] = ''
        with self._lock:
            self._init_compute_node(context, resources)
            instances = instance_obj.InstanceList.get_by_host_and_node(context, self.host,
                                                                       nodename)
            self._update_usage_from_instances(nodename, instances)
            self._update(context, self.compute_nodes[nodename])

    def _init_compute_node(self, context, resources):
        nodename = resources['hypervisor_hostname']
        node = self.compute_nodes.get(nodename)
        if node is None:
            try:
                node = compute_node_obj.ComputeNode.get_by_host_and_nodename(
                    context, self.host, nodename)
            except exception.NotFound:
                node = self._create_compute_node(context, resources)
            self.compute_nodes[nodename] = node
            self.stats.setdefault(nodename, stats_mod.Stats())
        self._copy_resources(node, resources)

    def _create_compute_node(self, context, resources):
        node = compute_node_obj.ComputeNode(context)
        node.host = self.host
        self._copy_resources(node, resources)
        node.uuid = resources.get('uuid') or uuidutils.generate_uuid()
        node.free_ram_mb = node.memory_mb - node.memory_mb_used
        node.free_disk_gb = node.local_gb - node.local_gb_used
        node.current_workload = 0
        node.running_vms = 0
        node.stats = {}
        node.metrics = '[]'
        node.create()
        LOG.info('Compute node record created for %(host)s:%(node)s with uuid: %(uuid)s',
                 {'host': self.host, 'node': node.hypervisor_hostname, 'uuid': node.uuid})
        return node

    def _copy_resources(self, node, resources):
        for name in _DRIVER_FIELDS:
            if name in resources and (name not in node or getattr(node, name) !=
                                      resources[name]):
                setattr(node, name, resources[name])
        specs = [hv_spec.HVSpec.from_list(spec) for spec in
                 resources.get('supported_instances') or []]
        if 'supported_hv_specs' not in node or \
                [s.to_list() for s in node.supported_hv_specs] != [s.to_list() for s in specs]:
            node.supported_hv_specs = specs
        for name in _RATIOS:
            # Only a non-zero local value is written; 0.0 leaves the choice to the scheduler.
            value = getattr(self.conf, name)
            if value and (name not in node or getattr(node, name) != value):
                setattr(node, name, value)

    def _update_usage_from_instances(self, nodename, instances):
        node = self.compute_nodes[nodename]
        node_stats = self.stats[nodename]
        node_stats.clear()
        memory_used = self.conf.reserved_host_memory_mb
        disk_used = int(self.conf.reserved_host_disk_mb / 1024)
        vcpus_used = self.conf.reserved_host_cpus
        self.tracked_instances = set()
        for instance in instances:
            if instance.vm_state in (instance_obj.DELETED, instance_obj.SHELVED_OFFLOADED):
                continue
            flavor = instance.flavor
            memory_used += flavor.memory_mb
            disk_used += flavor.root_gb + flavor.ephemeral_gb + int(flavor.swap / 1024)
            vcpus_used += flavor.vcpus
            node_stats.update_stats_for_instance(instance)
            self.tracked_instances.add(instance.uuid)
        self._set_usage(node, node_stats, memory_used, disk_used, vcpus_used)

    def _set_usage(self, node, node_stats, memory_used, disk_used, vcpus_used):
        values = {
            'memory_mb_used': memory_used, 'local_gb_used': disk_used,
            'vcpus_used': vcpus_used, 'free_ram_mb': node.memory_mb - memory_used,
            'free_disk_gb': node.local_gb - disk_used, 'running_vms': node_stats.num_instances,
            'current_workload': node_stats.calculate_workload(),
            'stats': node_stats.to_node_stats(),
        }
        for name, value in values.items():
            if name not in node or getattr(node, name) != value:
                setattr(node, name, value)

    def _update(self, context, node):
        """Save only when something other than ``updated_at`` changed (not a heartbeat).

        As Nova's ``_resource_change``, the node is compared with its copy as last saved, not
        by its dirty fields: every refresh first copies the driver's own usage counters and
        then recomputes them from the instances, which leaves them dirty but unchanged.
        """
        nodename = node.hypervisor_hostname
        old = self.old_resources.get(nodename)
        if old is not None and objects_base.obj_equal_prims(node, old, ['updated_at']):
            return
        node.save()
        self.old_resources[nodename] = node.obj_clone()

    # -- claims ---------------------------------------------------------------------------

    def instance_claim(self, context, instance, nodename, limits=None):
        """Reserve ``instance``'s resources on ``nodename``; raises ComputeResourcesUnavailable.

        Returns a :class:`~minisched.compute.claims.Claim` (a context manager that gives the
        resources back if the block raises).
        """
        with self._lock:
            node = self.compute_nodes.get(nodename)
            if node is None:
                raise exception.ComputeResourcesUnavailable(
                    reason='node %s is not known to this compute' % nodename)
            claim = claims.Claim(self, instance, nodename, node, limits)
            instance.host = self.host
            instance.node = nodename
            instance.launched_on = self.host
            instance.save()
            self._apply_instance(node, instance, sign=1)
            self._update(context, node)
            return claim

    def abort_instance_claim(self, instance, nodename):
        with self._lock:
            node = self.compute_nodes.get(nodename)
            if node is not None and instance.uuid in self.tracked_instances:
                self._apply_instance(node, instance, sign=-1)
                self._update(node._context, node)

    def update_usage(self, context, instance, nodename, is_removed=False):
        """Account for a state change (or removal) of ``instance`` on ``nodename``."""
        with self._lock:
            node = self.compute_nodes.get(nodename)
            if node is None:
                return
            if is_removed and instance.uuid in self.tracked_instances:
                self._apply_instance(node, instance, sign=-1)
            elif not is_removed:
                self.stats[nodename].update_stats_for_instance(instance)
                node.stats = self.stats[nodename].to_node_stats()
            self._update(context, node)

    def _apply_instance(self, node, instance, sign):
        flavor = instance.flavor
        node_stats = self.stats[node.hypervisor_hostname]
        memory_used = node.memory_mb_used + sign * flavor.memory_mb
        disk_used = node.local_gb_used + sign * (flavor.root_gb + flavor.ephemeral_gb +
                                                 int(flavor.swap / 1024))
        vcpus_used = node.vcpus_used + sign * flavor.vcpus
        if sign > 0:
            self.tracked_instances.add(instance.uuid)
            node_stats.update_stats_for_instance(instance)
        else:
            self.tracked_instances.discard(instance.uuid)
            node_stats.update_stats_for_instance(instance, is_removed=True)
        self._set_usage(node, node_stats, memory_used, disk_used, vcpus_used)

    def build_failed(self, nodename):
        if self.conf.compute.consecutive_build_service_disable_threshold:
            self.stats[nodename].build_failed()

    def build_succeeded(self, nodename):
        if self.conf.compute.consecutive_build_service_disable_threshold:
            self.stats[nodename].build_succeeded()
