"""An Instance and a BuildRequest built by Nova 34 deserialize in minisched, are kept whole
in its databases, and deserialize in Nova again.

Nova's side runs in a process of its own (:mod:`tests.nova_compat.nova_instance`). The object
namespace is translated (``nova_object.*`` to ``minisched_object.*`` and back), as a wire
speaking Nova's namespace does; nothing else is.
"""
import json
import os
import subprocess
import sys
import tempfile

from minisched import objects
from minisched.objects import base as obj_base
from minisched.objects import build_request as build_request_obj
from minisched.objects import instance as instance_obj
from tests.nova_compat import client
from tests.unit import base
from tests.unit import sqlite_databases

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_CI = os.environ.get('CI', '').lower() == 'true'
#: Instance fields minisched derives instead of storing (as Nova does).
_DERIVED = ('fault', 'services', 'ec2_ids')


def _translate(primitive, source, target):
    """``primitive`` with the object keys and namespace of ``source`` made ``target``'s."""
    if isinstance(primitive, list):
        return [_translate(item, source, target) for item in primitive]
    if not isinstance(primitive, dict):
        return primitive
    result = {}
    for key, value in primitive.items():
        if key.startswith(source + '_object.'):
            key = target + '_object.' + key.split('.', 1)[1]
            if key.endswith('.namespace'):
                value = target
        result[key] = _translate(value, source, target)
    return result


def _without_changes(primitive):
    """``primitive`` as the wire carries it (JSON: tuples are lists), without change lists."""
    return _strip_changes(json.loads(json.dumps(primitive)))


def _strip_changes(primitive):
    if isinstance(primitive, list):
        return [_strip_changes(item) for item in primitive]
    if not isinstance(primitive, dict):
        return primitive
    return {key: _strip_changes(value) for key, value in primitive.items()
            if not key.endswith('_object.changes')}


def _unset(obj, *names):
    """``obj`` without ``names`` (what a caller creating it would not set)."""
    for name in names:
        delattr(obj, '_obj_' + name)
    obj.obj_reset_changes(names)


def _nova(*args):
    out = subprocess.run([sys.executable, '-m', 'tests.nova_compat.nova_instance', *args],
                         cwd=_ROOT, capture_output=True, text=True, timeout=300)
    if out.returncode:
        raise AssertionError('Nova failed:\n%s' % out.stderr[-4000:])
    return json.loads(out.stdout)


class TestNovaInstance(sqlite_databases.SqliteDatabases, base.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        missing = client.missing()
        if missing:
            if _CI:
                raise AssertionError('CI=true and Nova is not installed: %s' % missing)
            raise __import__('unittest').SkipTest('Nova 34 NOT COMPARED: %s' % missing)
        cls.nova = _nova()
        cls.sent = {name: _translate(prim, 'nova', 'minisched')
                    for name, prim in cls.nova.items()}

    def setUp(self):
        super().setUp()
        self.use_databases()

    def _data(self, obj):
        return _without_changes(obj.obj_to_primitive())['minisched_object.data']

    def test_every_field_deserializes_as_nova_sent_it(self):
        for name, cls in (('Instance', objects.Instance),
                          ('BuildRequest', objects.BuildRequest)):
            obj = obj_base.MinischedObject.obj_from_primitive(self.sent[name])
            self.assertIsInstance(obj, cls)
            self.assertEqual(_without_changes(self.sent[name]),
                             _without_changes(obj.obj_to_primitive()), name)
        instance = obj_base.MinischedObject.obj_from_primitive(self.sent['Instance'])
        self.assertEqual('fa:16:3e:00:00:01', instance.info_cache.network_info[0]['address'])
        self.assertEqual(['blue'], [tag.tag for tag in instance.tags])
        self.assertEqual('2001:db8::10', str(instance.access_ip_v6))

    def test_created_instance_reads_back_every_stored_field(self):
        sent = obj_base.MinischedObject.obj_from_primitive(self.sent['Instance'])
        instance = objects.Instance.obj_from_primitive(self.sent['Instance'],
                                                       context=self.ctxt)
        _unset(instance, 'id', *_DERIVED)
        instance.create()
        read = objects.Instance.get_by_uuid(self.ctxt, sent.uuid)
        expected, actual = self._data(sent), self._data(read)
        for name in ('id', 'created_at', 'updated_at') + _DERIVED:
            expected.pop(name, None)
            actual.pop(name, None)
        # An empty list is read back unset, and loads as an empty list when read.
        for name in instance_obj.Instance._LIST_COLUMNS:
            if not len(getattr(sent, name)):
                self.assertNotIn(name, actual)
                self.assertEqual([], list(getattr(read, name)))
                expected.pop(name)
        self.assertEqual(expected, actual)
        # The derived fields load when read, from what minisched has.
        self.assertIsNone(read.fault)
        self.assertEqual('i-%08x' % read.id, read.ec2_ids.instance_id)
        self.assertEqual([], list(read.services))

    def test_children_read_back_by_their_own_remotables(self):
        instance = objects.Instance.obj_from_primitive(self.sent['Instance'],
                                                       context=self.ctxt)
        _unset(instance, 'id', *_DERIVED)
        instance.create()
        uuid = instance.uuid
        self.assertEqual(['cert1', 'cert2'],
                         objects.TrustedCerts.get_by_instance_uuid(self.ctxt, uuid).ids)
        self.assertEqual('Skylake',
                         objects.VirtCPUModel.get_by_instance_uuid(self.ctxt, uuid).model)
        self.assertEqual(9, objects.MigrationContext.get_by_instance_uuid(
            self.ctxt, uuid).migration_id)
        self.assertEqual('ns_0', objects.ResourceList.get_by_instance_uuid(
            self.ctxt, uuid)[0].identifier)
        self.assertEqual(2, len(objects.InstanceDeviceMetadata.get_by_instance_uuid(
            self.ctxt, uuid).devices))
        cache = objects.InstanceInfoCache.get_by_instance_uuid(self.ctxt, uuid)
        cache.network_info = []
        cache.save()
        self.assertEqual([], objects.Instance.get_by_uuid(self.ctxt,
                                                          uuid).info_cache.network_info)

    def test_build_request_keeps_its_mappings_and_tags(self):
        request = objects.BuildRequest.obj_from_primitive(self.sent['BuildRequest'],
                                                          context=self.ctxt)
        request.create()
        read = objects.BuildRequest.get_by_instance_uuid(self.ctxt, request.instance_uuid)
        self.assertEqual(self._data(request)['block_device_mappings'],
                         self._data(read)['block_device_mappings'])
        self.assertEqual(['blue'], [tag.tag for tag in read.tags])
        self.assertEqual(['blue'], [tag.tag for tag in read.instance.tags])
        read.tags = objects.TagList(objects=[])
        read.save()
        self.assertEqual([], list(objects.BuildRequest.get_by_instance_uuid(
            self.ctxt, request.instance_uuid).tags))

    def test_nova_deserializes_what_minisched_sends(self):
        primitives = {}
        for name in ('Instance', 'BuildRequest'):
            obj = obj_base.MinischedObject.obj_from_primitive(self.sent[name])
            primitives[name] = _translate(obj.obj_to_primitive(), 'minisched', 'nova')
        with tempfile.NamedTemporaryFile('w', suffix='.json') as f:
            json.dump(primitives, f)
            f.flush()
            loaded = _nova(f.name)
        for name in primitives:
            self.assertEqual(_without_changes(self.nova[name]),
                             _without_changes(loaded[name]), name)


class TestInstanceBackports(base.TestCase):
    """Older Instance and BuildRequest versions drop what they did not have, as Nova's."""

    def test_instance_fields_dropped_by_version(self):
        inst = instance_obj.Instance(compute_id=1, resources=None, hidden=False,
                                     trusted_certs=None, device_metadata=None,
                                     keypairs=objects.KeyPairList(objects=[]),
                                     services=objects.ServiceList(objects=[]), host='h')
        added = [('2.8', 'compute_id'), ('2.7', 'resources'), ('2.6', 'hidden'),
                 ('2.4', 'trusted_certs'), ('2.3', 'device_metadata'), ('2.2', 'keypairs'),
                 ('2.1', 'services')]
        for version in ('2.0', '2.1', '2.2', '2.3', '2.4', '2.5', '2.6', '2.7', '2.8'):
            data = inst.obj_to_primitive(
                target_version=version, version_manifest=obj_base.obj_tree_get_versions(
                    'Instance'))['minisched_object.data']
            for since, name in added:
                self.assertEqual(tuple(map(int, version.split('.'))) >= tuple(
                    map(int, since.split('.'))), name in data, '%s at %s' % (name, version))
            self.assertEqual('h', data['host'])

    def test_build_request_tags_and_mappings_dropped_by_version(self):
        request = build_request_obj.BuildRequest(
            project_id='p', tags=objects.TagList(objects=[]),
            block_device_mappings=objects.BlockDeviceMappingList(objects=[]))
        for version, present in (('1.0', set()), ('1.2', {'block_device_mappings'}),
                                 ('1.3', {'block_device_mappings', 'tags'})):
            data = request.obj_to_primitive(
                target_version=version, version_manifest=obj_base.obj_tree_get_versions(
                    'BuildRequest'))['minisched_object.data']
            self.assertEqual(present, set(data) - {'project_id'}, version)
