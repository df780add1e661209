"""Object versions are pinned, and older versions of an object drop the fields added later."""
import datetime

from oslo_versionedobjects import fixture as ovo_fixture

from minisched import objects
from minisched.objects import base
from minisched.objects import fields
from tests.unit import base as test_base

uuids = test_base.uuids

#: ``<VERSION>-<fingerprint of fields and remotable methods>``. A mismatch means a field or a
#: remotable signature changed: bump the object's VERSION (and handle the old version in
#: ``obj_make_compatible``), then copy the new value here.
OBJECT_HASHES = {
    'Aggregate': '1.3-f315cb68906307ca2d1cca84d4753585',
    'AggregateList': '1.3-3ea55a050354e72ef3306adefa553957',
    'BlockDeviceMapping': '1.21-220abb8aa1450e759b72fce8ec6ff955',
    'BlockDeviceMappingList': '1.18-73bcbbae5ef5e8adcedbc821db869306',
    'BuildRequest': '1.3-077dee42bed93f8a5b62be77657b7152',
    'BuildRequestList': '1.0-cd95608eccb89fbc702c8b52f38ec738',
    'CellMapping': '1.1-5d652928000a5bc369d79d5bde7e497d',
    'CellMappingList': '1.1-496ef79bb2ab41041fff8bcb57996352',
    'ComputeNode': '1.19-af6bd29a6c3b225da436a0d8487096f2',
    'ComputeNodeList': '1.17-52f3b0962b1c86b98590144463ebb192',
    'Destination': '1.4-3b440d29459e2c98987ad5b25ad1cb2c',
    'DeviceBus': '1.0-77509ea1ea0dd750d5864b9bd87d3f9d',
    'DeviceMetadata': '1.0-04eb8fd218a49cbc3b1e54b774d179f7',
    'DiskMetadata': '1.0-e7a0f1ccccf10d26a76b28e7492f3788',
    'EC2Ids': '1.0-474ee1094c7ec16f8ce657595d8c49d9',
    'Flavor': '1.2-4ce99b41327bb230262e5a8f45ff0ce3',
    'FlavorList': '1.1-52b5928600e7ca973aa4fc1e46f3934c',
    'HVSpec': '1.2-de06bcec472a2f04966b855a49c46b41',
    'HostMapping': '1.0-1a3390a696792a552ab7bd31a77ba9ac',
    'HostMappingList': '1.1-18ac2bfb8c1eb5545bed856da58a79bc',
    'IDEDeviceBus': '1.0-29d4c9f27ac44197f01b6ac1b7e16502',
    'ImageMeta': '1.8-642d1b2eb3e880a367f37d72dd76162d',
    'ImageMetaProps': '1.44-fd4f63a7cfab5a0ea0e034c40a554b26',
    'Instance': '2.8-2727dba5e4a078e6cc848c1f94f7eb24',
    'InstanceAction': '1.2-9a5abc87fdd3af46f45731960651efb5',
    'InstanceActionEvent': '1.4-5b1f361bd81989f8bb2c20bb7e8a4cb4',
    'InstanceActionEventList': '1.1-13d92fb953030cdbfee56481756e02be',
    'InstanceActionList': '1.1-a2b2fb6006b47c27076d3a1d48baa759',
    'InstanceDeviceMetadata': '1.0-74d78dd36aa32d26d2769a1b57caf186',
    'InstanceFault': '1.2-7ef01f16f1084ad1304a513d6d410a38',
    'InstanceFaultList': '1.2-6bb72de2872fe49ded5eb937a93f2451',
    'InstanceGroup': '1.11-852ac511d30913ee88f3c3a869a8f30a',
    'InstanceGroupList': '1.8-90f8f1a445552bb3bbc9fa1ae7da27d4',
    'InstanceInfoCache': '1.5-cd8b96fefe0fc8d4d337243ba0bf0e1e',
    'InstanceList': '2.6-238f125650c25d6d12722340d726f723',
    'InstanceMapping': '1.2-3bd375e65c8eb9c45498d2f87b882e03',
    'InstanceNUMACell': '1.6-25d9120d83a18356f4146f2a6fe2cc8d',
    'InstanceNUMATopology': '1.3-ec0030cb0402a49c96da7051c037082a',
    'InstancePCIRequest': '1.4-b27808ae189699df27f8f5b908b6393e',
    'InstancePCIRequests': '1.1-65e38083177726d806684cb1cc0136d2',
    'KeyPair': '1.4-1244e8d1b103cc69d038ed78ab3a8cc6',
    'KeyPairList': '1.3-94aad3ac5c938eef4b5e83da0212f506',
    'LibvirtVPMEMDevice': '1.0-17ffaf47585199eeb9a2b83d6bde069f',
    'MigrationContext': '1.2-89f10a83999f852a489962ae37d8a026',
    'NUMACell': '1.5-2592de3c926a7840d763bcc85f81afa7',
    'NUMAPagesTopology': '1.1-edab9fa2dc43c117a38d600be54b4542',
    'NUMATopology': '1.2-c63fad38be73b6afd04715c9c1b29220',
    'NUMATopologyLimits': '1.1-4235c5da7a76c7e36075f0cd2f5cf922',
    'NetworkInterfaceMetadata': '1.2-6f3d480b40fe339067b1c0dd4d656716',
    'NetworkMetadata': '1.0-2cb8d21b34f87b0261d3e1d1ae5cf218',
    'NetworkRequest': '1.3-3a815ea3df7defa61e0b894dee5288ba',
    'NetworkRequestList': '1.1-15ecf022a68ddbb8c2a6739cfc9f8f5e',
    'PCIDeviceBus': '1.0-2b891cb77e42961044689f3dc2718995',
    'PciDevice': '1.7-680e4c590aae154958ccf9677774413b',
    'PciDeviceList': '1.3-52ff14355491c8c580bdc0ba34c26210',
    'PciDevicePool': '1.1-3f5ddc3ff7bfa14da7f6c7e9904cc000',
    'PciDevicePoolList': '1.1-15ecf022a68ddbb8c2a6739cfc9f8f5e',
    'RequestGroup': '1.3-0458d350a8ec9d0673f9be5640a990ce',
    'RequestLevelParams': '1.1-3a718a0ae0bfdec669e7108631b3f313',
    'RequestSpec': '1.15-c1c9d34236d87a37c008dcf8926199fa',
    'Resource': '1.0-d8a2abbb380da583b995fd118f6a8953',
    'ResourceList': '1.0-4a53826625cc280e15fae64a575e0879',
    'ResourceMetadata': '1.0-77509ea1ea0dd750d5864b9bd87d3f9d',
    'SCSIDeviceBus': '1.0-61c1e89a00901069ab1cf2991681533b',
    'SchedulerLimits': '1.0-249c4bd8e62a9b327b7026b7f19cc641',
    'SchedulerRetries': '1.1-3c9c8b16143ebbb6ad7030e999d14cc0',
    'SecurityGroup': '1.2-86d67d8d3ab0c971e1dc86e02f9524a8',
    'SecurityGroupList': '1.1-c655ed13298e630f4d398152f7d08d71',
    'Selection': '1.1-548e3c2f04da2a61ceaf9c4e1589f264',
    'Service': '1.22-8a740459ab9bf258a19c8fcb875c2d9a',
    'ServiceList': '1.19-5325bce13eebcbf22edc9678285270cc',
    'ShareMetadata': '1.0-09f69ac0bd47371417b5477a277e43af',
    'Tag': '1.1-8b8d7d5b48887651a0e01241672e2963',
    'TagList': '1.1-55231bdb671ecf7641d6a2e9109b5d8e',
    'TrustedCerts': '1.0-dcf528851e0f868c77ee47e90563cda7',
    'USBDeviceBus': '1.0-e4c7dd6032e46cd74b027df5eb2d4750',
    'VirtCPUFeature': '1.0-ea2464bdd09084bd388e5f61d5d4fc86',
    'VirtCPUModel': '1.0-5e1864af9227f698326203d7249796b5',
    'VirtCPUTopology': '1.0-fc694de72e20298f7c6bab1083fd4563',
    'XenDeviceBus': '1.0-272a4f899b24e31e42b2b9a7ed7e9194',
}

#: Versions of the child objects each object's fields hold (``obj_relationships``).
OBJECT_RELATIONSHIPS = {
    'BlockDeviceMapping': {'Instance': '2.8'},
    'BuildRequest': {'Instance': '2.8', 'BlockDeviceMappingList': '1.18', 'TagList': '1.1'},
    'ComputeNode': {'PciDevicePoolList': '1.1'},
    'Destination': {'CellMapping': '1.1'},
    'DeviceMetadata': {'DeviceBus': '1.0'},
    'DiskMetadata': {'DeviceBus': '1.0'},
    'HostMapping': {'CellMapping': '1.1'},
    'ImageMeta': {'ImageMetaProps': '1.44'},
    'Instance': {'EC2Ids': '1.0', 'Flavor': '1.2', 'InstanceDeviceMetadata': '1.0',
                 'InstanceFault': '1.2', 'InstanceInfoCache': '1.5', 'InstanceNUMATopology': '1.3',
                 'InstancePCIRequests': '1.1', 'KeyPairList': '1.3', 'MigrationContext': '1.2',
                 'PciDeviceList': '1.3', 'ResourceList': '1.0', 'SecurityGroupList': '1.1',
                 'ServiceList': '1.19', 'TagList': '1.1', 'TrustedCerts': '1.0',
                 'VirtCPUModel': '1.0'},
    'InstanceMapping': {'CellMapping': '1.1'},
    'InstanceNUMACell': {'VirtCPUTopology': '1.0'},
    'MigrationContext': {'InstanceNUMATopology': '1.3', 'InstancePCIRequests': '1.1',
                         'PciDeviceList': '1.3', 'ResourceList': '1.0'},
    'NUMACell': {'NetworkMetadata': '1.0'},
    'NUMATopologyLimits': {'NetworkMetadata': '1.0'},
    'NetworkInterfaceMetadata': {'DeviceBus': '1.0'},
    'RequestSpec': {'Destination': '1.4', 'Flavor': '1.2', 'ImageMeta': '1.8',
                    'InstanceGroup': '1.11', 'InstanceNUMATopology': '1.3',
                    'InstancePCIRequests': '1.1', 'NetworkMetadata': '1.0',
                    'NetworkRequestList': '1.1', 'RequestLevelParams': '1.1',
                    'SchedulerLimits': '1.0', 'SchedulerRetries': '1.1',
                    'SecurityGroupList': '1.1'},
    'Resource': {'ResourceMetadata': '1.0'},
    'SchedulerLimits': {'NUMATopologyLimits': '1.1'},
    'SchedulerRetries': {'ComputeNodeList': '1.17'},
    'Selection': {'SchedulerLimits': '1.0'},
    'Service': {'ComputeNode': '1.19'},
    'ShareMetadata': {'DeviceBus': '1.0'},
    'VirtCPUModel': {'VirtCPUTopology': '1.0'},
}


def _minisched_classes():
    """Registered classes of minisched itself (not test-only objects a test registered)."""
    classes = {name: [cls for cls in versions if cls.__module__.startswith('minisched.')]
               for name, versions in base.MinischedObjectRegistry.obj_classes().items()}
    return {name: versions for name, versions in classes.items() if versions}


def _checker(classes=None):
    return ovo_fixture.ObjectVersionChecker(classes or _minisched_classes())


def _explain(expected, actual):
    lines = []
    for name in sorted(set(expected) | set(actual)):
        old, new = expected.get(name), actual.get(name)
        if old is None:
            lines.append('%s is new: add %r to the pinned values' % (name, new))
        elif new is None:
            lines.append('%s is gone: remove it from the pinned values' % name)
        elif isinstance(old, str) and old.split('-')[0] == new.split('-')[0]:
            lines.append('%s changed without a version bump (%s -> %s): bump its VERSION, '
                         'handle the old version in obj_make_compatible, then pin the new '
                         'value' % (name, old, new))
        else:
            lines.append('%s: pinned %s, now %s: update the pinned value' % (name, old, new))
    return '\n'.join(lines)


class TestObjectVersions(test_base.TestCase):

    def test_fingerprints_match_the_pinned_versions(self):
        expected, actual = _checker().test_hashes(OBJECT_HASHES)
        self.assertEqual(expected, actual, 'OBJECT_HASHES:\n' + _explain(expected, actual))

    def test_unbumped_field_change_is_detected(self):
        changed = type('Service', (objects.Service,), {
            'fields': dict(objects.Service.fields, extra=fields.StringField())})
        expected, actual = _checker({'Service': [changed]}).test_hashes(
            {'Service': OBJECT_HASHES['Service']})
        self.assertEqual({'Service': OBJECT_HASHES['Service']}, expected)
        self.assertTrue(actual['Service'].startswith('1.22-'))
        self.assertNotEqual(expected, actual)

    def test_child_object_versions_match_the_pinned_tree(self):
        expected, actual = _checker().test_relationships(OBJECT_RELATIONSHIPS)
        self.assertEqual(expected, actual, 'OBJECT_RELATIONSHIPS:\n' + _explain(expected, actual))

    def test_every_object_backports_to_every_older_version(self):
        _checker().test_compatibility_routines(use_manifest=True)

    def test_registry_exposes_the_newest_version(self):
        for name, classes in _minisched_classes().items():
            self.assertIs(classes[0], getattr(objects, name), name)


class TestMakeCompatible(test_base.TestCase):

    @staticmethod
    def _data(obj, version):
        primitive = obj.obj_to_primitive(target_version=version)
        assert primitive['minisched_object.version'] == version
        return primitive['minisched_object.data']

    def test_service_uuid_dropped_before_1_21(self):
        service = objects.Service(uuid=uuids.service, host='host1', report_count=1)
        self.assertNotIn('uuid', self._data(service, '1.20'))
        self.assertEqual('host1', self._data(service, '1.20')['host'])
        self.assertEqual(uuids.service, self._data(service, '1.21')['uuid'])

    def test_compute_node_fields_dropped_by_version(self):
        node = objects.ComputeNode(uuid=uuids.node, host='host1', mapped=1,
                                   cpu_allocation_ratio=16.0, ram_allocation_ratio=1.5,
                                   disk_allocation_ratio=1.0)
        added_in = [('1.17', 'mapped'), ('1.16', 'disk_allocation_ratio'), ('1.15', 'uuid'),
                    ('1.14', 'cpu_allocation_ratio'), ('1.14', 'ram_allocation_ratio')]
        for version in ('1.13', '1.14', '1.15', '1.16', '1.17', '1.19'):
            data = self._data(node, version)
            for since, name in added_in:
                present = tuple(map(int, version.split('.'))) >= tuple(
                    map(int, since.split('.')))
                self.assertEqual(present, name in data, '%s at %s' % (name, version))
            self.assertEqual('host1', data['host'])

    def test_selection_availability_zone_dropped_before_1_1(self):
        selection = objects.Selection(service_host='host1', nodename='node1',
                                      availability_zone='az1')
        self.assertNotIn('availability_zone', self._data(selection, '1.0'))
        self.assertEqual('az1', self._data(selection, '1.1')['availability_zone'])

    def test_cell_mapping_disabled_dropped_before_1_1(self):
        cell = objects.CellMapping(uuid=uuids.cell, name='cell1', disabled=True)
        self.assertNotIn('disabled', self._data(cell, '1.0'))
        self.assertTrue(self._data(cell, '1.1')['disabled'])

    def test_image_secure_boot_dropped_before_1_13(self):
        # The signature properties of 1.12 are never dropped (as in Nova).
        props = objects.ImageMetaProps(os_secure_boot='required',
                                       img_signature_hash_method='SHA-256')
        self.assertNotIn('os_secure_boot', self._data(props, '1.12'))
        self.assertIn('os_secure_boot', self._data(props, '1.13'))
        self.assertIn('img_signature_hash_method', self._data(props, '1.0'))

    def test_child_object_backported_with_the_manifest(self):
        destination = objects.Destination(
            host='host1', cell=objects.CellMapping(uuid=uuids.cell, disabled=False))
        primitive = destination.obj_to_primitive(
            target_version='1.1', version_manifest={'Destination': '1.1', 'CellMapping': '1.0'})
        cell = primitive['minisched_object.data']['cell']
        self.assertEqual('1.0', cell['minisched_object.version'])
        self.assertNotIn('disabled', cell['minisched_object.data'])


class TestPrimitives(test_base.TestCase):

    def test_primitive_carries_only_set_fields_and_changes(self):
        service = objects.Service(host='host1', report_count=3)
        primitive = service.obj_to_primitive()
        self.assertEqual({'minisched_object.name': 'Service',
                          'minisched_object.namespace': 'minisched',
                          'minisched_object.version': '1.22',
                          'minisched_object.data': {'host': 'host1', 'report_count': 3},
                          'minisched_object.changes': ['host', 'report_count']},
                         dict(primitive, **{'minisched_object.changes': sorted(
                             primitive['minisched_object.changes'])}))

    def test_primitive_without_changes_omits_the_key(self):
        service = objects.Service(host='host1')
        service.obj_reset_changes()
        self.assertNotIn('minisched_object.changes', service.obj_to_primitive())

    def test_datetimes_are_iso8601_utc(self):
        when = datetime.datetime(2026, 1, 2, 3, 4, 5)
        primitive = objects.Service(last_seen_up=when).obj_to_primitive()
        self.assertEqual('2026-01-02T03:04:05Z',
                         primitive['minisched_object.data']['last_seen_up'])

    def test_obj_to_primitive_helper_flattens_lists_and_objects(self):
        services = objects.ServiceList(objects=[objects.Service(host='a'),
                                                objects.Service(host='b')])
        self.assertEqual([{'host': 'a'}, {'host': 'b'}], base.obj_to_primitive(services))

    def test_obj_equal_prims_ignores_changes_and_named_fields(self):
        one = objects.Service(host='a', report_count=1)
        two = objects.Service(host='a', report_count=2)
        two.obj_reset_changes()
        self.assertFalse(base.obj_equal_prims(one, two))
        self.assertTrue(base.obj_equal_prims(one, two, ignore=['report_count']))
