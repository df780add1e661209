"""The remotable methods Nova's InstanceNUMATopology, InstancePCIRequests and PciDevice(List)
have, over what minisched's instance row keeps (a real SQLite cell database)."""
from minisched import exception
from minisched import objects
from tests.unit import base as test_base
from tests.unit import fakes
from tests.unit.pci import fakes as pci_fakes
from tests.unit import sqlite_databases

uuids = test_base.uuids


class TestInstanceExtras(sqlite_databases.SqliteDatabases, test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.use_databases()

    def _instance(self, **values):
        instance = objects.Instance(self.ctxt, uuid=uuids.instance, project_id='p',
                                    user_id='u', flavor=fakes.fake_flavor(), **values)
        instance.create()
        return instance

    def test_numa_topology_create_and_get(self):
        self._instance(numa_topology=None)
        get = objects.InstanceNUMATopology.get_by_instance_uuid
        self.assertIsNone(get(self.ctxt, uuids.instance))
        topology = objects.InstanceNUMATopology(self.ctxt, instance_uuid=uuids.instance, cells=[
            objects.InstanceNUMACell(id=0, cpuset={0, 1}, pcpuset=set(), memory=512)])
        topology.create()
        got = get(self.ctxt, uuids.instance)
        self.assertEqual(({0, 1}, 512), (got.cells[0].cpuset, got.cells[0].memory))
        # The instance reads the same topology back.
        self.assertEqual({0, 1}, objects.Instance.get_by_uuid(
            self.ctxt, uuids.instance).numa_topology.cells[0].cpuset)
        self.assertRaises(exception.NumaTopologyNotFound, get, self.ctxt, uuids.other)

    def test_pci_requests_get(self):
        get = objects.InstancePCIRequests.get_by_instance_uuid
        self.assertEqual([], get(self.ctxt, uuids.instance).requests)  # no such instance
        request = objects.InstancePCIRequest(count=1, spec=[{'vendor_id': '8086'}],
                                             alias_name='a1', request_id=uuids.req)
        self._instance(pci_requests=objects.InstancePCIRequests(requests=[request]))
        got = get(self.ctxt, uuids.instance)
        self.assertEqual([(1, 'a1', uuids.req)], [(r.count, r.alias_name, r.request_id)
                                                  for r in got.requests])

    def test_pci_devices_of_an_instance(self):
        get = objects.PciDeviceList.get_by_instance_uuid
        self.assertEqual([], get(self.ctxt, uuids.instance).objects)
        device = objects.PciDevice.create(None, pci_fakes.dev_dict('0000:01:00.0'))
        self._instance(pci_devices=objects.PciDeviceList(objects=[device]))
        self.assertEqual(['0000:01:00.0'], [d.address for d in get(self.ctxt, uuids.instance)])

    def test_device_table_methods_say_they_are_not_supported(self):
        device = objects.PciDevice.create(self.ctxt, pci_fakes.dev_dict('0000:01:00.0'))
        for call in (device.save,
                     lambda: objects.PciDevice.get_by_dev_id(self.ctxt, 1),
                     lambda: objects.PciDevice.get_by_dev_addr(self.ctxt, 1, '0000:01:00.0'),
                     lambda: objects.PciDeviceList.get_by_compute_node(self.ctxt, 1),
                     lambda: objects.PciDeviceList.get_by_parent_address(
                         self.ctxt, 1, '0000:01:00.0')):
            with self.assertRaises(exception.ObjectMethodNotSupported) as caught:
                call()
            self.assertIn('no pci_devices table', str(caught.exception))
