"""The fake virt driver: node names, resources from [fake_driver], instances kept in memory."""
from unittest import mock

from oslo_serialization import jsonutils

from minisched import context
from minisched import exception
from minisched import objects
from minisched.objects import instance as instance_obj
from minisched.virt import driver as virt_driver
from minisched.virt import fake
from tests.unit import base
from tests.unit import fakes


def _instance(node='host1', uuid=None, **flavor):
    sizes = dict(memory_mb=512, vcpus=1, root_gb=10, ephemeral_gb=5)
    sizes.update(flavor)
    return objects.Instance(uuid=uuid or base.uuids.instance, node=node,
                            flavor=fakes.fake_flavor(**sizes))


class TestFakeDriver(base.TestCase):

    def setUp(self):
        super().setUp()
        self.ctxt = context.get_admin_context()

    def _driver(self, host='host1', **fake_opts):
        if fake_opts:
            self.flags(group='fake_driver', **fake_opts)
        driver = fake.FakeDriver(self.conf)
        driver.init_host(host)
        return driver

    def _spawn(self, driver, instance):
        driver.spawn(self.ctxt, instance, None, [], 'password', {})

    def test_single_node_is_named_after_the_host(self):
        self.assertEqual(['host1'], self._driver('host1').get_available_nodes())

    def test_host_named_compute_gets_nova_s_fake_mini_node(self):
        self.assertEqual(['fake-mini'], self._driver('compute').get_available_nodes())

    def test_configured_nodes_replace_the_default(self):
        driver = self._driver('host1', nodes=['n1', 'n2'])
        self.assertEqual(['n1', 'n2'], driver.get_available_nodes(refresh=True))

    def test_unknown_node_reports_nothing(self):
        self.assertEqual({}, self._driver().get_available_resource('other'))

    def test_resources_come_from_the_options(self):
        driver = self._driver(vcpus=8, memory_mb=4096, local_gb=200, hypervisor_type='kvm',
                              hypervisor_version='2.3.4', cpu_arch='aarch64')
        res = driver.get_available_resource('host1')
        self.assertEqual((8, 4096, 200, 0, 0, 0),
                         (res['vcpus'], res['memory_mb'], res['local_gb'], res['vcpus_used'],
                          res['memory_mb_used'], res['local_gb_used']))
        self.assertEqual(('kvm', 2003004, 'host1'),
                         (res['hypervisor_type'], res['hypervisor_version'],
                          res['hypervisor_hostname']))
        self.assertEqual([('aarch64', 'kvm', 'hvm')], res['supported_instances'])
        self.assertIsNone(res['numa_topology'])
        cpu_info = jsonutils.loads(res['cpu_info'])
        self.assertEqual(('aarch64', 'Nehalem', 'Intel'),
                         (cpu_info['arch'], cpu_info['model'], cpu_info['vendor']))
        self.assertEqual({'cores': 1, 'threads': 1, 'sockets': 8}, cpu_info['topology'])

    def test_host_sizes_override_the_sizes_for_that_host(self):
        sizes = {'host1': '4/2048/50', 'other': '1/1/1'}
        res = self._driver('host1', host_sizes=sizes).get_available_resource('host1')
        self.assertEqual((4, 2048, 50, 50), (res['vcpus'], res['memory_mb'], res['local_gb'],
                                             res['disk_available_least']))
        res = self._driver('host2', host_sizes=sizes).get_available_resource('host2')
        self.assertEqual(16, res['vcpus'])

    def test_malformed_host_sizes_are_a_config_error(self):
        for value in ('4/2048', 'a/b/c', '1/2/3/4'):
            with self.assertRaises(exception.ConfigInvalid, msg=value):
                self._driver('host1', host_sizes={'host1': value})

    def test_default_sizes(self):
        res = self._driver().get_available_resource('host1')
        self.assertEqual((16, 32768, 1024, 1000), (res['vcpus'], res['memory_mb'],
                                                   res['local_gb'], res['hypervisor_version']))

    def test_spawn_adds_usage_and_disk_available_least_is_real_free_disk(self):
        driver = self._driver(local_gb=100)
        self._spawn(driver, _instance(memory_mb=1024, vcpus=2, root_gb=10, ephemeral_gb=5))
        res = driver.get_available_resource('host1')
        self.assertEqual((2, 1024, 15), (res['vcpus_used'], res['memory_mb_used'],
                                         res['local_gb_used']))
        self.assertEqual(85, res['disk_available_least'])

    def test_usage_is_per_node(self):
        driver = self._driver(nodes=['n1', 'n2'])
        self._spawn(driver, _instance(node='n1', vcpus=3))
        self.assertEqual(3, driver.get_available_resource('n1')['vcpus_used'])
        self.assertEqual(0, driver.get_available_resource('n2')['vcpus_used'])

    def test_spawned_instance_runs_and_is_listed(self):
        driver = self._driver()
        instance = _instance()
        self._spawn(driver, instance)
        self.assertEqual(instance_obj.RUNNING, driver.get_info(instance).state)
        self.assertEqual([instance.uuid], driver.list_instances())
        self.assertEqual([instance.uuid], driver.list_instance_uuids())
        self.assertEqual(1, driver.get_num_instances())
        self.assertTrue(driver.instance_exists(instance))

    def test_power_off_on_and_reboot(self):
        driver = self._driver()
        instance = _instance()
        self._spawn(driver, instance)
        driver.power_off(instance)
        self.assertEqual(instance_obj.SHUTDOWN, driver.get_info(instance).state)
        driver.reboot(self.ctxt, instance, None, 'SOFT')
        self.assertEqual(instance_obj.RUNNING, driver.get_info(instance).state)

    def test_destroy_frees_usage_and_ignores_unknown_instances(self):
        driver = self._driver()
        instance = _instance()
        self._spawn(driver, instance)
        driver.destroy(self.ctxt, instance)
        driver.destroy(self.ctxt, instance)
        self.assertEqual([], driver.list_instances())
        self.assertEqual(0, driver.get_available_resource('host1')['memory_mb_used'])
        self.assertFalse(driver.instance_exists(instance))

    def test_get_info_of_unknown_instance_raises_not_found(self):
        with self.assertRaises(exception.InstanceNotFound):
            self._driver().get_info(_instance())

    def test_image_type_exclude_list_withdraws_only_those_image_traits(self):
        driver = self._driver()
        before = driver.capabilities_as_traits()
        self.assertTrue(before['COMPUTE_IMAGE_TYPE_RAW'])
        self.flags(group='compute', image_type_exclude_list=['raw', 'qcow2'])
        after = driver.capabilities_as_traits()
        self.assertFalse(after['COMPUTE_IMAGE_TYPE_RAW'])
        self.assertFalse(after['COMPUTE_IMAGE_TYPE_VHD'])  # unsupported stays unsupported
        self.assertEqual({k: v for k, v in before.items() if k != 'COMPUTE_IMAGE_TYPE_RAW'},
                         {k: v for k, v in after.items() if k != 'COMPUTE_IMAGE_TYPE_RAW'})

    def test_abort_failure_mode(self):
        driver = self._driver(spawn_failure='abort')
        with self.assertRaises(exception.BuildAbortException):
            self._spawn(driver, _instance())
        self.assertEqual([], driver.list_instances())

    def test_reschedule_failure_mode_fails_every_spawn(self):
        driver = self._driver(spawn_failure='reschedule')
        for _attempt in range(2):
            with self.assertRaises(exception.ComputeResourcesUnavailable):
                self._spawn(driver, _instance())

    def test_first_reschedule_fails_only_the_first_spawn_of_each_instance(self):
        driver = self._driver(spawn_failure='first_reschedule')
        one, two = _instance(uuid=base.uuids.one), _instance(uuid=base.uuids.two)
        with self.assertRaises(exception.ComputeResourcesUnavailable):
            self._spawn(driver, one)
        self._spawn(driver, one)
        with self.assertRaises(exception.ComputeResourcesUnavailable):
            self._spawn(driver, two)
        self.assertEqual([one.uuid], driver.list_instances())

    def test_spawn_delay_sleeps(self):
        driver = self._driver(spawn_delay_seconds=0.25)
        with mock.patch.object(fake.time, 'sleep') as sleep:
            self._spawn(driver, _instance())
        sleep.assert_called_once_with(0.25)


class TestLoadComputeDriver(base.TestCase):

    def test_fake_driver_is_loaded_by_its_entry_point_name(self):
        self.flags(compute_driver='fake.FakeDriver')
        driver = virt_driver.load_compute_driver(self.conf)
        self.assertIsInstance(driver, fake.FakeDriver)
        self.assertIs(self.conf, driver.conf)

    def test_unknown_driver_names_the_installed_ones(self):
        with self.assertRaises(exception.VirtDriverNotFound) as ctx:
            virt_driver.load_compute_driver(self.conf, name='libvirt.LibvirtDriver')
        self.assertIn('libvirt.LibvirtDriver', str(ctx.exception))
        self.assertIn('fake.FakeDriver', str(ctx.exception))


class TestFakeNUMAAndPCI(base.TestCase):
    """[fake_driver] numa_nodes/cpu_threads/hugepages/pci_devices and [compute] CPU sets."""

    def _resources(self, host='host1', compute=None, **fake_opts):
        self.flags(group='fake_driver', **fake_opts)
        self.flags(group='compute', **(compute or {}))
        driver = fake.FakeDriver(self.conf)
        driver.init_host(host)
        return driver.get_available_resource(host)

    def _topology(self, **kw):
        raw = self._resources(**kw)['numa_topology']
        return objects.NUMATopology.obj_from_db_obj(raw)

    def test_no_numa_nodes_reports_no_topology_and_no_device(self):
        resources = self._resources()
        self.assertIsNone(resources['numa_topology'])
        self.assertEqual([], jsonutils.loads(resources['pci_passthrough_devices']))

    def test_cells_split_cpus_memory_and_siblings(self):
        topology = self._topology(vcpus=8, memory_mb=8192, numa_nodes=2, cpu_threads=2,
                                  hugepages=['2048:512'])
        self.assertEqual([0, 1], [cell.id for cell in topology.cells])
        cell = topology.cells[1]
        self.assertEqual({4, 5, 6, 7}, cell.cpuset)
        self.assertEqual({4, 5, 6, 7}, cell.pcpuset)  # neither CPU set given: both
        self.assertEqual([{4, 5}, {6, 7}], [set(sib) for sib in cell.siblings])
        self.assertEqual(4096, cell.memory)
        self.assertEqual([(4, (4096 - 1024) * 256), (2048, 512)],
                         [(page.size_kb, page.total) for page in cell.mempages])
        self.assertTrue(topology.has_threads)
        self.assertEqual((0, 0, set()), (cell.cpu_usage, cell.memory_usage, cell.pinned_cpus))

    def test_cpu_sets_split_shared_and_dedicated_cpus(self):
        topology = self._topology(vcpus=8, memory_mb=4096, numa_nodes=2,
                                  compute={'cpu_shared_set': '0-1,4-5',
                                           'cpu_dedicated_set': '2-3,6-7'})
        self.assertEqual(({0, 1}, {2, 3}), (topology.cells[0].cpuset, topology.cells[0].pcpuset))
        only_shared = self._topology(vcpus=8, memory_mb=4096, numa_nodes=2,
                                     compute={'cpu_shared_set': '0-7',
                                              'cpu_dedicated_set': None})
        self.assertEqual(set(), only_shared.cells[0].pcpuset)
        only_dedicated = self._topology(vcpus=8, memory_mb=4096, numa_nodes=2,
                                        compute={'cpu_shared_set': None,
                                                 'cpu_dedicated_set': '0-7'})
        self.assertEqual((set(), {0, 1, 2, 3}), (only_dedicated.cells[0].cpuset,
                                                 only_dedicated.cells[0].pcpuset))

    def test_bad_numa_settings_stop_the_driver_with_the_reason(self):
        for fake_opts, compute, words in (
                ({'vcpus': 6, 'numa_nodes': 4}, {}, 'multiple of numa_nodes'),
                ({'vcpus': 8, 'memory_mb': 2048, 'numa_nodes': 2, 'hugepages': ['2048:600']},
                 {}, 'need more than the 1024 MB'),
                ({'numa_nodes': 1, 'hugepages': ['2048']}, {}, 'size_kb:count'),
                ({'numa_nodes': 1}, {'cpu_dedicated_set': '0-99'}, 'does not have'),
                ({'numa_nodes': 1}, {'cpu_shared_set': '0-3', 'cpu_dedicated_set': '3-5'},
                 'overlap'),
                ({'numa_nodes': 1}, {'cpu_shared_set': 'zero'}, 'cpu_shared_set')):
            with self.subTest(fake_opts=fake_opts, compute=compute):
                self.flags(group='compute', cpu_shared_set=None, cpu_dedicated_set=None)
                with self.assertRaises(exception.ConfigInvalid) as caught:
                    self._resources(compute=compute, **fake_opts)
                self.assertIn(words, caught.exception.format_message())

    def test_pci_devices_are_reported_as_a_libvirt_host_would(self):
        resources = self._resources(pci_devices=[
            '[{"vendor_id": "8086", "product_id": "1520", "count": 2, "numa_node": 1}]',
            '{"vendor_id": "10de", "product_id": "1eb8"}'])
        devices = jsonutils.loads(resources['pci_passthrough_devices'])
        self.assertEqual(['0000:81:00.0', '0000:81:00.1', '0000:82:00.0'],
                         [dev['address'] for dev in devices])
        self.assertEqual([1, 1, None], [dev['numa_node'] for dev in devices])
        self.assertEqual({'type-PCI'}, {dev['dev_type'] for dev in devices})
        self.assertEqual('label_10de_1eb8', devices[2]['label'])

    def test_bad_pci_device_entries_are_refused_with_the_entry(self):
        for entry, words in (('{"vendor_id": "8086"}', "'product_id'"),
                             ('[1, 2]', 'not a JSON object'),
                             ('{"vendor_id": 8086', 'Expecting'),
                             ('{"vendor_id": "8086", "product_id": "1", "colour": "red"}',
                              'unknown keys colour'),
                             ('{"vendor_id": "8086", "product_id": "1", "count": -1}',
                              'negative')):
            with self.subTest(entry=entry):
                with self.assertRaises(exception.ConfigInvalid) as caught:
                    self._resources(pci_devices=[entry])
                self.assertIn(words, caught.exception.format_message())
                self.assertIn(entry, caught.exception.format_message())
