"""PCI objects: device pools, instance PCI requests and the device state machine."""
from oslo_serialization import jsonutils

from minisched import exception
from minisched import objects
from minisched.objects import base as obj_base
from minisched.objects import pci_device_pool
from tests.unit import base
from tests.unit.pci import fakes

uuids = base.uuids

POOL = {'vendor_id': '8086', 'product_id': '1520', 'numa_node': 1, 'count': 3,
        'dev_type': 'type-VF', 'physical_network': 'physnet1'}


def _data(obj, version):
    return obj.obj_to_primitive(target_version=version)['minisched_object.data']


class TestPciDevicePool(base.TestCase):

    def test_dict_round_trip_keeps_other_keys_as_tags(self):
        pool = objects.PciDevicePool.from_dict(POOL)
        self.assertEqual({'dev_type': 'type-VF', 'physical_network': 'physnet1'}, pool.tags)
        self.assertEqual(POOL, pool.to_dict())

    def test_numa_node_dropped_before_1_1(self):
        pool = objects.PciDevicePool.from_dict(POOL)
        self.assertNotIn('numa_node', _data(pool, '1.0'))
        self.assertEqual(1, _data(pool, '1.1')['numa_node'])

    def test_from_pci_stats_reads_every_stored_form(self):
        pools = objects.PciDevicePoolList(objects=[objects.PciDevicePool.from_dict(POOL)])
        primitive = pools.obj_to_primitive()
        for stored in (primitive, jsonutils.dumps(primitive), POOL, [POOL],
                       jsonutils.dumps([POOL])):
            with self.subTest(stored=stored):
                result = pci_device_pool.from_pci_stats(stored)
                self.assertEqual([POOL], [pool.to_dict() for pool in result])

    def test_from_pci_stats_of_nothing_is_an_empty_list(self):
        for stored in (None, '', '[]', 'not json', {}):
            with self.subTest(stored=stored):
                self.assertEqual(0, len(pci_device_pool.from_pci_stats(stored)))


class TestInstancePCIRequests(base.TestCase):

    def _request(self, **kw):
        values = dict(count=2, spec=[{'vendor_id': '8086'}], alias_name='a1',
                      numa_policy='required', request_id=uuids.req)
        values.update(kw)
        return objects.InstancePCIRequest(**values)

    def test_source_is_the_alias_or_a_port(self):
        self.assertEqual(objects.InstancePCIRequest.FLAVOR_ALIAS, self._request().source)
        self.assertEqual(objects.InstancePCIRequest.NEUTRON_PORT,
                         self._request(alias_name=None).source)

    def test_unset_fields_read_as_none(self):
        request = objects.InstancePCIRequest(count=1, spec=[])
        self.assertIsNone(request.numa_policy)
        self.assertIsNone(request.requester_id)

    def test_spec_values_are_coerced_to_strings(self):
        request = self._request(spec=[{'remote_managed': True, 'numa_node': None}])
        self.assertEqual([{'remote_managed': 'True', 'numa_node': None}], request.spec)

    def test_numa_policy_is_validated(self):
        self.assertRaises(ValueError, self._request, numa_policy='strict')

    def test_fields_dropped_by_version(self):
        request = self._request(requester_id='port-1')
        for version, gone in (('1.0', {'request_id', 'numa_policy', 'requester_id'}),
                              ('1.1', {'numa_policy', 'requester_id'}),
                              ('1.2', {'requester_id'}), ('1.4', set())):
            with self.subTest(version=version):
                self.assertEqual(gone, {'request_id', 'numa_policy', 'requester_id'}
                                 - set(_data(request, version)))

    def test_live_migratable_only_when_every_spec_says_so(self):
        self.assertTrue(self._request(spec=[{'live_migratable': 'true'}]).is_live_migratable())
        self.assertFalse(self._request(spec=[{'live_migratable': 'true'}, {}])
                         .is_live_migratable())

    def test_stored_json_round_trip(self):
        requests = objects.InstancePCIRequests(instance_uuid=uuids.inst,
                                               requests=[self._request()])
        loaded = objects.InstancePCIRequests.obj_from_db(None, uuids.inst, requests.to_json())
        self.assertEqual(set(), loaded.obj_what_changed())
        self.assertTrue(obj_base.obj_equal_prims(requests, loaded, ignore=['is_new']))
        self.assertFalse(loaded.requests[0].is_new)

    def test_stored_request_without_policy_reads_as_legacy(self):
        stored = jsonutils.dumps([{'count': 1, 'spec': [{}], 'alias_name': 'a',
                                   'request_id': None}])
        loaded = objects.InstancePCIRequests.obj_from_db(None, uuids.inst, stored)
        self.assertEqual('legacy', loaded.requests[0].numa_policy)
        self.assertEqual([], objects.InstancePCIRequests.obj_from_db(
            None, uuids.inst, None).requests)


class TestPciDevice(base.TestCase):

    def test_create_is_available_and_keeps_unknown_keys_in_extra_info(self):
        dev = objects.PciDevice.create(None, fakes.dev_dict(
            '0000:01:00.0', status='allocated', capabilities={'vpd': {}}, label='l'))
        self.assertEqual('available', dev.status)
        self.assertEqual({'capabilities': '{"vpd": {}}'}, dev.extra_info)
        self.assertEqual('l', dev.label)

    def test_update_device_drops_spec_tags_no_longer_reported(self):
        dev = objects.PciDevice.create(None, fakes.dev_dict('0000:01:00.0', managed='true'))
        self.assertEqual('true', dev.extra_info['managed'])
        dev.update_device(fakes.dev_dict('0000:01:00.0'))
        self.assertNotIn('managed', dev.extra_info)

    def test_equality_ignores_timestamps(self):
        one, two = fakes.devices(fakes.dev_dict('0000:01:00.0'), fakes.dev_dict('0000:01:00.0'))
        two.id, two.uuid = one.id, one.uuid
        two.created_at = None
        self.assertEqual(one, two)
        two.numa_node = 1
        self.assertNotEqual(one, two)

    def test_claim_allocate_free_of_a_standard_device(self):
        dev = fakes.devices(fakes.dev_dict('0000:01:00.0'))[0]
        instance = {'uuid': uuids.inst}
        dev.claim(uuids.inst)
        self.assertRaises(exception.PciDeviceInvalidStatus, dev.claim, uuids.other)
        self.assertRaises(exception.PciDeviceInvalidOwner, dev.allocate, {'uuid': uuids.other})
        dev.allocate(instance)
        self.assertEqual(('allocated', 1), (dev.status, len(instance['pci_devices'])))
        self.assertEqual([dev], dev.free(instance))
        self.assertEqual(('available', None, []),
                         (dev.status, dev.instance_uuid, instance['pci_devices']))
        self.assertRaises(exception.PciDeviceInvalidStatus, dev.free)

    def test_claiming_a_vf_blocks_its_pf_until_the_last_vf_is_freed(self):
        pf, vf1, vf2 = fakes.devices(*fakes.pf_with_vfs('01', vfs=2))
        vf1.claim(uuids.a)
        vf2.claim(uuids.b)
        self.assertEqual('unclaimable', pf.status)
        self.assertRaises(exception.PciDeviceInvalidStatus, pf.claim, uuids.c)
        self.assertEqual([vf1], vf1.free())
        self.assertEqual('unclaimable', pf.status)
        self.assertEqual([pf, vf2], vf2.free())
        self.assertEqual('available', pf.status)

    def test_claiming_a_pf_needs_and_blocks_all_its_vfs(self):
        pf, vf1, vf2 = fakes.devices(*fakes.pf_with_vfs('01', vfs=2))
        vf1.claim(uuids.a)
        self.assertRaises(exception.PciDeviceInvalidStatus, pf.claim, uuids.b)
        vf1.free()
        pf.claim(uuids.b)
        self.assertEqual(['unclaimable', 'unclaimable'], [vf1.status, vf2.status])
        self.assertRaises(exception.PciDeviceInvalidStatus, vf1.claim, uuids.c)
        pf.allocate({'uuid': uuids.b})
        self.assertEqual(['unavailable', 'unavailable'], [vf1.status, vf2.status])
        self.assertEqual([vf1, vf2, pf], pf.free())

    def test_vf_refused_when_its_pf_is_taken(self):
        pf, vf1 = fakes.devices(*fakes.pf_with_vfs('01', vfs=1))
        pf.claim(uuids.a)
        vf1.status = 'available'  # an inconsistent state Nova also guards against
        self.assertRaises(exception.PciDevicePFInvalidStatus, vf1.claim, uuids.b)

    def test_remove_only_unused_devices(self):
        dev, other = fakes.devices(fakes.dev_dict('0000:01:00.0'), fakes.dev_dict('0000:02:00.0'))
        dev.remove()
        self.assertEqual('removed', dev.status)
        other.claim(uuids.a)
        self.assertRaises(exception.PciDeviceInvalidStatus, other.remove)

    def test_backports(self):
        dev = fakes.devices(fakes.dev_dict('0000:01:00.1', dev_type='type-VF',
                                           parent_addr='0000:01:00.0'))[0]
        old = _data(dev, '1.3')
        self.assertNotIn('parent_addr', old)
        self.assertEqual('0000:01:00.0', old['extra_info']['phys_function'])
        self.assertNotIn('uuid', _data(dev, '1.5'))
        self.assertIn('uuid', _data(dev, '1.6'))
        dev.dev_type = 'vdpa'
        self.assertRaises(exception.ObjectActionError, dev.obj_to_primitive,
                          target_version='1.6')
        dev.status = 'unclaimable'
        self.assertRaises(exception.ObjectActionError, dev.obj_to_primitive,
                          target_version='1.4')

    def test_device_list_starts_empty(self):
        self.assertEqual(0, len(objects.PciDeviceList()))
