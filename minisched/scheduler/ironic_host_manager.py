"""Host manager for baremetal-style nodes: a node is consumed whole, all or nothing.

Nova's IronicHostManager (shipped until Stein): nodes whose hypervisor_type is ``ironic``
get an :class:`IronicNodeState`, which takes the node's reported usage as is and, when an
instance lands on it, marks all of it used. With ``[filter_scheduler]
use_baremetal_filters`` the ``baremetal_enabled_filters`` (Exact Ram/Core/Disk) replace
``enabled_filters``. Other nodes behave as with the default host manager.
"""
import logging

from minisched.objects import fields
from minisched.scheduler import host_manager
from minisched.scheduler import host_state

LOG = logging.getLogger(__name__)


class IronicNodeState(host_state.HostState):
    """A baremetal node's state: no overcommit, no partial use."""

    def _update_from_compute_node(self, compute):
        if 'free_disk_gb' not in compute or compute.free_disk_gb is None:
            LOG.debug('Ignoring compute node %s as its usage has not been updated yet.',
                      compute.uuid)
            return
        self.vcpus_total = compute.vcpus
        self.vcpus_used = compute.vcpus_used
        self.free_ram_mb = compute.free_ram_mb
        self.total_usable_ram_mb = compute.memory_mb
        self.free_disk_mb = compute.free_disk_gb * 1024
        self.stats = compute.stats or {}  # shared, as Nova does: never changed in place
        self.uuid = compute.uuid
        self.total_usable_disk_gb = compute.local_gb
        self.hypervisor_type = compute.hypervisor_type
        self.hypervisor_version = compute.hypervisor_version
        self.hypervisor_hostname = compute.hypervisor_hostname
        self.cpu_info = compute.cpu_info
        self.supported_instances = [spec.to_list() for spec in compute.supported_hv_specs or []]
        self.cpu_allocation_ratio = compute.cpu_allocation_ratio
        self.ram_allocation_ratio = compute.ram_allocation_ratio
        self.disk_allocation_ratio = compute.disk_allocation_ratio
        self.updated = compute.updated_at

    def _consume(self, spec_obj, limits):
        """Consume the node's entire resources, whatever the instance asked for."""
        self.free_ram_mb = 0
        self.free_disk_mb = 0
        self.vcpus_used = self.vcpus_total

    def _unconsume(self, spec_obj):
        """A whole node comes back whole: as its last record says."""
        self.updated = self.consumed_at = None
        if self.last_compute is not None:
            self._update_from_compute_node(self.last_compute)


def _is_ironic(row):
    return (row.get('hypervisor_type') or '').lower() == fields.HVType.IRONIC


class IronicHostManager(host_manager.HostManager):
    """HostManager that knows baremetal nodes."""

    def _enabled_filter_names(self):
        fs_conf = self.conf.filter_scheduler
        if fs_conf.use_baremetal_filters:
            return fs_conf.baremetal_enabled_filters
        return super()._enabled_filter_names()

    def _new_host_state(self, row, cell_uuid):
        cls = IronicNodeState if _is_ironic(row) else host_state.HostState
        return cls(row['host'], row['hypervisor_hostname'], cell_uuid, table=self.table)

    def _instance_dict_for(self, host, row=None):
        """Baremetal nodes carry no instance info (as Nova's)."""
        if row is not None and _is_ironic(row):
            return {}
        return super()._instance_dict_for(host, row)
