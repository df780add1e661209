"""Resource tracker: node record kept true from instances, saved only on change; claims.

The tracker runs as on a compute: every object call goes to a fake conductor that records it.
"""
from minisched.compute import resource_tracker
from minisched import context
from minisched import exception
from minisched import objects
from minisched.objects import instance as instance_obj
from minisched.virt import fake
from tests.unit import base
from tests.unit import fakes

uuids = base.uuids
NODE = 'host1'


class _TrackerTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(my_ip='192.0.2.10')
        self.flags(group='fake_driver', vcpus=8, memory_mb=8192, local_gb=100)
        self.ctxt = context.get_admin_context()
        self.conductor = fakes.fake_indirection(self)
        self.instances = []
        self.created = []
        self.conductor.class_results.update({
            ('ComputeNode', 'get_by_host_and_nodename'): exception.ComputeHostNotFound(
                host='host1'),
            ('InstanceList', 'get_by_host_and_node'):
                lambda *args: objects.InstanceList(objects=list(self.instances)),
        })
        self.conductor.action_results[('ComputeNode', 'create')] = self._record_create
        self.driver = fake.FakeDriver(self.conf)
        self.driver.init_host('host1')
        self.rt = resource_tracker.ResourceTracker(self.conf, 'host1', self.driver)

    def _record_create(self, ctxt, node, method, args, kwargs):
        self.created.append(node.obj_clone())
        return {'id': 1, 'obj_what_changed': set()}, None

    def _instance(self, name='inst', memory_mb=1024, vcpus=1, root_gb=10, ephemeral_gb=0,
                  swap=0, vm_state=instance_obj.ACTIVE, task_state=None, **kw):
        flavor = fakes.fake_flavor(memory_mb=memory_mb, vcpus=vcpus, root_gb=root_gb,
                                   ephemeral_gb=ephemeral_gb, swap=swap)
        values = dict(uuid=getattr(uuids, name), host='host1', node=NODE, vm_state=vm_state,
                      task_state=task_state, os_type='linux', project_id='p1', flavor=flavor)
        values.update(kw)
        instance = objects.Instance(self.ctxt, **values)
        instance.obj_reset_changes()
        return instance

    def _update(self):
        self.rt.update_available_resource(self.ctxt, NODE)
        return self.rt.compute_nodes[NODE]

    def _saves(self):
        return self.conductor.methods('action').count('ComputeNode.save')


class TestNodeRecord(_TrackerTestCase):

    def test_first_update_creates_the_node_from_the_driver(self):
        node = self._update()
        self.assertEqual(1, len(self.created))
        created = self.created[0]
        self.assertEqual(('host1', NODE, 8, 8192, 100, 'fake'),
                         (created.host, created.hypervisor_hostname, created.vcpus,
                          created.memory_mb, created.local_gb, created.hypervisor_type))
        self.assertIn('uuid', created)
        self.assertEqual('192.0.2.10', str(node.host_ip))
        self.assertEqual([['x86_64', 'fake', 'hvm']],
                         [spec.to_list() for spec in node.supported_hv_specs])
        self.assertIs(self.rt.compute_nodes[NODE], node)

    def test_existing_node_is_reused(self):
        existing = objects.ComputeNode(id=3, uuid=uuids.node, host='host1',
                                       hypervisor_hostname=NODE)
        self.conductor.class_results[('ComputeNode', 'get_by_host_and_nodename')] = existing
        self.assertIs(existing, self._update())
        self.assertEqual([], self.created)
        self.assertEqual(uuids.node, existing.uuid)

    def test_empty_host_counts_only_the_reservations(self):
        self.flags(reserved_host_memory_mb=1000, reserved_host_disk_mb=3072,
                   reserved_host_cpus=2)
        node = self._update()
        self.assertEqual((1000, 3, 2), (node.memory_mb_used, node.local_gb_used,
                                        node.vcpus_used))
        self.assertEqual((7192, 97, 0, 0), (node.free_ram_mb, node.free_disk_gb,
                                            node.running_vms, node.current_workload))

    def test_default_reserved_host_memory_is_512(self):
        node = self._update()
        self.assertEqual((512, 0, 0, 7680), (node.memory_mb_used, node.local_gb_used,
                                             node.vcpus_used, node.free_ram_mb))

    def test_usage_is_recomputed_from_instances_not_from_the_driver(self):
        # The hypervisor's own counters are ignored; the instances on (host, node) count.
        self.driver.spawn(self.ctxt, self._instance('ghost', memory_mb=4000), None, [], '', {})
        self.instances = [
            self._instance('a', memory_mb=1024, vcpus=2, root_gb=10, ephemeral_gb=5),
            self._instance('b', memory_mb=2048, vcpus=1, root_gb=20, swap=1024,
                           vm_state=instance_obj.BUILDING, task_state='spawning'),
            self._instance('gone', memory_mb=9999, vm_state=instance_obj.DELETED),
            self._instance('offloaded', memory_mb=9999,
                           vm_state=instance_obj.SHELVED_OFFLOADED),
        ]
        node = self._update()
        self.assertEqual(512 + 1024 + 2048, node.memory_mb_used)
        self.assertEqual(10 + 5 + 20 + 1, node.local_gb_used)
        self.assertEqual(3, node.vcpus_used)
        self.assertEqual((8192 - 3584, 100 - 36), (node.free_ram_mb, node.free_disk_gb))
        self.assertEqual((2, 1), (node.running_vms, node.current_workload))
        self.assertEqual('2', node.stats['num_instances'])
        self.assertEqual('1', node.stats['num_vm_building'])
        self.assertEqual('1', node.stats['io_workload'])
        self.assertEqual({uuids.a, uuids.b}, self.rt.tracked_instances)

    def test_instances_that_left_stop_counting(self):
        self.instances = [self._instance('a', memory_mb=1024)]
        self._update()
        self.instances = []
        node = self._update()
        self.assertEqual(512, node.memory_mb_used)
        self.assertEqual('0', node.stats.get('num_instances', '0'))

    def test_cpu_info_none_becomes_empty_string(self):
        original = self.driver.get_available_resource

        def without_cpu_info(nodename):
            return dict(original(nodename), cpu_info=None)

        self.driver.get_available_resource = without_cpu_info
        self.assertEqual('', self._update().cpu_info)

    def test_node_unknown_to_the_driver_is_skipped(self):
        self.rt.update_available_resource(self.ctxt, 'no-such-node')
        self.assertEqual({}, self.rt.compute_nodes)
        self.assertEqual([], self.conductor.calls)


class TestAllocationRatios(_TrackerTestCase):

    def test_zero_ratios_are_not_written(self):
        node = self._update()
        for name in ('cpu_allocation_ratio', 'ram_allocation_ratio', 'disk_allocation_ratio'):
            self.assertNotIn(name, self.created[0], name)
            self.assertNotIn(name, node, name)

    def test_non_zero_ratios_are_written(self):
        self.flags(cpu_allocation_ratio=4.0, disk_allocation_ratio=1.25)
        node = self._update()
        self.assertEqual((4.0, 1.25), (self.created[0].cpu_allocation_ratio,
                                       self.created[0].disk_allocation_ratio))
        self.assertNotIn('ram_allocation_ratio', self.created[0])
        self.assertEqual(4.0, node.cpu_allocation_ratio)

    def test_zero_does_not_overwrite_the_node_s_ratio(self):
        existing = objects.ComputeNode(id=3, uuid=uuids.node, host='host1',
                                       hypervisor_hostname=NODE, ram_allocation_ratio=1.5)
        existing.obj_reset_changes()
        self.conductor.class_results[('ComputeNode', 'get_by_host_and_nodename')] = existing
        self.assertEqual(1.5, self._update().ram_allocation_ratio)

    def test_changed_ratio_is_saved(self):
        self._update()
        saves = self._saves()
        self.flags(ram_allocation_ratio=2.0)
        node = self._update()
        self.assertEqual(2.0, node.ram_allocation_ratio)
        self.assertEqual(saves + 1, self._saves())


class TestSaveOnlyOnChange(_TrackerTestCase):

    def test_first_update_saves_the_recomputed_usage(self):
        self._update()
        self.assertEqual(['ComputeNode.create', 'ComputeNode.save'],
                         self.conductor.methods('action'))

    def test_unchanged_node_is_not_saved_again(self):
        self._update()
        saves = self._saves()
        self._update()
        self._update()
        self.assertEqual(saves, self._saves())

    def test_updated_at_alone_is_not_a_reason_to_save(self):
        node = self._update()
        saves = self._saves()
        node.updated_at = node.updated_at if 'updated_at' in node else None
        self.assertEqual({'updated_at'}, node.obj_what_changed())
        self._update()
        self.assertEqual(saves, self._saves())

    def test_new_instance_is_saved(self):
        self._update()
        saves = self._saves()
        self.instances = [self._instance('a')]
        self._update()
        self.assertEqual(saves + 1, self._saves())

    def test_driver_change_is_saved(self):
        self._update()
        saves = self._saves()
        self.flags(group='fake_driver', memory_mb=16384)
        self.driver.init_host('host1')  # the driver reads its sizes there
        node = self._update()
        self.assertEqual((16384, 16384 - 512), (node.memory_mb, node.free_ram_mb))
        self.assertEqual(saves + 1, self._saves())


class TestClaims(_TrackerTestCase):

    def setUp(self):
        super().setUp()
        self._update()   # 8 vCPU / 8192 MB (512 reserved) / 100 GB, nothing running

    def _claim(self, limits, name='new', **sizes):
        instance = self._instance(name, vm_state=instance_obj.BUILDING, host=None, node=None,
                                  **sizes)
        return instance, self.rt.instance_claim(self.ctxt, instance, NODE, limits)

    def _assert_refused(self, limits, text, **sizes):
        with self.assertRaises(exception.ComputeResourcesUnavailable) as ctx:
            self._claim(limits, **sizes)
        self.assertIn(text, str(ctx.exception))
        self.assertTrue(str(ctx.exception).startswith('Insufficient compute resources: '))
        return ctx.exception

    def test_successful_claim_places_the_instance_and_counts_it(self):
        saves = self._saves()
        instance, claim = self._claim({'memory_mb': 12288, 'disk_gb': 100, 'vcpu': 128},
                                      memory_mb=1024, vcpus=2, root_gb=10, ephemeral_gb=5)
        self.assertEqual(('host1', NODE, 'host1'),
                         (instance.host, instance.node, instance.launched_on))
        self.assertIn('Instance.save', self.conductor.methods('action'))
        node = self.rt.compute_nodes[NODE]
        self.assertEqual((512 + 1024, 15, 2), (node.memory_mb_used, node.local_gb_used,
                                               node.vcpus_used))
        self.assertEqual('1', node.stats['num_instances'])
        self.assertIn(instance.uuid, self.rt.tracked_instances)
        self.assertEqual(saves + 1, self._saves())
        self.assertIs(instance, claim.instance)

    def test_memory_exactly_at_the_limit_fits(self):
        self._claim({'memory_mb': 2048}, memory_mb=2048 - 512)

    def test_memory_one_mb_over_the_limit_is_refused(self):
        error = self._assert_refused({'memory_mb': 2048}, 'memory', memory_mb=2048 - 511)
        self.assertIn('requested 1537 MB', str(error))

    def test_disk_counts_root_and_ephemeral_up_to_the_limit(self):
        self._claim({'disk_gb': 20}, name='fits', root_gb=15, ephemeral_gb=5)
        self._assert_refused({'disk_gb': 40}, 'disk', name='over', root_gb=15, ephemeral_gb=6)

    def test_vcpus_up_to_the_limit(self):
        self._claim({'vcpu': 3}, name='fits', vcpus=3)
        self._assert_refused({'vcpu': 4}, 'vcpu', name='over', vcpus=2)

    def test_missing_limit_means_unlimited(self):
        for limits in (None, {}, {'memory_mb': None, 'disk_gb': None, 'vcpu': None}):
            self._claim(limits, name='huge%d' % len(limits or ()), memory_mb=10 ** 6,
                        vcpus=1000, root_gb=10 ** 5)

    def test_only_the_given_limit_is_enforced(self):
        self._claim({'vcpu': 1}, name='big', memory_mb=10 ** 6, root_gb=10 ** 5, vcpus=1)
        self._assert_refused({'vcpu': 1}, 'vcpu', name='more', vcpus=1)

    def test_every_failing_resource_is_reported(self):
        error = self._assert_refused({'memory_mb': 1024, 'disk_gb': 5, 'vcpu': 1}, 'memory',
                                     memory_mb=1024, root_gb=10, vcpus=2)
        for word in ('disk', 'vcpu'):
            self.assertIn(word, str(error))

    def test_refused_claim_changes_nothing(self):
        saves, calls = self._saves(), len(self.conductor.calls)
        self._assert_refused({'vcpu': 0}, 'vcpu')
        node = self.rt.compute_nodes[NODE]
        self.assertEqual((512, 0), (node.memory_mb_used, node.vcpus_used))
        self.assertEqual((saves, calls), (self._saves(), len(self.conductor.calls)))

    def test_claims_add_up(self):
        limits = {'memory_mb': 512 + 1024}
        self._claim(limits, name='one', memory_mb=512)
        self._claim(limits, name='two', memory_mb=512)
        self._assert_refused(limits, 'memory', name='three', memory_mb=1)

    def test_claim_on_unknown_node_is_refused(self):
        instance = self._instance('x', host=None, node=None)
        with self.assertRaises(exception.ComputeResourcesUnavailable):
            self.rt.instance_claim(self.ctxt, instance, 'other-node', {})

    def test_failure_inside_the_claim_gives_the_resources_back(self):
        node = self.rt.compute_nodes[NODE]
        instance = self._instance('x', host=None, node=None, memory_mb=2048, vcpus=4)
        with self.assertRaises(RuntimeError):
            with self.rt.instance_claim(self.ctxt, instance, NODE, {}):
                self.assertEqual(512 + 2048, node.memory_mb_used)
                raise RuntimeError('spawn failed')
        self.assertEqual((512, 0, 7680), (node.memory_mb_used, node.vcpus_used,
                                          node.free_ram_mb))
        self.assertNotIn(instance.uuid, self.rt.tracked_instances)

    def test_removed_instance_is_subtracted(self):
        instance, _claim = self._claim({}, memory_mb=1024)
        self.rt.update_usage(self.ctxt, instance, NODE, is_removed=True)
        self.assertEqual(512, self.rt.compute_nodes[NODE].memory_mb_used)
        self.assertNotIn(instance.uuid, self.rt.tracked_instances)


    def test_claims_and_frees_keep_disk_available_least_within_free_disk(self):
        """The driver measured ``disk_available_least`` before the claims: each claim (and
        free) moves it with ``free_disk_gb``: the scheduler, which warns that a host "has
        more disk space than database expected" whenever it exceeds ``free_disk_gb``, did
        so on almost every request during a burst of builds."""
        node = self.rt.compute_nodes[NODE]
        self.assertEqual((100, 100), (node.disk_available_least, node.free_disk_gb))
        one, _ = self._claim({}, name='one', root_gb=10, ephemeral_gb=5)
        self._claim({}, name='two', root_gb=20)
        self.assertEqual((65, 65), (node.disk_available_least, node.free_disk_gb))
        self.rt.update_usage(self.ctxt, one, NODE, is_removed=True)
        self.assertEqual((80, 80), (node.disk_available_least, node.free_disk_gb))
        # The next refresh takes the driver's measure again.
        self.assertEqual(100, self._update().disk_available_least)


class TestBuildFailures(_TrackerTestCase):

    def test_failed_builds_are_counted_and_survive_updates(self):
        node = self._update()
        self.rt.build_failed(NODE)
        self.rt.build_failed(NODE)
        self._update()
        self.assertEqual('2', node.stats['failed_builds'])
        self.rt.build_succeeded(NODE)
        self._update()
        self.assertEqual('0', node.stats.get('failed_builds', '0'))

    def test_counting_is_off_with_a_zero_threshold(self):
        self.flags(group='compute', consecutive_build_service_disable_threshold=0)
        node = self._update()
        self.rt.build_failed(NODE)
        self._update()
        self.assertNotIn('failed_builds', node.stats)


class TestNUMAAndPCIClaims(_TrackerTestCase):
    """Claims fit NUMA topologies and hand out PCI devices; refreshes rebuild both from the
    instances, so a claim never takes what an instance holds."""

    def setUp(self):
        super().setUp()
        self.flags(group='fake_driver', numa_nodes=2, pci_devices=[
            '{"vendor_id": "8086", "product_id": "1520", "count": 2, "numa_node": 0}',
            '{"vendor_id": "8086", "product_id": "1520", "count": 1, "numa_node": 1}'])
        self.flags(group='pci', device_spec=['{"vendor_id": "8086", "product_id": "1520"}'],
                   alias=['{"name": "nic", "vendor_id": "8086", "product_id": "1520"}'])
        self.driver = fake.FakeDriver(self.conf)
        self.driver.init_host('host1')
        self.rt = resource_tracker.ResourceTracker(self.conf, 'host1', self.driver)
        self.limits = {'numa_topology': objects.NUMATopologyLimits(cpu_allocation_ratio=1.0,
                                                                   ram_allocation_ratio=1.0)}
        self._update()

    def _numa_instance(self, name, extra_specs, **sizes):
        spec = fakes.fake_numa_spec(extra_specs, conf=self.conf, **sizes)
        return self._instance(name, vm_state=instance_obj.BUILDING, host=None, node=None,
                              numa_topology=spec.numa_topology, pci_requests=spec.pci_requests,
                              memory_mb=spec.flavor.memory_mb, vcpus=spec.flavor.vcpus)

    def _node_usage(self):
        node = self.rt.compute_nodes[NODE]
        topology = objects.NUMATopology.obj_from_db_obj(node.numa_topology)
        pools = sorted((pool.numa_node, pool.count) for pool in node.pci_device_pools)
        return [set(cell.pinned_cpus) for cell in topology.cells], pools

    def test_record_reports_the_topology_and_the_device_pools(self):
        self.assertEqual(([set(), set()], [(0, 1), (0, 1), (1, 1)]), self._node_usage())

    def test_claim_pins_cpus_and_records_devices_on_the_instance(self):
        instance = self._numa_instance('a', {'hw:numa_nodes': '1', 'hw:cpu_policy': 'dedicated',
                                             'pci_passthrough:alias': 'nic:2'}, vcpus=4)
        claim = self.rt.instance_claim(self.ctxt, instance, NODE, self.limits)
        self.assertEqual({0, 1, 2, 3}, set(instance.numa_topology.cells[0].cpu_pinning.values()))
        self.assertIs(claim.claimed_numa_topology, instance.numa_topology)
        self.assertEqual(['0000:81:00.0', '0000:81:00.1'],
                         sorted(dev.address for dev in instance.pci_devices))
        self.assertEqual({instance.uuid}, {dev.instance_uuid for dev in instance.pci_devices})
        self.assertEqual(([{0, 1, 2, 3}, set()], [(1, 1)]), self._node_usage())

    def test_pinned_cpus_and_devices_are_never_handed_out_twice(self):
        extra = {'hw:numa_nodes': '1', 'hw:cpu_policy': 'dedicated',
                 'pci_passthrough:alias': 'nic:1'}
        claimed = [self._numa_instance('i%d' % i, extra, vcpus=4) for i in range(2)]
        for instance in claimed:
            self.rt.instance_claim(self.ctxt, instance, NODE, self.limits)
        self.instances = claimed  # the refresh reads them back from the database
        self._update()
        self.assertEqual(([{0, 1, 2, 3}, {4, 5, 6, 7}], [(0, 1)]), self._node_usage())
        with self.assertRaises(exception.ComputeResourcesUnavailable) as caught:
            self.rt.instance_claim(self.ctxt, self._numa_instance('third', extra, vcpus=1),
                                   NODE, self.limits)
        self.assertIn('NUMA topology', str(caught.exception))
        devices = [dev.address for instance in claimed for dev in instance.pci_devices]
        self.assertEqual(len(devices), len(set(devices)))

    def test_devices_beyond_the_pools_are_refused(self):
        instance = self._numa_instance('greedy', {'pci_passthrough:alias': 'nic:4'})
        with self.assertRaises(exception.ComputeResourcesUnavailable) as caught:
            self.rt.instance_claim(self.ctxt, instance, NODE, {})
        self.assertIn('Claim pci failed', str(caught.exception))

    def test_a_numa_instance_is_refused_by_a_host_without_topology(self):
        self.flags(group='fake_driver', numa_nodes=0)
        self.driver.init_host('host1')
        self._update()
        instance = self._numa_instance('x', {'hw:numa_nodes': '1'}, vcpus=2)
        with self.assertRaises(exception.ComputeResourcesUnavailable):
            self.rt.instance_claim(self.ctxt, instance, NODE, self.limits)

    def test_abort_and_removal_give_cpus_and_devices_back(self):
        extra = {'hw:numa_nodes': '1', 'hw:cpu_policy': 'dedicated',
                 'pci_passthrough:alias': 'nic:1'}
        instance = self._numa_instance('a', extra, vcpus=2)
        with self.assertRaises(RuntimeError):
            with self.rt.instance_claim(self.ctxt, instance, NODE, self.limits):
                raise RuntimeError('spawn failed')
        self.assertEqual(([set(), set()], [(0, 1), (0, 1), (1, 1)]), self._node_usage())
        other = self._numa_instance('b', extra, vcpus=2)
        self.rt.instance_claim(self.ctxt, other, NODE, self.limits)
        self.rt.update_usage(self.ctxt, other, NODE, is_removed=True)
        self.assertEqual(([set(), set()], [(0, 1), (0, 1), (1, 1)]), self._node_usage())

    def test_devices_the_spec_does_not_admit_are_not_offered(self):
        self.flags(group='pci', device_spec=['{"address": "0000:81:00.0"}'])
        self.rt = resource_tracker.ResourceTracker(self.conf, 'host1', self.driver)
        self._update()
        self.assertEqual([(0, 1)], self._node_usage()[1])


class TestRefreshAndClaimOverlap(_TrackerTestCase):
    """Usage stays what the instances hold whatever fails or repeats between a refresh and
    a claim: the scheduler decides on it until the next refresh."""

    def setUp(self):
        super().setUp()
        self._update()   # 8 vCPU / 8192 MB (512 reserved) / 100 GB, nothing running

    def test_a_failed_refresh_leaves_the_reserved_memory_counted(self):
        self.conductor.class_results[('InstanceList', 'get_by_host_and_node')] = \
            exception.DBTransientError(reason='connection refused')
        self.assertRaises(exception.DBTransientError, self._update)
        node = self.rt.compute_nodes[NODE]
        self.assertEqual((512, 0, 0), (node.memory_mb_used, node.vcpus_used,
                                       node.local_gb_used))
        instance = self._instance('new', vm_state=instance_obj.BUILDING, host=None, node=None,
                                  memory_mb=1024, vcpus=1, root_gb=10)
        self.rt.instance_claim(self.ctxt, instance, NODE, {})
        self.assertEqual((512 + 1024, 1, 10), (node.memory_mb_used, node.vcpus_used,
                                               node.local_gb_used))

    def test_a_claim_retried_after_a_refresh_counted_it_counts_it_once(self):
        """The first save of the claim was written but its answer lost; a refresh read the
        instance on this node before the claim was tried again."""
        instance = self._instance('new', vm_state=instance_obj.BUILDING, host=None, node=None,
                                  memory_mb=1024, vcpus=2, root_gb=10)
        tries = []

        def save():
            tries.append(1)
            if len(tries) == 1:
                raise exception.DBTransientError(reason='answer lost')
        self.assertRaises(exception.DBTransientError, self.rt.instance_claim, self.ctxt,
                          instance, NODE, {}, save=save)
        self.instances = [self._instance('new', memory_mb=1024, vcpus=2, root_gb=10)]
        node = self._update()
        self.assertEqual(512 + 1024, node.memory_mb_used)
        self.rt.instance_claim(self.ctxt, instance, NODE, {'memory_mb': 8192 - 512}, save=save)
        self.assertEqual((512 + 1024, 2, 10), (node.memory_mb_used, node.vcpus_used,
                                               node.local_gb_used))
        self.assertEqual('1', node.stats['num_instances'])

    def test_a_refused_claim_of_a_counted_instance_leaves_it_counted(self):
        """A repeated build message for an instance a refresh counts: the conditional save
        refuses it, and the instance stays counted."""
        self.instances = [self._instance('running', memory_mb=1024, vcpus=2, root_gb=10)]
        node = self._update()
        again = self._instance('running', memory_mb=1024, vcpus=2, root_gb=10)

        def refused():
            raise exception.UnexpectedTaskStateError(instance_uuid=again.uuid,
                                                     expected='scheduling', actual=None)
        self.assertRaises(exception.UnexpectedTaskStateError, self.rt.instance_claim,
                          self.ctxt, again, NODE, {}, save=refused)
        self.assertEqual((512 + 1024, 2, 10), (node.memory_mb_used, node.vcpus_used,
                                               node.local_gb_used))
        self.assertIn(again.uuid, self.rt.tracked_instances)
