"""PciDeviceStats: pools from devices and from pool lists, and serving PCI requests."""
import json

from minisched import exception
from minisched.objects import pci_device_pool
from minisched.pci import stats
from tests.unit import base
from tests.unit.pci import fakes


def _counts(pci_stats):
    return sorted((pool['address'], pool['count']) for pool in pci_stats)


def _scheduler_view(pci_stats, numa_topology=None):
    return stats.PciDeviceStats(numa_topology, pci_stats.to_device_pools_obj())


class TestPoolsFromDevices(base.TestCase):

    def test_vfs_of_one_pf_share_a_pool_and_other_devices_do_not(self):
        pci_stats = fakes.compute_stats(fakes.devices(
            fakes.dev_dict('0000:01:00.0'), fakes.dev_dict('0000:02:00.0'),
            *fakes.pf_with_vfs('03', vfs=3)))
        self.assertEqual([('0000:01:00.0', 1), ('0000:02:00.0', 1), ('0000:03:00.0', 1),
                          ('0000:03:00.0', 3)], _counts(pci_stats))

    def test_pool_keys_hold_ids_numa_type_address_and_spec_tags(self):
        spec = ['{"vendor_id": "8086", "physical_network": "physnet1", '
                '"resource_class": "CUSTOM_X", "traits": "T"}']
        pci_stats = fakes.compute_stats(
            fakes.devices(*fakes.pf_with_vfs('05', vfs=1, numa_node=1)), spec=spec)
        vf_pool = [pool for pool in pci_stats if pool['dev_type'] == 'type-VF'][0]
        self.assertEqual({'vendor_id': '8086', 'product_id': '1515', 'numa_node': 1,
                          'dev_type': 'type-VF', 'physical_network': 'physnet1',
                          'address': '0000:05:00.0', 'remote_managed': 'false',
                          'count': 1}, vf_pool)

    def test_device_no_spec_admits_is_not_pooled(self):
        pci_stats = fakes.compute_stats(
            fakes.devices(fakes.dev_dict('0000:01:00.0', vendor_id='10de'),
                          fakes.dev_dict('0000:02:00.0')),
            spec=['{"vendor_id": "10de"}'])
        self.assertEqual([('0000:01:00.0', 1)], _counts(pci_stats))

    def test_without_a_device_filter_no_device_is_pooled(self):
        pci_stats = stats.PciDeviceStats(None)
        pci_stats.add_device(fakes.devices(fakes.dev_dict('0000:01:00.0'))[0])
        self.assertEqual([], pci_stats.pools)

    def test_parent_ifname_becomes_a_pool_key(self):
        vf = fakes.dev_dict('0000:01:00.1', dev_type='type-VF', parent_addr='0000:01:00.0',
                            parent_ifname='eth0')
        pool = list(fakes.compute_stats(fakes.devices(vf)))[0]
        self.assertEqual('eth0', pool['parent_ifname'])

    def test_pools_are_ordered_by_number_of_keys(self):
        pci_stats = fakes.compute_stats(fakes.devices(
            fakes.dev_dict('0000:01:00.1', dev_type='type-VF', parent_addr='0000:01:00.0'),
            fakes.dev_dict('0000:02:00.0')))
        self.assertEqual(['type-PCI', 'type-VF'], [pool['dev_type'] for pool in pci_stats])

    def test_iteration_copies_pools_without_devices(self):
        pci_stats = fakes.compute_stats(fakes.devices(fakes.dev_dict('0000:01:00.0')))
        pool = list(pci_stats)[0]
        self.assertNotIn('devices', pool)
        pool['count'] = 99
        self.assertEqual(1, pci_stats.pools[0]['count'])

    def test_equal_when_pools_are_equal(self):
        devs = fakes.devices(fakes.dev_dict('0000:01:00.0'), fakes.dev_dict('0000:02:00.0'))
        self.assertEqual(fakes.compute_stats(devs), fakes.compute_stats(devs))
        self.assertNotEqual(fakes.compute_stats(devs), fakes.compute_stats(devs[:1]))

    def test_remove_device_drops_emptied_pool_then_refuses(self):
        devs = fakes.devices(fakes.dev_dict('0000:01:00.0'), fakes.dev_dict('0000:02:00.0'))
        pci_stats = fakes.compute_stats(devs)
        pci_stats.remove_device(devs[0])
        self.assertEqual([('0000:02:00.0', 1)], _counts(pci_stats))
        self.assertRaises(exception.PciDevicePoolEmpty, pci_stats.remove_device, devs[0])

    def test_update_device_moves_a_device_whose_type_changed(self):
        devs = fakes.devices(fakes.dev_dict('0000:01:00.0'))
        pci_stats = fakes.compute_stats(devs)
        devs[0].dev_type = 'type-PF'
        pci_stats.update_device(devs[0])
        self.assertEqual(['type-PF'], [pool['dev_type'] for pool in pci_stats])


class TestSchedulerView(base.TestCase):

    def test_pool_list_round_trip_keeps_pools_without_devices(self):
        compute = fakes.compute_stats(fakes.devices(
            fakes.dev_dict('0000:01:00.0', numa_node=None), *fakes.pf_with_vfs('02')))
        scheduler = _scheduler_view(compute)
        self.assertEqual(list(compute), list(scheduler))
        self.assertNotIn('devices', scheduler.pools[0])

    def test_pools_from_the_node_record_json(self):
        compute = fakes.compute_stats(fakes.devices(fakes.dev_dict('0000:01:00.0')))
        text = compute.to_device_pools_obj().obj_to_primitive()
        pools = pci_device_pool.from_pci_stats(json.dumps(text))
        self.assertEqual(list(compute), list(stats.PciDeviceStats(None, pools)))

    def test_no_pools_without_a_pool_list(self):
        self.assertEqual([], stats.PciDeviceStats(None, None).pools)


class TestSupportAndApply(base.TestCase):

    def setUp(self):
        super().setUp()
        self.stats = _scheduler_view(fakes.compute_stats(fakes.devices(
            fakes.dev_dict('0000:01:00.0'), fakes.dev_dict('0000:02:00.0'),
            fakes.dev_dict('0000:03:00.0', vendor_id='10de'))))

    def test_support_counts_matching_devices_without_consuming(self):
        self.assertTrue(self.stats.support_requests([fakes.request(2, vendor_id='8086')], None))
        self.assertFalse(self.stats.support_requests([fakes.request(3, vendor_id='8086')],
                                                     None))
        self.assertEqual(3, sum(pool['count'] for pool in self.stats))

    def test_all_requests_must_fit_together(self):
        requests = [fakes.request(1, vendor_id='10de'), fakes.request(2, vendor_id='8086')]
        self.assertTrue(self.stats.support_requests(requests, None))
        requests.append(fakes.request(1, vendor_id='10de'))
        self.assertFalse(self.stats.support_requests(requests, None))

    def test_apply_consumes_and_drops_emptied_pools(self):
        self.stats.apply_requests([fakes.request(2, vendor_id='8086')], None)
        self.assertEqual([('0000:03:00.0', 1)], _counts(self.stats))
        self.assertRaises(exception.PciDeviceRequestFailed, self.stats.apply_requests,
                          [fakes.request(1, vendor_id='8086')], None)

    def test_given_back_pools_return_to_their_reported_place(self):
        reported = [pool['address'] for pool in self.stats.pools]
        taken = [dict(pool) for pool in self.stats.pools[:2]]
        self.stats.apply_requests([fakes.request(2, vendor_id='8086')], None)
        self.assertEqual(reported[2:], [pool['address'] for pool in self.stats.pools])
        for pool in reversed(taken):  # any order: each goes back to its own place
            self.stats.give_back(pool, 1)
        self.assertEqual(reported, [pool['address'] for pool in self.stats.pools])
        self.assertEqual([1, 1, 1], [pool['count'] for pool in self.stats.pools])

    def test_give_back_to_a_pool_still_listed_adds_to_its_count(self):
        pool = dict(self.stats.pools[0])
        self.stats.give_back(pool, 2)
        self.assertEqual([3, 1, 1], [pool['count'] for pool in self.stats.pools])

    def test_spec_values_match_case_insensitively(self):
        view = _scheduler_view(fakes.compute_stats(
            fakes.devices(fakes.dev_dict('0000:01:00.0')),
            spec=['{"physical_network": "PhysNet1"}']))
        self.assertTrue(view.support_requests([fakes.request(physical_network='physnet1')],
                                              None))
        self.assertFalse(view.support_requests([fakes.request(physical_network='physnet2')],
                                               None))

    def test_any_spec_of_a_request_may_match(self):
        request = fakes.request(3, vendor_id='10de')
        request.spec = [{'vendor_id': '10de'}, {'product_id': '1520'}]
        self.assertTrue(self.stats.support_requests([request], None))

    def test_resource_class_and_traits_in_a_spec_are_ignored(self):
        request = fakes.request(1, vendor_id='10de', resource_class='CUSTOM_GPU', traits='X')
        self.assertTrue(self.stats.support_requests([request], None))

    def test_zero_count_request_fails_without_a_matching_pool(self):
        # Nova's rule: no pool is a failure even when nothing is asked for.
        self.assertTrue(self.stats.support_requests([fakes.request(0, vendor_id='8086')],
                                                    None))
        self.assertFalse(self.stats.support_requests([fakes.request(0, vendor_id='abcd')],
                                                     None))


class TestExclusiveDeviceKinds(base.TestCase):

    def _view(self, *dicts, spec=None):
        return _scheduler_view(fakes.compute_stats(fakes.devices(*dicts), spec=spec))

    def test_pfs_only_for_requests_asking_for_pfs(self):
        view = self._view(*fakes.pf_with_vfs('01', vfs=0))
        self.assertFalse(view.support_requests([fakes.request(vendor_id='8086')], None))
        self.assertTrue(view.support_requests(
            [fakes.request(vendor_id='8086', dev_type='type-PF')], None))

    def test_vdpa_only_for_requests_asking_for_vdpa(self):
        view = self._view(fakes.dev_dict('0000:01:00.0', dev_type='vdpa'))
        self.assertFalse(view.support_requests([fakes.request(vendor_id='8086')], None))
        self.assertTrue(view.support_requests([fakes.request(dev_type='vdpa')], None))

    def test_remote_managed_device_needs_a_card_serial_number(self):
        view = self._view(fakes.dev_dict('0000:01:00.1', dev_type='type-VF'),
                          spec=['{"remote_managed": "true"}'])
        self.assertEqual([], view.pools)

    def test_remote_managed_only_for_requests_asking_for_them(self):
        vpd = {'vpd': {'card_serial_number': 'MT2113X00000'}}
        view = self._view(fakes.dev_dict('0000:01:00.1', dev_type='type-VF',
                                         capabilities=vpd),
                          spec=['{"remote_managed": "true"}'])
        self.assertTrue(view.has_remote_managed_device_pools())
        self.assertFalse(view.support_requests([fakes.request(dev_type='type-VF')], None))
        self.assertTrue(view.support_requests(
            [fakes.request(dev_type='type-VF', remote_managed='True')], None))

    def test_live_migratable_requests_get_only_devices_tagged_alike(self):
        view = self._view(fakes.dev_dict('0000:01:00.0'), fakes.dev_dict('0000:02:00.0'),
                          spec=['{"address": "*:01:*.*", "live_migratable": "yes"}',
                                '{"address": "*:02:*.*"}'])
        self.assertTrue(view.support_requests([fakes.request(1, live_migratable='true')],
                                              None))
        self.assertFalse(view.support_requests([fakes.request(2, live_migratable='true')],
                                               None))
        self.assertFalse(view.support_requests([fakes.request(1, live_migratable='false')],
                                               None))
        self.assertTrue(view.support_requests([fakes.request(2)], None))


class TestNUMAAffinity(base.TestCase):
    """Devices on host NUMA nodes 0, 1 and none; sockets: node 0 and 1 on socket 0,
    node 2 on socket 1."""

    def setUp(self):
        super().setUp()
        self.topology = fakes.host_topology(0, 0, 1)
        self.stats = _scheduler_view(fakes.compute_stats(fakes.devices(
            fakes.dev_dict('0000:01:00.0', numa_node=0),
            fakes.dev_dict('0000:02:00.0', numa_node=1),
            fakes.dev_dict('0000:03:00.0', numa_node=None))), self.topology)

    def _fits(self, count, policy, cell_ids):
        return self.stats.support_requests(
            [fakes.request(count, numa_policy=policy, vendor_id='8086')], None,
            fakes.cells(*cell_ids))

    def test_required_takes_only_devices_on_the_instance_nodes(self):
        self.assertTrue(self._fits(1, 'required', [0]))
        self.assertFalse(self._fits(2, 'required', [0]))
        self.assertFalse(self._fits(1, 'required', [2]))

    def test_legacy_adds_devices_without_node(self):
        self.assertTrue(self._fits(2, 'legacy', [0]))
        self.assertFalse(self._fits(3, 'legacy', [0]))

    def test_unset_policy_is_legacy(self):
        self.assertTrue(self._fits(2, None, [0]))
        self.assertFalse(self._fits(3, None, [0]))

    def test_preferred_takes_any_device(self):
        self.assertTrue(self._fits(3, 'preferred', [2]))

    def test_preferred_uses_local_devices_first(self):
        self.stats.apply_requests([fakes.request(1, numa_policy='preferred',
                                                 vendor_id='8086')], None, fakes.cells(1))
        self.assertEqual([0, None], [pool['numa_node'] for pool in self.stats])

    def test_socket_takes_devices_of_the_instance_sockets(self):
        self.assertTrue(self._fits(2, 'socket', [0]))
        self.assertFalse(self._fits(3, 'socket', [0]))
        self.assertFalse(self._fits(1, 'socket', [2]))

    def test_socket_without_socket_information_takes_only_local_devices(self):
        self.stats.numa_topology = fakes.host_topology(0, None, 1)
        self.assertTrue(self._fits(1, 'socket', [0]))
        self.assertFalse(self._fits(2, 'socket', [0]))

    def test_without_instance_cells_affinity_is_ignored(self):
        self.assertTrue(self.stats.support_requests(
            [fakes.request(3, numa_policy='required', vendor_id='8086')], None, None))


class TestConsume(base.TestCase):

    def test_consume_returns_devices_tagged_with_the_request(self):
        devs = fakes.devices(fakes.dev_dict('0000:01:00.0'), fakes.dev_dict('0000:02:00.0'))
        pci_stats = fakes.compute_stats(devs)
        request = fakes.request(2, vendor_id='8086')
        taken = pci_stats.consume_requests([request])
        self.assertEqual({'0000:01:00.0', '0000:02:00.0'}, {dev.address for dev in taken})
        self.assertEqual({request.request_id}, {dev.request_id for dev in taken})
        self.assertEqual([], pci_stats.get_free_devs())

    def test_taking_a_pf_removes_its_vfs(self):
        devs = fakes.devices(*fakes.pf_with_vfs('01', vfs=2))
        pci_stats = fakes.compute_stats(devs)
        taken = pci_stats.consume_requests([fakes.request(dev_type='type-PF')])
        self.assertEqual(['0000:01:00.0'], [dev.address for dev in taken])
        self.assertEqual([], pci_stats.get_free_devs())

    def test_taking_a_vf_removes_its_pf_but_not_its_siblings(self):
        devs = fakes.devices(*fakes.pf_with_vfs('01', vfs=2))
        pci_stats = fakes.compute_stats(devs)
        pci_stats.consume_requests([fakes.request(dev_type='type-VF')])
        self.assertEqual(1, len(pci_stats.get_free_devs()))
        self.assertEqual('type-VF', pci_stats.get_free_devs()[0].dev_type)
        self.assertFalse(pci_stats.support_requests([fakes.request(dev_type='type-PF')],
                                                    None))

    def test_failed_request_puts_back_the_devices_of_earlier_ones(self):
        devs = fakes.devices(fakes.dev_dict('0000:01:00.0'), fakes.dev_dict('0000:02:00.0'))
        pci_stats = fakes.compute_stats(devs)
        self.assertRaises(exception.PciDeviceRequestFailed, pci_stats.consume_requests,
                          [fakes.request(1, vendor_id='8086'), fakes.request(5)])
        self.assertEqual(2, len(pci_stats.get_free_devs()))

    def test_no_device_is_handed_out_twice(self):
        devs = fakes.devices(*fakes.pf_with_vfs('01', vfs=2))
        pci_stats = fakes.compute_stats(devs)
        first = pci_stats.consume_requests([fakes.request(dev_type='type-VF')])
        second = pci_stats.consume_requests([fakes.request(dev_type='type-VF')])
        self.assertNotEqual(first[0].address, second[0].address)
        self.assertRaises(exception.PciDeviceRequestFailed, pci_stats.consume_requests,
                          [fakes.request(dev_type='type-VF')])

    def test_free_device_pools_the_device_and_what_it_unblocks(self):
        devs = fakes.devices(*fakes.pf_with_vfs('01', vfs=2))
        pci_stats = fakes.compute_stats(devs)
        pf = pci_stats.consume_requests([fakes.request(dev_type='type-PF')])[0]
        pf.claim('instance-1')
        freed = pci_stats.free_device(pf)
        self.assertEqual(3, len(freed))
        self.assertEqual(3, len(pci_stats.get_free_devs()))
        self.assertTrue(pci_stats.support_requests([fakes.request(2, dev_type='type-VF')],
                                                   None))


class TestPlacementAllocation(base.TestCase):
    """rp_uuid bookkeeping (Nova's PCI in Placement): kept, though minisched makes none."""

    def setUp(self):
        super().setUp()
        self.devs = fakes.devices(fakes.dev_dict('0000:01:00.0'),
                                  fakes.dev_dict('0000:02:00.0'))
        for dev in self.devs:
            dev.extra_info = dict(dev.extra_info, rp_uuid='rp-' + dev.address)
        self.stats = fakes.compute_stats(self.devs)
        self.stats.populate_pools_metadata_from_assigned_devices()

    def test_pools_learn_their_provider_from_their_devices(self):
        self.assertEqual({'rp-0000:01:00.0', 'rp-0000:02:00.0'},
                         {pool['rp_uuid'] for pool in self.stats})

    def test_provider_mapping_restricts_the_pools(self):
        request = fakes.request(1, vendor_id='8086')
        mapping = {request.request_id + '-0': ['rp-0000:02:00.0']}
        self.stats.apply_requests([request], mapping)
        self.assertEqual([('0000:01:00.0', 1)], _counts(self.stats))

    def test_allocation_from_an_unknown_provider_fails(self):
        request = fakes.request(1, vendor_id='8086')
        self.assertFalse(self.stats.support_requests(
            [request], {request.request_id + '-0': ['rp-other']}))

    def test_consume_follows_rp_uuids_stored_in_the_spec(self):
        request = fakes.request(1, vendor_id='8086', rp_uuids='rp-0000:02:00.0')
        self.assertEqual(['0000:02:00.0'],
                         [dev.address for dev in self.stats.consume_requests([request])])
