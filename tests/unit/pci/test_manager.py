"""PciDevTracker: devices rebuilt from the hypervisor and the instances holding them; claims
hand out free devices only, and PF/VF families block each other."""
from oslo_serialization import jsonutils

from minisched import exception
from minisched import objects
from minisched.pci import manager
from tests.unit import base
from tests.unit.pci import fakes as pci_fakes

NIC = '{"name": "nic", "vendor_id": "8086", "product_id": "1520"}'
VF = '{"name": "vf", "vendor_id": "8086", "product_id": "154c", "device_type": "type-VF"}'
PF = '{"name": "pf", "vendor_id": "8086", "product_id": "1572", "device_type": "type-PF"}'


def _hypervisor(*dicts):
    return jsonutils.dumps([{k: v for k, v in d.items() if k != 'compute_node_id'}
                            for d in dicts])


class TestPciDevTracker(base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(group='pci', device_spec=pci_fakes.ALL_DEVICES, alias=[NIC, VF, PF])
        self.tracker = manager.PciDevTracker(self.conf)

    def _instance(self, name, alias=None, devices=()):
        requests = objects.InstancePCIRequests(requests=[])
        if alias:
            flavor = objects.Flavor(extra_specs={'pci_passthrough:alias': alias})
            from minisched.pci import request
            requests = request.get_pci_requests_from_flavor(flavor, conf=self.conf)
        return objects.Instance(uuid=getattr(base.uuids, name), vm_state='active',
                                pci_requests=requests,
                                pci_devices=objects.PciDeviceList(objects=list(devices)))

    def _free(self):
        return sorted(dev.address for dev in self.tracker.stats.get_free_devs())

    def test_devices_held_by_instances_are_not_free(self):
        nics = _hypervisor(*(pci_fakes.dev_dict('0000:81:00.%d' % i) for i in range(3)))
        self.tracker.set_hvdevs(nics, [])
        holder = self._instance('a', 'nic:2')
        self.tracker.claim_instance(holder, None)
        self.assertEqual(['0000:81:00.2'], self._free())
        # A refresh rebuilds from the hypervisor and the stored instance: same answer.
        self.tracker.set_hvdevs(nics, [holder])
        self.assertEqual(['0000:81:00.2'], self._free())
        with self.assertRaises(exception.ComputeResourcesUnavailable):
            self.tracker.claim_instance(self._instance('b', 'nic:2'), None)
        self.tracker.free_instance(holder)
        self.assertEqual(['0000:81:00.0', '0000:81:00.1', '0000:81:00.2'], self._free())

    def test_a_device_held_twice_is_given_to_the_first_holder_only(self):
        nics = _hypervisor(pci_fakes.dev_dict('0000:81:00.0'))
        self.tracker.set_hvdevs(nics, [])
        first = self._instance('a', 'nic:1')
        self.tracker.claim_instance(first, None)
        second = self._instance('b', devices=list(first.pci_devices))
        with self.assertLogs('minisched.pci.manager', 'WARNING') as logs:
            self.tracker.set_hvdevs(nics, [first, second])
        self.assertIn(second.uuid, logs.output[0])
        self.assertEqual({first.uuid}, {dev.instance_uuid for dev in self.tracker.pci_devs})

    def test_taking_a_pf_blocks_its_vfs_and_a_vf_blocks_its_pf(self):
        family = _hypervisor(
            pci_fakes.dev_dict('0000:81:00.0', product_id='1572', dev_type='type-PF'),
            pci_fakes.dev_dict('0000:81:00.1', product_id='154c', dev_type='type-VF',
                               parent_addr='0000:81:00.0'),
            pci_fakes.dev_dict('0000:81:00.2', product_id='154c', dev_type='type-VF',
                               parent_addr='0000:81:00.0'))
        self.tracker.set_hvdevs(family, [])
        vf_user = self._instance('a', 'vf:1')
        self.tracker.claim_instance(vf_user, None)
        other_vf = ({'0000:81:00.1', '0000:81:00.2'} - {vf_user.pci_devices[0].address}).pop()
        self.assertEqual([other_vf], self._free())
        with self.assertRaises(exception.ComputeResourcesUnavailable):
            self.tracker.claim_instance(self._instance('b', 'pf:1'), None)
        self.tracker.set_hvdevs(family, [vf_user])  # the same after a refresh
        self.assertEqual([other_vf], self._free())
        self.tracker.free_instance(vf_user)
        self.assertEqual(['0000:81:00.0', '0000:81:00.1', '0000:81:00.2'], self._free())

    def test_devices_gone_from_the_hypervisor_are_dropped(self):
        self.tracker.set_hvdevs(_hypervisor(pci_fakes.dev_dict('0000:81:00.0')), [])
        holder = self._instance('a', 'nic:1')
        self.tracker.claim_instance(holder, None)
        with self.assertLogs('minisched.pci.manager', 'WARNING'):
            self.tracker.set_hvdevs(_hypervisor(), [holder])
        self.assertEqual([], self.tracker.pci_devs)

    def test_instance_without_requests_gets_nothing(self):
        self.tracker.set_hvdevs(_hypervisor(pci_fakes.dev_dict('0000:81:00.0')), [])
        instance = self._instance('a')
        self.tracker.claim_instance(instance, None)
        self.assertEqual([], list(instance.pci_devices))
        self.assertEqual(['0000:81:00.0'], self._free())
