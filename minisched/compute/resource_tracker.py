"""Resource tracker: keeps each node's ComputeNode record true and holds build claims.

Usage is recomputed from the node's instances on every refresh and adjusted on each claim,
abort and removal: CPU, RAM and disk from the flavors, NUMA usage (pinned CPUs, memory and
pages per cell) from the instances' fitted NUMA topologies, and PCI devices from the
devices the instances hold (:class:`minisched.pci.manager.PciDevTracker`). With
``[placement] enabled``, each refresh also brings the node's resource provider in Placement
up to date (:mod:`minisched.compute.provider_report`).
"""
import logging
import threading

from oslo_utils import uuidutils

from minisched.compute import claims
from minisched.compute import provider_report
from minisched.compute import stats as stats_mod
from minisched import exception
from minisched.objects import base as objects_base
from minisched.objects import compute_node as compute_node_obj
from minisched.objects import hv_spec
from minisched.objects import instance as instance_obj
from minisched import objects
from minisched.pci import manager as pci_manager
from minisched.virt import hardware

LOG = logging.getLogger(__name__)

#: Copied from the driver's resource dict onto the node record.
_DRIVER_FIELDS = ('vcpus', 'memory_mb', 'local_gb', 'cpu_info', 'vcpus_used', 'memory_mb_used',
                  'local_gb_used', 'hypervisor_type', 'hypervisor_version',
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
        self.old_resources = {}  # nodename -> the node record as last saved (its primitive)
        self.tracked_instances = set()
        #: nodename -> PciDevTracker of the node's devices.
        self.pci_trackers = {}
        #: nodename -> the NUMA topology the driver reports (no usage), JSON.
        self._driver_numa = {}
        self._lock = threading.RLock()
        #: The nodes' resource providers in Placement, with ``[placement] enabled``.
        self.provider_report = None
        if conf.placement.enabled:
            self.provider_report = provider_report.ProviderReport(conf, host, driver)

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
            # Read before the node takes the driver's counters (usage without reservations
            # nor instances): a read that fails leaves the node's usage as it was, which the
            # claims until the next refresh add to.
            instances = instance_obj.InstanceList.get_by_host_and_node(context, self.host,
                                                                       nodename)
            self._init_compute_node(context, resources)
            self._pci_tracker(nodename, resources).set_hvdevs(
                resources.get('pci_passthrough_devices'), instances)
            self._update_usage_from_instances(nodename, instances)
            self._update(context, self.compute_nodes[nodename])
        if self.provider_report is not None:
            # Outside the lock: Placement's answers never hold up a claim.
            self.provider_report.update(context, self.compute_nodes[nodename])

    def _pci_tracker(self, nodename, resources=None):
        tracker = self.pci_trackers.get(nodename)
        if tracker is None:
            tracker = self.pci_trackers[nodename] = pci_manager.PciDevTracker(self.conf)
        if resources is not None:
            tracker.numa_topology = _numa(resources.get('numa_topology'))
        return tracker

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
        if self.conf.placement.enabled:
            # Nova 34's initial record: the initial_* ratios, which its provider's new
            # inventory gets too; a ratio option set below replaces them.
            for name in _RATIOS:
                setattr(node, name, getattr(self.conf, 'initial_' + name))
        self._copy_resources(node, resources)
        node.uuid = resources.get('uuid') or uuidutils.generate_uuid()
        node.free_ram_mb = node.memory_mb - node.memory_mb_used
        node.free_disk_gb = node.local_gb - node.local_gb_used
        node.current_workload = 0
        node.running_vms = 0
        node.stats = {}
        node.metrics = '[]'
        node.numa_topology = resources.get('numa_topology')
        node.create()
        LOG.info('Compute node record created for %(host)s:%(node)s with uuid: %(uuid)s',
                 {'host': self.host, 'node': node.hypervisor_hostname, 'uuid': node.uuid})
        return node

    def _copy_resources(self, node, resources):
        self._driver_numa[resources['hypervisor_hostname']] = resources.get('numa_topology')
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
        numa_topology = _numa(self._driver_numa.get(nodename))
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
            numa_topology = _numa_usage(numa_topology, instance, free=False)
        self._set_usage(node, node_stats, memory_used, disk_used, vcpus_used)
        self._set_numa_pci(node, numa_topology)

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

    def _set_numa_pci(self, node, numa_topology):
        """Write the node's NUMA usage and its free PCI device pools into the record."""
        raw = numa_topology._to_json() if numa_topology is not None else None
        if 'numa_topology' not in node or node.numa_topology != raw:
            node.numa_topology = raw
        pools = self._pci_tracker(node.hypervisor_hostname).stats.to_device_pools_obj()
        # A claim leaves the pools it emptied listed with no device; a refresh rebuilds them
        # without: reporting neither keeps the record from changing for nothing.
        pools.objects = [pool for pool in pools if pool.count]
        current = node.pci_device_pools if 'pci_device_pools' in node else None
        if current is None or _pool_dicts(current) != _pool_dicts(pools):
            pools.obj_reset_changes(recursive=True)  # the node's field change is the change
            node.pci_device_pools = pools

    def _update(self, context, node):
        """Save only when something other than ``updated_at`` changed (not a heartbeat).

        As Nova's ``_resource_change``, the node is compared with its copy as last saved, not
        by its dirty fields: every refresh first copies the driver's own usage counters and
        then recomputes them from the instances, which leaves them dirty but unchanged.
        """
        nodename = node.hypervisor_hostname
        old = self.old_resources.get(nodename)
        if old is not None and old == objects_base.comparable_primitive(node, ['updated_at']):
            return
        node.save()
        # Its primitive, not a copy of it: the copy cost ten times as much (0.7 ms a claim).
        self.old_resources[nodename] = objects_base.comparable_primitive(node, ['updated_at'])

    # -- claims ---------------------------------------------------------------------------

    def instance_claim(self, context, instance, nodename, limits=None, save=None):
        """Reserve ``instance``'s resources on ``nodename``; raises ComputeResourcesUnavailable.

        On success the instance records its host and node, its NUMA topology as fitted to the
        node (host CPUs pinned) and the PCI devices handed to it, in one save: ``save()``
        (``instance.save()`` by default; the builder's also writes the start of the spawn,
        conditionally). A save that raises leaves nothing claimed. Returns a
        :class:`~minisched.compute.claims.Claim` (a context manager that gives the resources
        back if the block raises).
        """
        with self._lock:
            node = self.compute_nodes.get(nodename)
            if node is None:
                raise exception.ComputeResourcesUnavailable(
                    reason='node %s is not known to this compute' % nodename)
            counted = instance.uuid in self.tracked_instances
            if counted:
                # Counted by a refresh since an earlier try of this claim, whose save was
                # written but whose answer was lost: claimed afresh, counted once.
                self._apply_instance(node, instance, sign=-1)
            try:
                claim = self._claim_and_save(instance, node, limits, save)
            except Exception:
                if counted:  # not this claim's to give back (a refresh fixes its devices)
                    self._apply_instance(node, instance, sign=1)
                raise
            self._apply_instance(node, instance, sign=1)
            self._update(context, node)
            return claim

    def _claim_and_save(self, instance, node, limits, save):
        pci_tracker = self._pci_tracker(node.hypervisor_hostname)
        claim = claims.Claim(self, instance, node.hypervisor_hostname, node, limits,
                             pci_stats=pci_tracker.stats)
        if claim.claimed_numa_topology is not None:
            instance.numa_topology = claim.claimed_numa_topology
        pci_tracker.claim_instance(instance, claim.claimed_numa_topology)
        instance.host = self.host
        instance.node = node.hypervisor_hostname
        instance.launched_on = self.host
        try:
            (save or instance.save)()
        except Exception:
            pci_tracker.free_instance(instance)
            raise
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
        if node.obj_attr_is_set('disk_available_least') and \
                node.disk_available_least is not None:
            # The driver measured it before this claim (or free): what the claim promises is
            # no longer available, as free_disk_gb says. Left as it was, it exceeded
            # free_disk_gb until the next refresh, and every scheduler refresh warned that
            # the host "has more disk space than database expected".
            node.disk_available_least -= disk_used - node.local_gb_used
        if sign > 0:
            self.tracked_instances.add(instance.uuid)
            node_stats.update_stats_for_instance(instance)
        else:
            self.tracked_instances.discard(instance.uuid)
            node_stats.update_stats_for_instance(instance, is_removed=True)
            self._pci_tracker(node.hypervisor_hostname).free_instance(instance)
        self._set_usage(node, node_stats, memory_used, disk_used, vcpus_used)
        numa_topology = node.numa_topology if 'numa_topology' in node else None
        self._set_numa_pci(node, _numa_usage(_numa(numa_topology), instance, free=sign < 0))

    def build_failed(self, nodename):
        if self.conf.compute.consecutive_build_service_disable_threshold:
            self.stats[nodename].build_failed()

    def build_succeeded(self, nodename):
        if self.conf.compute.consecutive_build_service_disable_threshold:
            self.stats[nodename].build_succeeded()


def _pool_dicts(pools):
    return [pool.to_dict() for pool in pools]


def _numa(raw):
    """A NUMATopology from a record's JSON (None for none)."""
    return objects.NUMATopology.obj_from_db_obj(raw) if raw else None


def _numa_usage(host_topology, instance, free):
    """The host topology with ``instance``'s NUMA usage added (or, ``free``, removed)."""
    instance_topology = instance.numa_topology if 'numa_topology' in instance else None
    if host_topology is None or not instance_topology:
        return host_topology
    return hardware.numa_usage_from_instance_numa(host_topology, instance_topology, free=free)
