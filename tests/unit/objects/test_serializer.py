"""The RPC serializer loads only registered minisched objects and reports bad input precisely."""
import copy

from oslo_versionedobjects import exception as ovo_exc

from minisched import context
from minisched import exception
from minisched import objects
from minisched.objects import base
from tests.unit import base as test_base
from tests.unit import fakes

uuids = test_base.uuids


class TestSerializer(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.ctxt = context.get_admin_context()
        self.serializer = base.MinischedObjectSerializer()
        service = objects.Service(uuid=uuids.service, host='host1', report_count=2)
        self.primitive = self.serializer.serialize_entity(self.ctxt, service)

    def _load(self, **overrides):
        primitive = copy.deepcopy(self.primitive)
        for key, value in overrides.items():
            key = 'minisched_object.%s' % key
            if value is None:
                del primitive[key]
            else:
                primitive[key] = value
        return self.serializer.deserialize_entity(self.ctxt, primitive)

    def test_round_trip_restores_fields_changes_and_context(self):
        service = self._load()
        self.assertIsInstance(service, objects.Service)
        self.assertEqual(('host1', 2), (service.host, service.report_count))
        self.assertEqual({'uuid', 'host', 'report_count'}, service.obj_what_changed())
        self.assertIs(self.ctxt, service._context)

    def test_objects_inside_containers_are_serialized(self):
        entity = {'a': [objects.Service(host='h')], 'b': (objects.Flavor(id=1),), 'c': 1}
        primitive = self.serializer.serialize_entity(self.ctxt, entity)
        self.assertEqual('Service', primitive['a'][0]['minisched_object.name'])
        self.assertEqual('Flavor', primitive['b'][0]['minisched_object.name'])
        loaded = self.serializer.deserialize_entity(self.ctxt, primitive)
        self.assertEqual('h', loaded['a'][0].host)
        self.assertEqual(1, loaded['c'])

    def test_three_part_version_is_accepted_as_two_parts(self):
        self.assertEqual('host1', self._load(version='1.22.1').host)

    def test_older_compatible_version_loads_into_the_newest_class(self):
        service = self._load(version='1.20')
        self.assertIsInstance(service, objects.Service)
        self.assertEqual('1.20', service.VERSION)

    def test_unregistered_class_is_unsupported(self):
        with self.assertRaises(exception.UnsupportedObjectError) as ctx:
            self._load(name='Bogus')
        self.assertIn('Bogus', str(ctx.exception))

    def test_other_namespace_is_unsupported(self):
        with self.assertRaises(exception.UnsupportedObjectError) as ctx:
            self._load(namespace='nova')
        self.assertIn('nova.Service', str(ctx.exception))

    def test_newer_version_without_conductor_is_incompatible(self):
        for version in ('1.99', '2.0'):
            with self.assertRaises(exception.IncompatibleObjectVersion) as ctx:
                self._load(version=version)
            self.assertEqual(('Service', version), (ctx.exception.kwargs['objname'],
                                                    ctx.exception.kwargs['objver']))

    def test_newer_version_is_backported_by_the_conductor(self):
        fake = fakes.fake_indirection(self)
        fake.backport_result = self.primitive
        service = self._load(version='1.99')
        self.assertEqual('1.22', service.VERSION)
        self.assertEqual(['Service.None'], fake.methods('backport'))
        self.assertEqual('1.22', fake.calls[0][3][0]['Service'])

    def test_missing_keys_are_invalid(self):
        for key in ('data', 'version'):
            with self.assertRaises(exception.InvalidObjectRequest, msg=key):
                self._load(**{key: None})

    def test_data_that_is_not_a_dict_is_invalid(self):
        for data in ('x', ['host'], 3):
            with self.assertRaises(exception.InvalidObjectRequest, msg=repr(data)):
                self._load(data=data)

    def test_changes_that_are_not_a_list_is_invalid(self):
        with self.assertRaises(exception.InvalidObjectRequest):
            self._load(changes='host')

    def test_bad_field_value_is_invalid(self):
        with self.assertRaises(exception.InvalidObjectRequest) as ctx:
            self._load(data={'report_count': 'many'})
        self.assertIn("'many'", str(ctx.exception))

    def test_bad_version_string_is_invalid(self):
        with self.assertRaises(exception.InvalidObjectRequest):
            self._load(version='one')

    def test_errors_are_minisched_exceptions_not_library_ones(self):
        for overrides in ({'name': 'Bogus'}, {'version': '9.0'}, {'data': 'x'}):
            with self.assertRaises(exception.MinischedException) as ctx:
                self._load(**overrides)
            self.assertNotIsInstance(ctx.exception, ovo_exc.VersionedObjectsException)

    def test_plain_dicts_pass_through(self):
        entity = {'nova_object.name': 'Service', 'x': 1}
        self.assertEqual(entity, self.serializer.deserialize_entity(self.ctxt, entity))
