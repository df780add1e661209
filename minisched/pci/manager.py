"""A compute node's PCI devices: which the hypervisor offers, which instances hold, claims.

Nova's ``PciDevTracker`` keeps devices in the ``pci_devices`` table and syncs them with the
hypervisor. minisched's computes have no database access and no such table: each refresh
rebuilds the devices from the hypervisor's list (filtered and tagged by ``[pci]
device_spec``, as in Nova) and marks allocated the devices the node's instances hold in
their stored ``pci_devices`` (the claim writes them there in the same save that records
the instance's host). The free devices make the pools (:class:`PciDeviceStats`) that the
claim consumes and that the compute node record reports to the schedulers.
"""
import copy
import logging

from oslo_serialization import jsonutils

from minisched import exception
from minisched.objects import fields
from minisched.objects import pci_device as pci_device_obj
from minisched.pci import stats as stats_mod
from minisched.pci import whitelist

LOG = logging.getLogger(__name__)

#: Instances in these states hold no device (as for CPU and RAM usage).
_RELEASED_STATES = ('deleted', 'shelved_offloaded')


def held_devices(instance):
    """The PciDevices ``instance`` holds (its ``pci_devices``; none when unset)."""
    devices = instance.pci_devices if 'pci_devices' in instance else None
    return list(devices) if devices else []


class PciDevTracker:
    """The PCI devices of one compute node and their owners.

    :param conf: the compute's ConfigOpts (``[pci] device_spec`` is read once).
    """

    def __init__(self, conf):
        self.dev_filter = whitelist.Whitelist(conf.pci.device_spec)
        #: The node's NUMA topology (for socket affinity), set by the resource tracker.
        self.numa_topology = None
        #: Every assignable device of the node, whatever its status.
        self.pci_devs = []
        self.stats = stats_mod.PciDeviceStats(None, dev_filter=self.dev_filter)

    def set_hvdevs(self, devices_json, instances):
        """Rebuild the devices from the hypervisor's ``pci_passthrough_devices`` JSON and
        the devices ``instances`` (the node's) hold; then the pools of the free ones."""
        devices = []
        for index, dev_dict in enumerate(jsonutils.loads(devices_json) if devices_json else []):
            spec = self.dev_filter.device_assignable(dev_dict)
            if spec is None:
                continue
            spec.enhanced_pci_device_with_spec_tags(dev_dict)
            device = pci_device_obj.PciDevice.create(None, dev_dict)
            device.id = index + 1  # no table: the hypervisor's order numbers them
            device.instance_uuid = device.request_id = None
            devices.append(device)
        _link_families(devices)
        by_address = {device.address: device for device in devices}
        for instance in instances:
            if instance.vm_state in _RELEASED_STATES:
                continue
            holder = {'uuid': instance.uuid, 'pci_devices': []}
            for held in held_devices(instance):
                device = by_address.get(held.address)
                if device is None or not device.is_available():
                    LOG.warning('Instance %(uuid)s holds PCI device %(address)s, which the '
                                'hypervisor no longer offers or another instance holds.',
                                {'uuid': instance.uuid, 'address': held.address})
                    continue
                device.allocate(holder)
                device.request_id = held.request_id
        self.pci_devs = devices
        self.stats = stats_mod.PciDeviceStats(self.numa_topology, dev_filter=self.dev_filter)
        for device in devices:
            if device.status == fields.PciDeviceStatus.AVAILABLE:
                self.stats.add_device(device)

    def claim_instance(self, instance, instance_numa_topology):
        """Hand ``instance`` devices for its PCI requests and record them in its
        ``pci_devices`` (saved by the caller); raises ComputeResourcesUnavailable."""
        requests = instance.pci_requests if 'pci_requests' in instance else None
        requests = requests.requests if requests else []
        if not requests:
            return
        cells = instance_numa_topology.cells if instance_numa_topology else None
        try:
            devices = self.stats.consume_requests(requests, numa_cells=cells)
        except exception.PciDeviceRequestFailed as exc:
            raise exception.ComputeResourcesUnavailable(reason=exc.format_message())
        holder = {'uuid': instance.uuid, 'pci_devices': []}
        for device in devices:
            device.claim(instance.uuid)
            device.allocate(holder)
        instance.pci_devices = pci_device_obj.PciDeviceList(
            objects=[_detached(device) for device in devices])

    def free_instance(self, instance):
        """Give back every device ``instance`` holds on this node (the instance keeps its
        ``pci_devices`` record until it is saved again)."""
        for device in self.pci_devs:
            if device.instance_uuid == instance.uuid and device.status in (
                    fields.PciDeviceStatus.ALLOCATED, fields.PciDeviceStatus.CLAIMED):
                self.stats.free_device(device)


def _link_families(devices):
    """Link each VF (or vDPA device) to its PF and back, by ``parent_addr``."""
    by_address = {device.address: device for device in devices}
    for device in devices:
        parent = by_address.get(device.parent_addr) if device.parent_addr else None
        if parent is not None:
            device.parent_device = parent
            parent.child_devices.append(device)


def _detached(device):
    """A copy of ``device`` to store with the instance (without the family links)."""
    stored = copy.copy(device)
    stored.parent_device = None
    stored.child_devices = []
    return stored
