"""Fitting an instance NUMA topology onto a host's, and the usage it then adds (Nova's rules,
reached through minisched.virt.hardware)."""
from unittest import mock

from minisched import exception
from minisched import objects
from minisched.objects import base
from minisched.virt import hardware as hw
from minisched.virt import numa_fit
from tests.unit import base as test_base


def _pages(size_kb, total, used=0):
    return objects.NUMAPagesTopology(size_kb=size_kb, total=total, used=used, reserved=0)


def _host_cell(id, cpus=(0, 1, 2, 3), memory=2048, threads=1, legacy=True, **kw):
    """A host cell; ``threads`` > 1 pairs CPU n with n + len(cpus) // threads."""
    cpus = list(cpus)
    width = len(cpus) // threads
    siblings = [set(cpus[core::width]) for core in range(width)]
    values = dict(id=id, cpuset=set(cpus) if legacy else set(), pcpuset=set(cpus),
                  memory=memory, cpu_usage=0, memory_usage=0, pinned_cpus=set(),
                  siblings=siblings, mempages=[_pages(4, memory * 256)], socket=0)
    values.update(kw)
    return objects.NUMACell(**values)


def _host(*cells):
    return objects.NUMATopology(cells=list(cells))


def _guest(*cells, emulator_threads_policy=None):
    return objects.InstanceNUMATopology(cells=list(cells),
                                        emulator_threads_policy=emulator_threads_policy)


def _guest_cell(id=0, cpus=(0, 1), memory=512, policy=None, thread_policy=None,
                pagesize=None):
    pinned = policy == 'dedicated'
    return objects.InstanceNUMACell(
        id=id, cpuset=set() if pinned else set(cpus), pcpuset=set(cpus) if pinned else set(),
        memory=memory, cpu_policy=policy, cpu_thread_policy=thread_policy, pagesize=pagesize)


def _limits(cpu=1.0, ram=1.0, network_metadata=None):
    limits = objects.NUMATopologyLimits(cpu_allocation_ratio=cpu, ram_allocation_ratio=ram)
    if network_metadata is not None:
        limits.network_metadata = network_metadata
    return limits


class TestFitShared(test_base.TestCase):

    def test_fits_and_names_the_host_cells(self):
        host = _host(_host_cell(0), _host_cell(1, cpus=(4, 5, 6, 7)))
        guest = _guest(_guest_cell(0), _guest_cell(1))
        fitted = hw.numa_fit_instance_to_host(host, guest)
        self.assertEqual([0, 1], [cell.id for cell in fitted.cells])
        self.assertIsInstance(fitted, objects.InstanceNUMATopology)

    def test_needs_both_topologies_and_enough_cells(self):
        host = _host(_host_cell(0))
        self.assertIsNone(hw.numa_fit_instance_to_host(None, _guest(_guest_cell())))
        self.assertIsNone(hw.numa_fit_instance_to_host(host, None))
        self.assertIsNone(hw.numa_fit_instance_to_host(
            host, _guest(_guest_cell(0), _guest_cell(1))))

    def test_a_guest_cell_never_exceeds_the_host_cell(self):
        host = _host(_host_cell(0, memory=1024, mempages=[]))
        self.assertIsNone(hw.numa_fit_instance_to_host(host, _guest(_guest_cell(memory=2048)),
                                                       limits=_limits(ram=4.0)))
        self.assertIsNone(hw.numa_fit_instance_to_host(
            host, _guest(_guest_cell(cpus=range(5))), limits=_limits(cpu=16.0)))

    def test_ratios_apply_to_shared_cpus_and_memory(self):
        host = _host(_host_cell(0, cpu_usage=6, memory_usage=1024, mempages=[]))
        guest = _guest(_guest_cell(cpus=(0, 1, 2), memory=1024))
        self.assertIsNone(hw.numa_fit_instance_to_host(host, guest, limits=_limits(2.0, 1.0)))
        self.assertIsNone(hw.numa_fit_instance_to_host(host, guest, limits=_limits(1.0, 1.5)))
        self.assertIsNotNone(hw.numa_fit_instance_to_host(host, guest,
                                                          limits=_limits(2.5, 1.0)))
        # Without limits there is no overcommit check at all.
        self.assertIsNotNone(hw.numa_fit_instance_to_host(host, guest))

    def test_spreads_onto_the_freest_cell_unless_packing(self):
        host = _host(_host_cell(0, memory_usage=1024), _host_cell(1, cpus=(4, 5, 6, 7)))
        guest = _guest(_guest_cell())
        self.assertEqual(1, hw.numa_fit_instance_to_host(host, guest).cells[0].id)
        with mock.patch.object(numa_fit, '_packing_host_numa_cells', return_value=True):
            self.assertEqual(0, hw.numa_fit_instance_to_host(host, guest).cells[0].id)

    def test_input_is_left_unchanged(self):
        host = _host(_host_cell(0, threads=2), _host_cell(1, cpus=(4, 5, 6, 7), threads=2))
        guest = _guest(_guest_cell(0, policy='dedicated', pagesize=hw.MEMPAGES_ANY),
                       _guest_cell(1, cpus=(2, 3), policy='dedicated'))
        before = guest.obj_to_primitive()
        fitted = hw.numa_fit_instance_to_host(host, guest)
        self.assertEqual(before, guest.obj_to_primitive())
        self.assertEqual(4, fitted.cells[0].pagesize)
        self.assertIsNot(fitted.cells[0], guest.cells[0])


class TestFitPinned(test_base.TestCase):

    def test_prefer_packs_onto_siblings(self):
        host = _host(_host_cell(0, cpus=range(8), threads=2))  # cores {0,4} {1,5} ...
        fitted = hw.numa_fit_instance_to_host(
            host, _guest(_guest_cell(cpus=(0, 1, 2), policy='dedicated')))
        self.assertEqual({0: 0, 1: 4, 2: 1}, fitted.cells[0].cpu_pinning)

    def test_pinned_cpus_are_not_reused(self):
        host = _host(_host_cell(0, pinned_cpus={0, 1}))
        fitted = hw.numa_fit_instance_to_host(
            host, _guest(_guest_cell(cpus=(0, 1), policy='dedicated')))
        self.assertEqual({2, 3}, set(fitted.cells[0].cpu_pinning.values()))
        self.assertIsNone(hw.numa_fit_instance_to_host(
            host, _guest(_guest_cell(cpus=(0, 1, 2), policy='dedicated'))))

    def test_require_needs_smt(self):
        guest = _guest(_guest_cell(policy='dedicated', thread_policy='require'))
        self.assertIsNone(hw.numa_fit_instance_to_host(_host(_host_cell(0)), guest))
        fitted = hw.numa_fit_instance_to_host(_host(_host_cell(0, threads=2)), guest)
        self.assertEqual({0: 0, 1: 2}, fitted.cells[0].cpu_pinning)

    def test_isolate_takes_one_thread_per_free_core(self):
        guest = _guest(_guest_cell(policy='dedicated', thread_policy='isolate'))
        fitted = hw.numa_fit_instance_to_host(_host(_host_cell(0, threads=2)), guest)
        self.assertEqual({0: 0, 1: 1}, fitted.cells[0].cpu_pinning)
        # A half-used core does not count as free.
        host = _host(_host_cell(0, threads=2, pinned_cpus={2}))
        self.assertIsNone(hw.numa_fit_instance_to_host(host, guest))

    def test_isolate_with_smt_needs_the_legacy_cpu_configuration(self):
        guest = _guest(_guest_cell(cpus=(0,), policy='dedicated', thread_policy='isolate'))
        host = _host(_host_cell(0, threads=2, legacy=False))
        self.assertIsNone(hw.numa_fit_instance_to_host(host, guest))

    def test_isolated_emulator_threads_take_a_cpu_on_the_first_cell(self):
        host = _host(_host_cell(0), _host_cell(1, cpus=(4, 5, 6, 7)))
        guest = _guest(_guest_cell(0, policy='dedicated'),
                       _guest_cell(1, cpus=(2, 3), policy='dedicated'),
                       emulator_threads_policy='isolate')
        fitted = hw.numa_fit_instance_to_host(host, guest)
        self.assertEqual({2}, fitted.cells[0].cpuset_reserved)
        self.assertIsNone(fitted.cells[1].cpuset_reserved)
        self.assertEqual('isolate', fitted.emulator_threads_policy)
        full = _guest(_guest_cell(cpus=range(4), policy='dedicated'),
                      emulator_threads_policy='isolate')
        self.assertIsNone(hw.numa_fit_instance_to_host(_host(_host_cell(0)), full))

    def test_pinned_memory_is_never_overcommitted(self):
        host = _host(_host_cell(0, memory_usage=1536, mempages=[]))
        guest = _guest(_guest_cell(memory=1024, policy='dedicated'))
        self.assertIsNone(hw.numa_fit_instance_to_host(host, guest, limits=_limits(ram=4.0)))
        shared = _guest(_guest_cell(memory=1024))
        self.assertIsNotNone(hw.numa_fit_instance_to_host(host, shared,
                                                          limits=_limits(ram=4.0)))


class TestFitPages(test_base.TestCase):

    def _host(self, used_2m=0):
        return _host(_host_cell(0, mempages=[_pages(4, 262144), _pages(2048, 512, used_2m),
                                             _pages(1048576, 1)]))

    def test_large_takes_the_largest_size_that_fits(self):
        fitted = hw.numa_fit_instance_to_host(
            self._host(), _guest(_guest_cell(memory=1024, pagesize=hw.MEMPAGES_LARGE)))
        self.assertEqual(1048576, fitted.cells[0].pagesize)
        fitted = hw.numa_fit_instance_to_host(
            self._host(), _guest(_guest_cell(memory=512, pagesize=hw.MEMPAGES_LARGE)))
        self.assertEqual(2048, fitted.cells[0].pagesize)  # not a whole number of 1G pages

    def test_small_and_explicit_sizes(self):
        for asked, chosen in ((hw.MEMPAGES_SMALL, 4), (2048, 2048), (hw.MEMPAGES_ANY, 1048576)):
            fitted = hw.numa_fit_instance_to_host(
                self._host(), _guest(_guest_cell(memory=1024, pagesize=asked)))
            self.assertEqual(chosen, fitted.cells[0].pagesize, asked)

    def test_no_fit_without_enough_free_pages_or_the_size(self):
        self.assertIsNone(hw.numa_fit_instance_to_host(
            self._host(used_2m=300), _guest(_guest_cell(memory=512, pagesize=2048))))
        self.assertIsNone(hw.numa_fit_instance_to_host(
            self._host(), _guest(_guest_cell(memory=512, pagesize=16))))


class _FakePciStats:
    """What the fitting asks of PciDeviceStats: its pools, and whether the requests fit
    on the chosen guest cells (here: only on host cell ``device_cell``)."""

    def __init__(self, device_cell):
        self.pools = [{'numa_node': device_cell, 'count': 1}]
        self.device_cell = device_cell
        self.calls = []

    def support_requests(self, requests, provider_mapping, numa_cells):
        self.calls.append((requests, provider_mapping, [cell.id for cell in numa_cells]))
        return any(cell.id == self.device_cell for cell in numa_cells)


class TestFitDevicesAndNetworks(test_base.TestCase):

    def _host(self, metadata=None):
        metadata = metadata or {}
        cells = []
        for cell_id in range(3):
            cell = _host_cell(cell_id, cpus=range(cell_id * 4, cell_id * 4 + 4))
            if cell_id in metadata:
                cell.network_metadata = metadata[cell_id]
            cells.append(cell)
        return _host(*cells)

    def test_pci_requests_pick_the_cell_with_devices(self):
        stats = _FakePciStats(device_cell=2)
        fitted = hw.numa_fit_instance_to_host(self._host(), _guest(_guest_cell()),
                                              mock.sentinel.mapping,
                                              pci_requests=['request'], pci_stats=stats)
        self.assertEqual(2, fitted.cells[0].id)
        self.assertEqual([(['request'], mock.sentinel.mapping, [2])], stats.calls)

    def test_without_pci_requests_cells_with_devices_go_last(self):
        stats = _FakePciStats(device_cell=0)
        fitted = hw.numa_fit_instance_to_host(self._host(), _guest(_guest_cell()),
                                              pci_stats=stats)
        self.assertNotEqual(0, fitted.cells[0].id)
        self.assertEqual([], stats.calls)

    def test_physnet_local_to_a_cell_not_chosen_rejects(self):
        local = objects.NetworkMetadata(physnets={'foo'}, tunneled=False)
        host = self._host({1: local})
        wanted = _limits(network_metadata=objects.NetworkMetadata(physnets={'foo'},
                                                                  tunneled=False))
        self.assertEqual(1, hw.numa_fit_instance_to_host(
            host, _guest(_guest_cell()), limits=wanted).cells[0].id)
        two_cells = _guest(_guest_cell(0), _guest_cell(1))
        fitted = hw.numa_fit_instance_to_host(host, two_cells, limits=wanted)
        self.assertIn(1, [cell.id for cell in fitted.cells])

    def test_tunneled_networks_need_their_local_cell(self):
        host = self._host({2: objects.NetworkMetadata(physnets=set(), tunneled=True)})
        wanted = _limits(network_metadata=objects.NetworkMetadata(physnets=set(),
                                                                  tunneled=True))
        self.assertEqual(2, hw.numa_fit_instance_to_host(
            host, _guest(_guest_cell()), limits=wanted).cells[0].id)


class TestInputClasses(test_base.TestCase):
    """Results are of the caller's classes (Nova's objects come back as Nova's)."""

    def test_fitted_topology_and_cells_keep_the_input_class(self):
        class InstanceNUMATopology(objects.InstanceNUMATopology):
            pass

        class InstanceNUMACell(objects.InstanceNUMACell):
            pass

        guest = InstanceNUMATopology(cells=[InstanceNUMACell(
            id=0, cpuset={0}, pcpuset=set(), memory=128)])
        fitted = hw.numa_fit_instance_to_host(_host(_host_cell(0)), guest)
        self.assertIs(InstanceNUMATopology, type(fitted))
        self.assertIs(InstanceNUMACell, type(fitted.cells[0]))


class TestUsage(test_base.TestCase):

    def _placed(self, host, guest):
        fitted = hw.numa_fit_instance_to_host(host, guest)
        return fitted, hw.numa_usage_from_instance_numa(host, fitted)

    def test_shared_usage_counts_cpus_memory_and_small_pages(self):
        host = _host(_host_cell(0))
        _, used = self._placed(host, _guest(_guest_cell(cpus=(0, 1, 2), memory=512)))
        cell = used.cells[0]
        self.assertEqual((3, 512, set()), (cell.cpu_usage, cell.memory_usage, cell.pinned_cpus))
        self.assertEqual(131072, cell.mempages[0].used)
        self.assertEqual(0, host.cells[0].cpu_usage)  # the input is not changed

    def test_pinned_usage_and_freeing_it(self):
        host = _host(_host_cell(0, threads=2, mempages=[_pages(4, 524288), _pages(2048, 16)]))
        fitted, used = self._placed(host, _guest(_guest_cell(policy='dedicated', memory=16,
                                                             pagesize=2048)))
        cell = used.cells[0]
        self.assertEqual({0, 2}, cell.pinned_cpus)
        self.assertEqual((0, 16), (cell.cpu_usage, cell.memory_usage))
        self.assertEqual([0, 8], [pages.used for pages in cell.mempages])
        freed = hw.numa_usage_from_instance_numa(used, fitted, free=True)
        self.assertEqual(host, freed)

    def test_isolate_pins_whole_cores_and_double_pinning_fails(self):
        host = _host(_host_cell(0, threads=2))
        fitted, used = self._placed(host, _guest(_guest_cell(
            cpus=(0,), policy='dedicated', thread_policy='isolate')))
        self.assertEqual({0, 2}, used.cells[0].pinned_cpus)
        self.assertRaises(exception.CPUPinningInvalid, hw.numa_usage_from_instance_numa,
                          used, fitted)

    def test_usage_never_goes_below_zero(self):
        host = _host(_host_cell(0))
        guest = _guest(_guest_cell(cpus=(0, 1), memory=512))
        fitted = hw.numa_fit_instance_to_host(host, guest)
        freed = hw.numa_usage_from_instance_numa(host, fitted, free=True)
        self.assertEqual((0, 0), (freed.cells[0].cpu_usage, freed.cells[0].memory_usage))

    def test_nothing_to_add_returns_the_host(self):
        host = _host(_host_cell(0))
        self.assertIs(host, hw.numa_usage_from_instance_numa(host, None))
        self.assertIsNone(hw.numa_usage_from_instance_numa(None, _guest(_guest_cell())))

    def test_result_crosses_the_serializer(self):
        host = _host(_host_cell(0, threads=2))
        fitted, used = self._placed(host, _guest(_guest_cell(policy='dedicated')))
        serializer = base.MinischedObjectSerializer()
        for obj in (fitted, used):
            copy = serializer.deserialize_entity(None, serializer.serialize_entity(None, obj))
            self.assertTrue(base.obj_equal_prims(obj, copy))
