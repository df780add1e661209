"""Factories for PCI tests: devices as a hypervisor reports them, linked PF/VF trees,
requests, and duck-typed NUMA cells (only ``id`` and ``socket`` are read)."""
import types

from minisched.objects import instance_pci_requests
from minisched.objects import pci_device
from minisched.pci import stats
from minisched.pci import whitelist

#: Admits every device, tagging nothing.
ALL_DEVICES = ['{}']


def dev_dict(address, vendor_id='8086', product_id='1520', dev_type='type-PCI',
             numa_node=0, parent_addr=None, **extra):
    return dict(address=address, vendor_id=vendor_id, product_id=product_id,
                dev_type=dev_type, numa_node=numa_node, parent_addr=parent_addr,
                compute_node_id=1, **extra)


def devices(*dicts):
    """PciDevices (ids from 1) with their PF/VF links, as the compute tracker sets them."""
    devs = [pci_device.PciDevice.create(None, dict(d)) for d in dicts]
    parents = {}
    for index, dev in enumerate(devs, 1):
        dev.id = index
    for dev in sorted(devs, key=lambda d: d.address):
        if dev.dev_type == 'type-PF':
            dev.child_devices = []
            parents[dev.address] = dev
        elif dev.dev_type in ('type-VF', 'vdpa'):
            dev.parent_device = parents.get(dev.parent_addr)
            if dev.parent_device:
                dev.parent_device.child_devices.append(dev)
    return devs


def pf_with_vfs(bus, vfs=2, numa_node=0, vf_product='1515', **pf_extra):
    """Dicts of one PF at ``0000:<bus>:00.0`` and ``vfs`` VFs at functions 1..vfs."""
    pf = '0000:%s:00.0' % bus
    return [dev_dict(pf, product_id='1572', dev_type='type-PF', numa_node=numa_node,
                     **pf_extra)] + [
        dev_dict('0000:%s:00.%d' % (bus, fn), product_id=vf_product, dev_type='type-VF',
                 numa_node=numa_node, parent_addr=pf) for fn in range(1, vfs + 1)]


def compute_stats(devs, spec=None, numa_topology=None):
    """A compute-side PciDeviceStats holding ``devs``."""
    result = stats.PciDeviceStats(numa_topology,
                                  dev_filter=whitelist.Whitelist(spec or ALL_DEVICES))
    for dev in devs:
        result.add_device(dev)
    return result


def request(count=1, numa_policy=None, alias_name='alias', **spec):
    kw = {}
    if numa_policy is not None:
        kw['numa_policy'] = numa_policy
    return instance_pci_requests.InstancePCIRequest(
        count=count, spec=[spec], alias_name=alias_name,
        request_id='00000000-0000-0000-0000-%012d' % count, **kw)


def cells(*ids):
    return [types.SimpleNamespace(id=cell_id) for cell_id in ids]


def host_topology(*sockets):
    """Host NUMA cells 0..n-1 on the given sockets."""
    return types.SimpleNamespace(cells=[types.SimpleNamespace(id=i, socket=socket)
                                        for i, socket in enumerate(sockets)])
