"""Flavor create: every field's rule at its boundaries."""
from minisched.api.validation import flavors
from minisched.api.validation import parameter_types as types
from minisched import exception
from tests.unit import base

GOOD = dict(name='m1.small', memory_mb=512, vcpus=1, root_gb=0)


class TestFlavorCreate(base.TestCase):

    def refusal(self, **kw):
        with self.assertRaises(exception.ValidationError) as raised:
            flavors.validate_create(**dict(GOOD, **kw))
        return raised.exception

    def test_values_are_converted_as_nova_takes_them(self):
        values = flavors.validate_create(
            'm1', '512', '2', '10', ephemeral_gb='0', swap=256, flavorid=42,
            rxtx_factor='1.5', is_public='false', description='small',
            extra_specs={'hw:numa_nodes': 1})
        self.assertEqual({'name': 'm1', 'flavorid': '42', 'memory_mb': 512, 'vcpus': 2,
                          'root_gb': 10, 'ephemeral_gb': 0, 'swap': 256, 'rxtx_factor': 1.5,
                          'is_public': False, 'description': 'small',
                          'extra_specs': {'hw:numa_nodes': '1'}}, values)
        self.assertIsNone(flavors.validate_create(**GOOD)['flavorid'])  # a new UUID

    def test_boundaries(self):
        flavors.validate_create(name='x' * 255, memory_mb=types.MAX_INT, vcpus=types.MAX_INT,
                                root_gb=types.MAX_INT, ephemeral_gb=types.MAX_INT,
                                swap=types.MAX_INT, flavorid='i' * 255,
                                description='d' * 65535)
        for kw, field, says in (
                ({'name': 'x' * 256}, 'name', 'maximum of 255'),
                ({'flavorid': 'i' * 256}, 'id', 'maximum of 255'),
                ({'memory_mb': types.MAX_INT + 1}, 'ram', 'maximum of 2147483647'),
                ({'memory_mb': 0}, 'ram', 'minimum of 1'),
                ({'vcpus': 0}, 'vcpus', 'minimum of 1'),
                ({'root_gb': -1}, 'disk', 'minimum of 0'),
                ({'root_gb': '-1'}, 'disk', 'Is not an integer'),
                ({'root_gb': types.MAX_INT + 1}, 'disk', 'maximum'),
                ({'ephemeral_gb': -1}, 'OS-FLV-EXT-DATA:ephemeral', 'minimum of 0'),
                ({'swap': types.MAX_INT + 1}, 'swap', 'maximum'),
                ({'rxtx_factor': 0}, 'rxtx_factor', 'minimum of 0'),
                ({'description': 'd' * 65536}, 'description', 'maximum of 65535')):
            with self.subTest(kw=kw):
                error = self.refusal(**kw)
                self.assertEqual(field, error.kwargs['field'])
                self.assertIn(says, error.format_message())

    def test_wrong_types_and_forms(self):
        for kw, field in (({'name': None}, 'name'), ({'name': ' m1'}, 'name'),
                          ({'memory_mb': '512MB'}, 'ram'), ({'vcpus': 1.5}, 'vcpus'),
                          ({'vcpus': True}, 'vcpus'), ({'flavorid': 'a/b'}, 'id'),
                          ({'flavorid': ' a'}, 'id'), ({'flavorid': ''}, 'id'),
                          ({'is_public': 'maybe'}, 'os-flavor-access:is_public'),
                          ({'description': 'a\x00'}, 'description'),
                          ({'extra_specs': {'hw:cpu_policy': 'x'}}, 'extra_specs.hw:cpu_policy')):
            with self.subTest(kw=kw):
                self.assertEqual(field, self.refusal(**kw).kwargs['field'])
