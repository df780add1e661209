"""What NUMA topology a flavor and image ask for (numa_get_constraints and the single
constraints), and CPU set strings."""
from minisched import exception
from minisched import objects
from minisched.virt import hardware as hw
from tests.unit import base as test_base


def _flavor(vcpus=4, memory_mb=2048, **extra_specs):
    return objects.Flavor(name='f1', vcpus=vcpus, memory_mb=memory_mb,
                          extra_specs={key.replace('__', ':'): value
                                       for key, value in extra_specs.items()})


def _image(**props):
    return objects.ImageMeta.from_dict({'name': 'img', 'properties': props})


def _cells(topology):
    return [(cell.id, cell.cpuset, cell.pcpuset, cell.memory) for cell in topology.cells]


class TestCPUSpec(test_base.TestCase):

    def test_parse_ranges_singles_and_exclusions(self):
        self.assertEqual({0, 1, 3, 6}, hw.parse_cpu_spec('0-3, ^2, 6'))
        self.assertEqual({1, 4}, hw.parse_cpu_spec('0-4,^0,^2-3'))
        self.assertEqual(set(), hw.parse_cpu_spec(',,'))

    def test_parse_rejects_malformed_elements(self):
        for spec in ('3-1', 'a', '^x', '1-b', '^1-'):
            self.assertRaises(exception.Invalid, hw.parse_cpu_spec, spec)

    def test_format_uses_ranges_when_allowed(self):
        self.assertEqual('0-2,5,7-8', hw.format_cpu_spec({8, 0, 1, 2, 5, 7}))
        self.assertEqual('0,1,2,5', hw.format_cpu_spec({0, 1, 2, 5}, allow_ranges=False))
        self.assertEqual('', hw.format_cpu_spec(set()))


class TestSingleConstraints(test_base.TestCase):

    def test_cpu_policy_flavor_wins_image_may_agree(self):
        self.assertEqual('dedicated', hw.get_cpu_policy_constraint(
            _flavor(hw__cpu_policy='dedicated'), _image(hw_cpu_policy='shared')))
        self.assertEqual('dedicated', hw.get_cpu_policy_constraint(
            _flavor(), _image(hw_cpu_policy='dedicated')))
        self.assertIsNone(hw.get_cpu_policy_constraint(_flavor(), _image()))

    def test_cpu_policy_image_may_not_pin_more_than_the_flavor(self):
        for flavor_policy, image_policy in (('shared', 'dedicated'), ('shared', 'mixed'),
                                            ('mixed', 'dedicated')):
            self.assertRaises(exception.ImageCPUPinningForbidden,
                              hw.get_cpu_policy_constraint,
                              _flavor(hw__cpu_policy=flavor_policy),
                              _image(hw_cpu_policy=image_policy))

    def test_cpu_policy_unknown_value_is_invalid(self):
        self.assertRaises(exception.InvalidCPUAllocationPolicy, hw.get_cpu_policy_constraint,
                          _flavor(hw__cpu_policy='pinned'), _image())

    def test_thread_policy_image_only_under_prefer(self):
        self.assertEqual('isolate', hw.get_cpu_thread_policy_constraint(
            _flavor(), _image(hw_cpu_thread_policy='isolate')))
        self.assertEqual('prefer', hw.get_cpu_thread_policy_constraint(
            _flavor(hw__cpu_thread_policy='prefer'), _image(hw_cpu_thread_policy='isolate')))
        self.assertRaises(exception.ImageCPUThreadPolicyForbidden,
                          hw.get_cpu_thread_policy_constraint,
                          _flavor(hw__cpu_thread_policy='require'),
                          _image(hw_cpu_thread_policy='isolate'))
        self.assertRaises(exception.InvalidCPUThreadAllocationPolicy,
                          hw.get_cpu_thread_policy_constraint,
                          _flavor(hw__cpu_thread_policy='sometimes'), _image())

    def test_emulator_threads_policy(self):
        self.assertEqual('isolate', hw.get_emulator_thread_policy_constraint(
            _flavor(hw__emulator_threads_policy='isolate')))
        self.assertIsNone(hw.get_emulator_thread_policy_constraint(_flavor()))
        self.assertRaises(exception.InvalidEmulatorThreadsPolicy,
                          hw.get_emulator_thread_policy_constraint,
                          _flavor(hw__emulator_threads_policy='float'))

    def test_pci_numa_policy_from_flavor_or_image_not_both_different(self):
        self.assertEqual('socket', hw.get_pci_numa_policy_constraint(
            _flavor(hw__pci_numa_affinity_policy='socket'), _image()))
        self.assertEqual('preferred', hw.get_pci_numa_policy_constraint(
            _flavor(), _image(hw_pci_numa_affinity_policy='preferred')))
        self.assertRaises(exception.ImagePCINUMAPolicyForbidden,
                          hw.get_pci_numa_policy_constraint,
                          _flavor(hw__pci_numa_affinity_policy='required'),
                          _image(hw_pci_numa_affinity_policy='legacy'))
        self.assertRaises(exception.InvalidPCINUMAAffinity, hw.get_pci_numa_policy_constraint,
                          _flavor(hw__pci_numa_affinity_policy='nearby'), _image())

    def test_dedicated_mask_names_some_but_not_all_cpus(self):
        self.assertEqual({1, 2, 3}, hw.get_dedicated_cpu_constraint(
            _flavor(hw__cpu_dedicated_mask='^0')))
        for mask in ('0-3', '^0-3', '4'):
            self.assertRaises(exception.InvalidMixedInstanceDedicatedMask,
                              hw.get_dedicated_cpu_constraint,
                              _flavor(hw__cpu_dedicated_mask=mask))

    def test_realtime_mask_image_first_and_some_cpu_left(self):
        flavor = _flavor(hw__cpu_realtime='yes', hw__cpu_realtime_mask='^0')
        self.assertEqual({1, 2, 3}, hw.get_realtime_cpu_constraint(flavor, _image()))
        self.assertEqual({2}, hw.get_realtime_cpu_constraint(
            flavor, _image(hw_cpu_realtime_mask='2')))
        self.assertIsNone(hw.get_realtime_cpu_constraint(_flavor(), _image()))
        self.assertRaises(exception.RealtimeMaskNotFoundOrInvalid,
                          hw.get_realtime_cpu_constraint, _flavor(hw__cpu_realtime='yes'),
                          _image())

    def test_vpmems_and_maxphysaddr_mode(self):
        self.assertEqual(['a', 'b'], hw.get_vpmems(_flavor(hw__pmem='a, ,b')))
        self.assertEqual('emulate', hw.get_maxphysaddr_mode(
            _flavor(), _image(hw_maxphysaddr_mode='emulate')))
        self.assertRaises(exception.FlavorImageConflict, hw.get_maxphysaddr_mode,
                          _flavor(hw__maxphysaddr_mode='passthrough'),
                          _image(hw_maxphysaddr_mode='emulate'))

    def test_locked_memory_needs_a_page_size_and_agreement(self):
        self.assertTrue(hw.get_locked_memory_constraint(
            _flavor(hw__locked_memory='true', hw__mem_page_size='small'), _image()))
        self.assertRaises(exception.LockMemoryForbidden, hw.get_locked_memory_constraint,
                          _flavor(), _image(hw_locked_memory='true'))
        self.assertRaises(exception.FlavorImageLockedMemoryConflict,
                          hw.get_locked_memory_constraint,
                          _flavor(hw__locked_memory='false', hw__mem_page_size='small'),
                          _image(hw_locked_memory='true'))


class TestNumaGetConstraints(test_base.TestCase):

    def test_nothing_asked_no_topology(self):
        self.assertIsNone(hw.numa_get_constraints(_flavor(), _image()))
        self.assertIsNone(hw.numa_get_constraints(_flavor(hw__cpu_policy='shared'),
                                                  _image()))

    def test_nodes_split_cpus_and_memory_evenly(self):
        topology = hw.numa_get_constraints(_flavor(hw__numa_nodes='2'), _image())
        self.assertEqual([(0, {0, 1}, set(), 1024), (1, {2, 3}, set(), 1024)],
                         _cells(topology))
        self.assertIsNone(topology.emulator_threads_policy)
        self.assertEqual([None, None], [cell.cpu_policy for cell in topology.cells])

    def test_uneven_split_needs_explicit_assignment(self):
        self.assertRaises(exception.ImageNUMATopologyAsymmetric, hw.numa_get_constraints,
                          _flavor(vcpus=3, hw__numa_nodes='2'), _image())

    def test_dedicated_pins_every_cpu_of_one_node(self):
        topology = hw.numa_get_constraints(
            _flavor(hw__cpu_policy='dedicated', hw__cpu_thread_policy='isolate',
                    hw__emulator_threads_policy='isolate'), _image())
        self.assertEqual([(0, set(), {0, 1, 2, 3}, 2048)], _cells(topology))
        cell = topology.cells[0]
        self.assertEqual(('dedicated', 'isolate'), (cell.cpu_policy, cell.cpu_thread_policy))
        self.assertTrue(topology.emulator_threads_isolated)

    def test_mixed_splits_by_the_dedicated_mask(self):
        topology = hw.numa_get_constraints(
            _flavor(hw__cpu_policy='mixed', hw__cpu_dedicated_mask='^0-1'), _image())
        self.assertEqual([(0, {0, 1}, {2, 3}, 2048)], _cells(topology))

    def test_mixed_with_realtime_pins_the_realtime_cpus(self):
        topology = hw.numa_get_constraints(
            _flavor(hw__cpu_policy='mixed', hw__cpu_realtime='yes',
                    hw__cpu_realtime_mask='^0'), _image())
        self.assertEqual([(0, {0}, {1, 2, 3}, 2048)], _cells(topology))

    def test_explicit_cpus_and_memory_per_node(self):
        flavor = _flavor(hw__numa_nodes='2', **{'hw:numa_cpus.0': '0', 'hw:numa_cpus.1': '1-3',
                                                'hw:numa_mem.0': '512',
                                                'hw:numa_mem.1': '1536'})
        self.assertEqual([(0, {0}, set(), 512), (1, {1, 2, 3}, set(), 1536)],
                         _cells(hw.numa_get_constraints(flavor, _image())))

    def test_explicit_assignment_from_the_image(self):
        image = _image(**{'hw_numa_nodes': '2', 'hw_numa_cpus.0': '0-2', 'hw_numa_cpus.1': '3',
                          'hw_numa_mem.0': '1024', 'hw_numa_mem.1': '1024'})
        self.assertEqual([(0, {0, 1, 2}, set(), 1024), (1, {3}, set(), 1024)],
                         _cells(hw.numa_get_constraints(_flavor(), image)))

    def test_explicit_assignment_errors(self):
        cases = (
            ({'hw:numa_cpus.0': '0-3'}, exception.ImageNUMATopologyIncomplete),
            ({'hw:numa_cpus.0': '0-4', 'hw:numa_mem.0': '2048'},
             exception.ImageNUMATopologyCPUOutOfRange),
            ({'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0-1', 'hw:numa_cpus.1': '1-3',
              'hw:numa_mem.0': '1024', 'hw:numa_mem.1': '1024'},
             exception.ImageNUMATopologyCPUDuplicates),
            ({'hw:numa_cpus.0': '0-2', 'hw:numa_mem.0': '2048'},
             exception.ImageNUMATopologyCPUsUnassigned),
            ({'hw:numa_cpus.0': '0-3', 'hw:numa_mem.0': '1024'},
             exception.ImageNUMATopologyMemoryOutOfRange),
            ({'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0-3', 'hw:numa_mem.0': '2048'},
             exception.ImageNUMATopologyIncomplete),
        )
        for specs, error in cases:
            specs.setdefault('hw:numa_nodes', '1')
            self.assertRaises(error, hw.numa_get_constraints, _flavor(**specs), _image())

    def test_per_node_settings_alone_ask_for_no_topology(self):
        self.assertIsNone(hw.numa_get_constraints(
            _flavor(**{'hw:numa_cpus.0': '0-3', 'hw:numa_mem.0': '2048'}), _image()))

    def test_image_may_not_override_flavor_numa_settings(self):
        self.assertRaises(exception.ImageNUMATopologyForbidden, hw.numa_get_constraints,
                          _flavor(hw__numa_nodes='2'), _image(hw_numa_nodes=1))
        self.assertRaises(exception.ImageNUMATopologyForbidden, hw.numa_get_constraints,
                          _flavor(**{'hw:numa_nodes': '1', 'hw:numa_cpus.0': '0-3',
                                     'hw:numa_mem.0': '2048'}),
                          _image(**{'hw_numa_cpus.0': '0-3'}))

    def test_invalid_node_counts(self):
        for nodes in ('0', '-1', 'two'):
            self.assertRaises(exception.InvalidNUMANodesNumber, hw.numa_get_constraints,
                              _flavor(hw__numa_nodes=nodes), _image())

    def test_page_sizes(self):
        for request, expected in (('small', hw.MEMPAGES_SMALL), ('large', hw.MEMPAGES_LARGE),
                                  ('any', hw.MEMPAGES_ANY), ('2048', 2048), ('1GB', 1048576),
                                  ('2MB', 2048)):
            topology = hw.numa_get_constraints(_flavor(hw__mem_page_size=request), _image())
            self.assertEqual(expected, topology.cells[0].pagesize, request)
        self.assertRaises(exception.MemoryPageSizeInvalid, hw.numa_get_constraints,
                          _flavor(hw__mem_page_size='huge'), _image())

    def test_image_page_size_only_narrows_any_or_large(self):
        topology = hw.numa_get_constraints(_flavor(hw__mem_page_size='large'),
                                           _image(hw_mem_page_size='1GB'))
        self.assertEqual(1048576, topology.cells[0].pagesize)
        self.assertRaises(exception.MemoryPageSizeForbidden, hw.numa_get_constraints,
                          _flavor(hw__mem_page_size='small'), _image(hw_mem_page_size='1GB'))
        self.assertRaises(exception.MemoryPageSizeForbidden, hw.numa_get_constraints,
                          _flavor(), _image(hw_mem_page_size='2048'))

    def test_policy_combinations_rejected(self):
        cases = (
            (dict(hw__cpu_thread_policy='isolate'),
             exception.CPUThreadPolicyConfigurationInvalid),
            (dict(hw__emulator_threads_policy='isolate'),
             exception.BadRequirementEmulatorThreadsPolicy),
            (dict(hw__cpu_dedicated_mask='0'), exception.RequiredMixedInstancePolicy),
            (dict(hw__cpu_policy='dedicated', hw__cpu_dedicated_mask='0'),
             exception.RequiredMixedInstancePolicy),
            (dict(hw__cpu_realtime='yes', hw__cpu_realtime_mask='^0'),
             exception.RealtimeConfigurationInvalid),
            (dict(hw__cpu_policy='mixed'), exception.RequiredMixedOrRealtimeCPUMask),
            (dict(hw__cpu_policy='mixed', hw__cpu_dedicated_mask='0', hw__cpu_realtime='yes',
                  hw__cpu_realtime_mask='^0'), exception.RequiredMixedOrRealtimeCPUMask),
        )
        for specs, error in cases:
            self.assertRaises(error, hw.numa_get_constraints, _flavor(**specs), _image())

    def test_explicit_pcpu_resources_mean_dedicated(self):
        topology = hw.numa_get_constraints(_flavor(**{'resources:PCPU': '4'}), _image())
        self.assertEqual('dedicated', topology.cells[0].cpu_policy)
        for specs in ({'resources:PCPU': '3'}, {'resources:PCPU': '4', 'resources:VCPU': '1'},
                      {'resources:PCPU': '4', 'hw:cpu_policy': 'dedicated'}):
            self.assertRaises(exception.InvalidRequest, hw.numa_get_constraints,
                              _flavor(**specs), _image())

    def test_hyperthreading_trait_sets_the_thread_policy(self):
        topology = hw.numa_get_constraints(
            _flavor(hw__cpu_policy='dedicated', **{'trait:HW_CPU_HYPERTHREADING': 'forbidden'}),
            _image())
        self.assertEqual('isolate', topology.cells[0].cpu_thread_policy)
        self.assertRaises(exception.InvalidRequest, hw.numa_get_constraints,
                          _flavor(hw__cpu_policy='dedicated', hw__cpu_thread_policy='prefer',
                                  **{'trait:HW_CPU_HYPERTHREADING': 'required'}), _image())
