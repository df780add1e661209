"""Host and instance NUMA objects: usage arithmetic, pinning, page fits, stored JSON, the
wire, and backports."""
from oslo_serialization import jsonutils

from minisched import exception
from minisched import objects
from minisched.objects import base
from tests.unit import base as test_base

uuids = test_base.uuids


def _pages(size_kb=4, total=1024, used=0, reserved=0):
    return objects.NUMAPagesTopology(size_kb=size_kb, total=total, used=used, reserved=reserved)


def _host_cell(**kw):
    values = dict(id=0, cpuset={0, 1, 2, 3}, pcpuset={4, 5, 6, 7}, memory=2048, cpu_usage=0,
                  memory_usage=0, pinned_cpus=set(), siblings=[{4, 6}, {5, 7}],
                  mempages=[_pages(4, 524288), _pages(2048, 64)], socket=0)
    values.update(kw)
    return objects.NUMACell(**values)


#: Child versions for backports, as the serializer's version manifest gives them.
_MANIFEST = {'NUMAPagesTopology': '1.1', 'NetworkMetadata': '1.0', 'InstanceNUMACell': '1.6',
             'VirtCPUTopology': '1.0'}


def _round_trip(obj):
    serializer = base.MinischedObjectSerializer()
    return serializer.deserialize_entity(None, serializer.serialize_entity(None, obj))


class TestNUMACell(test_base.TestCase):

    def test_free_and_available_cpus_leave_out_the_pinned(self):
        cell = _host_cell(pinned_cpus={4, 7})
        self.assertEqual({5, 6}, cell.free_pcpus)
        self.assertEqual(2, cell.avail_pcpus)
        self.assertEqual([{6}, {5}], cell.free_siblings)

    def test_available_memory_is_what_is_not_used(self):
        self.assertEqual(1536, _host_cell(memory_usage=512).avail_memory)

    def test_threads_are_siblings_of_more_than_one(self):
        self.assertTrue(_host_cell().has_threads)
        self.assertFalse(_host_cell(siblings=[{4}, {5}]).has_threads)
        topology = objects.NUMATopology(cells=[_host_cell(siblings=[{4}]), _host_cell()])
        self.assertTrue(topology.has_threads)

    def test_pin_then_unpin_restores_the_cell(self):
        cell = _host_cell()
        cell.pin_cpus({4, 5})
        self.assertEqual({4, 5}, cell.pinned_cpus)
        cell.unpin_cpus({4})
        self.assertEqual({5}, cell.pinned_cpus)

    def test_pinning_a_pinned_or_unknown_cpu_fails(self):
        cell = _host_cell(pinned_cpus={4})
        self.assertRaises(exception.CPUPinningInvalid, cell.pin_cpus, {4, 5})
        self.assertRaises(exception.CPUPinningUnknown, cell.pin_cpus, {0})
        self.assertEqual({4}, cell.pinned_cpus)

    def test_unpinning_a_free_or_unknown_cpu_fails(self):
        cell = _host_cell(pinned_cpus={4})
        self.assertRaises(exception.CPUUnpinningInvalid, cell.unpin_cpus, {4, 5})
        self.assertRaises(exception.CPUUnpinningUnknown, cell.unpin_cpus, {1})

    def test_pinning_with_siblings_takes_whole_cores(self):
        cell = _host_cell()
        cell.pin_cpus_with_siblings({4})
        self.assertEqual({4, 6}, cell.pinned_cpus)
        cell.unpin_cpus_with_siblings({6})
        self.assertEqual(set(), cell.pinned_cpus)

    def test_page_fit_needs_whole_free_pages(self):
        cell = _host_cell(mempages=[_pages(2048, 4, used=1)])
        self.assertTrue(cell.can_fit_pagesize(2048, 6144))
        self.assertFalse(cell.can_fit_pagesize(2048, 8192))  # 3 free pages only
        self.assertTrue(cell.can_fit_pagesize(2048, 8192, use_free=False))
        self.assertFalse(cell.can_fit_pagesize(2048, 1024))  # half a page

    def test_page_fit_of_a_size_the_cell_lacks_raises(self):
        self.assertRaises(exception.MemoryPageSizeNotSupported,
                          _host_cell().can_fit_pagesize, 1048576, 1048576)

    def test_free_pages_leave_out_used_and_reserved(self):
        pages = _pages(2048, 10, used=3, reserved=2)
        self.assertEqual((5, 10240, 20480), (pages.free, pages.free_kb, pages.total_kb))

    def test_pages_without_reserved_count_none_reserved(self):
        pages = objects.NUMAPagesTopology(size_kb=4, total=10, used=1)
        self.assertEqual(9, pages.free)

    def test_equality_is_by_value(self):
        self.assertEqual(_host_cell(), _host_cell())
        self.assertNotEqual(_host_cell(), _host_cell(memory_usage=1))
        self.assertNotEqual(_pages(), objects.NUMAPagesTopology(size_kb=4, total=1024))


class TestNUMATopologyStorage(test_base.TestCase):

    def test_compute_node_json_round_trip(self):
        topology = objects.NUMATopology(cells=[_host_cell(pinned_cpus={4}),
                                               _host_cell(id=1, socket=1)])
        stored = topology._to_json()
        self.assertIsInstance(stored, str)
        loaded = objects.NUMATopology.obj_from_db_obj(stored)
        self.assertEqual(topology, loaded)
        self.assertEqual(2, len(loaded))

    def test_network_metadata_survives_the_json(self):
        # NetworkMetadata has no value equality (nor has Nova's): compare its fields.
        cell = _host_cell(network_metadata=objects.NetworkMetadata(physnets={'foo'},
                                                                   tunneled=True))
        loaded = objects.NUMATopology.obj_from_db_obj(
            objects.NUMATopology(cells=[cell])._to_json())
        metadata = loaded.cells[0].network_metadata
        self.assertEqual(({'foo'}, True), (metadata.physnets, metadata.tunneled))

    def test_topology_crosses_the_serializer(self):
        topology = objects.NUMATopology(cells=[_host_cell(pinned_cpus={5})])
        self.assertEqual(topology, _round_trip(topology))

    def test_legacy_unversioned_form_is_converted(self):
        legacy = jsonutils.dumps({'cells': [{'id': 0, 'cpus': '0-3,^2', 'cpu_usage': 1,
                                             'mem': {'total': 512, 'used': 128}}]})
        topology = objects.NUMATopology.obj_from_db_obj(
            objects.NUMATopology.from_legacy_object(legacy))
        cell = topology.cells[0]
        self.assertEqual(({0, 1, 3}, 512, 128, 1), (cell.cpuset, cell.memory,
                                                     cell.memory_usage, cell.cpu_usage))

    def test_old_versions_drop_the_later_fields(self):
        cell = _host_cell(network_metadata=objects.NetworkMetadata(physnets=set(),
                                                                   tunneled=False))
        data = cell.obj_to_primitive(target_version='1.2', version_manifest=_MANIFEST)[
            'minisched_object.data']
        for name in ('socket', 'pcpuset', 'network_metadata'):
            self.assertNotIn(name, data)
        self.assertIn('siblings', data)
        pages = _pages(reserved=3).obj_to_primitive(target_version='1.0')
        self.assertNotIn('reserved', pages['minisched_object.data'])
        limits = objects.NUMATopologyLimits(
            cpu_allocation_ratio=2.0, ram_allocation_ratio=1.0,
            network_metadata=objects.NetworkMetadata(physnets=set(), tunneled=False))
        self.assertNotIn('network_metadata', limits.obj_to_primitive(
            target_version='1.0', version_manifest=_MANIFEST)['minisched_object.data'])


def _instance_cell(**kw):
    values = dict(id=0, cpuset=set(), pcpuset={0, 1}, memory=512, cpu_policy='dedicated')
    values.update(kw)
    return objects.InstanceNUMACell(**values)


class TestInstanceNUMACell(test_base.TestCase):

    def test_defaults_are_set_at_creation(self):
        cell = objects.InstanceNUMACell(id=0, cpuset={0}, pcpuset=set(), memory=128)
        self.assertIsNone(cell.pagesize)
        self.assertIsNone(cell.cpu_policy)
        self.assertIsNone(cell.cpu_pinning)
        self.assertIsNone(cell.cpuset_reserved)

    def test_pinning_records_dedicated_cpus_only(self):
        cell = _instance_cell(cpuset={2}, pcpuset={0, 1}, cpu_policy='mixed')
        cell.pin_vcpus((0, 10), (1, 11), (2, 12))
        self.assertEqual({0: 10, 1: 11}, cell.cpu_pinning)
        self.assertEqual(3, len(cell))
        self.assertTrue(cell.cpu_pinning_requested)

    def test_clear_host_pinning_forgets_the_host(self):
        cell = _instance_cell()
        cell.pin(0, 4)
        self.assertIs(cell, cell.clear_host_pinning())
        self.assertEqual((-1, {}), (cell.id, cell.cpu_pinning))

    def test_siblings_come_from_the_guest_cpu_topology(self):
        cell = _instance_cell(pcpuset={0, 1, 2, 3},
                              cpu_topology=objects.VirtCPUTopology(sockets=1, cores=2,
                                                                   threads=2))
        self.assertEqual([{0, 1}, {2, 3}], cell.siblings)
        self.assertEqual([], _instance_cell().siblings)

    def test_dict_style_access_works(self):
        cell = _instance_cell()
        self.assertEqual(512, cell['memory'])
        self.assertEqual(0, cell.get('id'))

    def test_mixed_policy_cannot_go_below_1_6(self):
        cell = _instance_cell(cpuset={2}, cpu_policy='mixed')
        self.assertRaises(exception.ObjectActionError, cell.obj_to_primitive,
                          target_version='1.5')

    def test_dedicated_cpus_move_back_to_cpuset_below_1_5(self):
        data = _instance_cell(cpuset_reserved={9}).obj_to_primitive(
            target_version='1.4')['minisched_object.data']
        self.assertEqual([0, 1], sorted(data['cpuset']))
        self.assertNotIn('pcpuset', data)
        self.assertIn('cpuset_reserved', data)
        data = _instance_cell().obj_to_primitive(target_version='1.2')['minisched_object.data']
        self.assertNotIn('cpu_policy', data)


class TestInstanceNUMATopology(test_base.TestCase):

    def _topology(self):
        cells = [_instance_cell(id=0, cpuset_reserved={8}), _instance_cell(id=1, pcpuset={2})]
        cells[0].pin_vcpus((0, 4), (1, 5))
        cells[1].pin(2, 6)
        return objects.InstanceNUMATopology(instance_uuid=uuids.instance, cells=cells,
                                            emulator_threads_policy='isolate')

    def test_pinning_and_reserved_cpus_of_all_cells(self):
        topology = self._topology()
        self.assertEqual({4, 5, 6}, topology.cpu_pinning)
        self.assertEqual({8}, topology.cpuset_reserved)
        self.assertTrue(topology.emulator_threads_isolated)
        self.assertEqual('dedicated', topology.cpu_policy)
        self.assertEqual(2, len(topology))

    def test_cells_with_different_policies_are_an_error(self):
        topology = self._topology()
        topology.cells[1].cpu_policy = 'shared'
        self.assertRaises(exception.InternalError, lambda: topology.cpu_policy)

    def test_emulator_threads_not_isolated_by_default(self):
        self.assertFalse(objects.InstanceNUMATopology(cells=[]).emulator_threads_isolated)

    def test_clear_host_pinning_clears_every_cell(self):
        topology = self._topology().clear_host_pinning()
        self.assertEqual(set(), topology.cpu_pinning)
        self.assertEqual([-1, -1], [cell.id for cell in topology.cells])

    def test_stored_json_round_trip(self):
        topology = self._topology()
        loaded = objects.InstanceNUMATopology.obj_from_db_obj(None, uuids.instance,
                                                              topology._to_json())
        self.assertTrue(base.obj_equal_prims(topology, loaded))
        self.assertEqual({0: 4, 1: 5}, loaded.cells[0].cpu_pinning)

    def test_legacy_unversioned_form_is_converted(self):
        legacy = jsonutils.dumps({'cells': [{'id': 0, 'cpus': '0-1',
                                             'mem': {'total': 256}}]})
        topology = objects.InstanceNUMATopology.obj_from_db_obj(None, uuids.instance, legacy)
        self.assertEqual(uuids.instance, topology.instance_uuid)
        self.assertEqual(({0, 1}, set(), 256), (topology.cells[0].cpuset,
                                                 topology.cells[0].pcpuset,
                                                 topology.cells[0].memory))

    def test_topology_crosses_the_serializer(self):
        topology = self._topology()
        copy = _round_trip(topology)
        self.assertTrue(base.obj_equal_prims(topology, copy))
        self.assertEqual({2: 6}, copy.cells[1].cpu_pinning)

    def test_emulator_threads_policy_dropped_below_1_3(self):
        data = self._topology().obj_to_primitive(target_version='1.2',
                                                 version_manifest=_MANIFEST)
        self.assertNotIn('emulator_threads_policy', data['minisched_object.data'])
