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
    'BuildRequest': '1.3-c6cd434db5cbdb4d1ebb935424261377',
    'BuildRequestList': '1.0-4ee0d9efdfd681fed822da88376e04d2',
    'CellMapping': '1.1-5d652928000a5bc369d79d5bde7e497d',
    'CellMappingList': '1.1-496ef79bb2ab41041fff8bcb57996352',
    'ComputeNode': '1.19-af6bd29a6c3b225da436a0d8487096f2',
    'ComputeNodeList': '1.17-52f3b0962b1c86b98590144463ebb192',
    'Destination': '1.2-74854e8cfe7fe616294d93a5d189d885',
    'Flavor': '1.2-4ce99b41327bb230262e5a8f45ff0ce3',
    'FlavorList': '1.1-52b5928600e7ca973aa4fc1e46f3934c',
    'HVSpec': '1.2-de06bcec472a2f04966b855a49c46b41',
    'HostMapping': '1.0-1a3390a696792a552ab7bd31a77ba9ac',
    'HostMappingList': '1.1-18ac2bfb8c1eb5545bed856da58a79bc',
    'ImageMeta': '1.8-642d1b2eb3e880a367f37d72dd76162d',
    'ImageMetaProps': '1.36-331292072aec05844156f9676eafa408',
    'Instance': '2.4-828721e8c8023e07d6bfbace6a1d93d7',
    'InstanceAction': '1.2-fefb17d3f0f89b664eb5b800c353199e',
    'InstanceActionEvent': '1.5-2fe2c9fd0b404f752531f9c743c5269e',
    'InstanceActionEventList': '1.1-13d92fb953030cdbfee56481756e02be',
    'InstanceActionList': '1.1-4a53826625cc280e15fae64a575e0879',
    'InstanceFault': '1.2-eab2dc5c0aca65976dea1954de16a60a',
    'InstanceFaultList': '1.2-f8ec07cbe3b60f5f07a8b7a06311ac0d',
    'InstanceGroup': '1.11-fa8f92510f1ca068a1e4fda8d6d401a5',
    'InstanceGroupList': '1.8-f09b69b902f0bd6f21ae208f2213edd5',
    'InstanceList': '2.4-92be352ff2e7f3612800f074b2200bf9',
    'InstanceMapping': '1.2-bc82537ca278eb17e11f7a89ad170984',
    'InstanceNUMACell': '1.6-25d9120d83a18356f4146f2a6fe2cc8d',
    'InstanceNUMATopology': '1.3-b7b14056ebcb03f2f406310ff454f9a9',
    'NUMACell': '1.5-2592de3c926a7840d763bcc85f81afa7',
    'NUMAPagesTopology': '1.1-edab9fa2dc43c117a38d600be54b4542',
    'NUMATopology': '1.2-c63fad38be73b6afd04715c9c1b29220',
    'NUMATopologyLimits': '1.1-4235c5da7a76c7e36075f0cd2f5cf922',
    'NetworkMetadata': '1.0-2cb8d21b34f87b0261d3e1d1ae5cf218',
    'InstancePCIRequest': '1.4-b27808ae189699df27f8f5b908b6393e',
    'InstancePCIRequests': '1.1-3928680ff73c1b9e8a1d15042f6c8287',
    'PciDevice': '1.7-6e6410f571a0d3b0e3c0b53a9b6913df',
    'PciDeviceList': '1.3-15ecf022a68ddbb8c2a6739cfc9f8f5e',
    'PciDevicePool': '1.1-3f5ddc3ff7bfa14da7f6c7e9904cc000',
    'PciDevicePoolList': '1.1-15ecf022a68ddbb8c2a6739cfc9f8f5e',
    'RequestSpec': '1.11-fd9427574f0138f9f4330ca09a408edd',
    'SchedulerLimits': '1.0-249c4bd8e62a9b327b7026b7f19cc641',
    'SchedulerRetries': '1.1-3c9c8b16143ebbb6ad7030e999d14cc0',
    'SecurityGroup': '1.2-86d67d8d3ab0c971e1dc86e02f9524a8',
    'SecurityGroupList': '1.1-c655ed13298e630f4d398152f7d08d71',
    'Selection': '1.1-548e3c2f04da2a61ceaf9c4e1589f264',
    'Service': '1.22-8a740459ab9bf258a19c8fcb875c2d9a',
    'ServiceList': '1.19-5325bce13eebcbf22edc9678285270cc',
    'VirtCPUTopology': '1.0-fc694de72e20298f7c6bab1083fd4563',
}

#: Versions of the child objects each object's fields hold (``obj_relationships``).
OBJECT_RELATIONSHIPS = {
    'BuildRequest': {'Instance': '2.4'},
    'Destination': {'CellMapping': '1.1'},
    'HostMapping': {'CellMapping': '1.1'},
    'ImageMeta': {'ImageMetaProps': '1.36'},
    'ComputeNode': {'PciDevicePoolList': '1.1'},
    'Instance': {'Flavor': '1.2', 'InstanceNUMATopology': '1.3', 'InstancePCIRequests': '1.1',
                 'PciDeviceList': '1.3'},
    'InstanceMapping': {'CellMapping': '1.1'},
    'InstanceNUMACell': {'VirtCPUTopology': '1.0'},
    'NUMACell': {'NetworkMetadata': '1.0'},
    'NUMATopologyLimits': {'NetworkMetadata': '1.0'},
    'RequestSpec': {'Destination': '1.2', 'Flavor': '1.2', 'ImageMeta': '1.8',
                    'InstanceGroup': '1.11', 'InstanceNUMATopology': '1.3',
                    'InstancePCIRequests': '1.1', 'NetworkMetadata': '1.0',
                    'SchedulerLimits': '1.0', 'SchedulerRetries': '1.1'},
    'SchedulerLimits': {'NUMATopologyLimits': '1.1'},
    'SchedulerRetries': {'ComputeNodeList': '1.17'},
    'Service': {'ComputeNode': '1.19'},
    'Selection': {'SchedulerLimits': '1.0'},
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

    def test_image_signature_hash_method_dropped_before_1_13(self):
        props = objects.ImageMetaProps(img_signature_hash_method='SHA-256')
        self.assertNotIn('img_signature_hash_method', self._data(props, '1.12'))
        self.assertIn('img_signature_hash_method', self._data(props, '1.13'))

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
