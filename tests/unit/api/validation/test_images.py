"""The image of a server create: attribute and property types, name lengths."""
from minisched.api.validation import images
from minisched import exception
from tests.unit import base

uuids = base.uuids


class TestImage(base.TestCase):

    def refused(self, image):
        with self.assertRaises(exception.ValidationError) as raised:
            images.check_image(image)
        return raised.exception.kwargs['field'], raised.exception.format_message()

    def test_a_valid_image_passes_unchanged(self):
        image = {'id': uuids.image, 'min_ram': 256, 'min_disk': '1', 'disk_format': 'qcow2',
                 'properties': {'hw_cpu_cores': '4', 'hw_numa_nodes': 2, 'architecture': 'amd64',
                                'hw_cpu_policy': 'dedicated', 'hw_numa_cpus.0': '0-1',
                                'hw_numa_mem.0': '512', 'os_require_quiesce': 'yes',
                                'trait:CUSTOM_X': 'required', 'anything': 'goes',
                                'p' * 255: 1.5, 'flag': True}}
        self.assertIs(image, images.check_image(image))
        self.assertEqual({}, images.check_image(None))
        self.assertEqual({'properties': None}, images.check_image({'properties': None}))

    def test_property_values_of_the_wrong_type_name_the_property(self):
        for key, value in (('hw_cpu_cores', 'four'), ('hw_numa_nodes', '1.5'),
                           ('hw_cpu_policy', 'sometimes'), ('hw_architecture', 'pdp11'),
                           ('architecture', 'pdp11'), ('hw_pci_numa_affinity_policy', 'x'),
                           ('hw_numa_cpus.1', '0-'), ('hw_numa_mem.0', 'lots'),
                           ('hw_maxphysaddr_mode', 'x'), ('hw_video_ram', 'x')):
            with self.subTest(key=key):
                field, message = self.refused({'properties': {key: value}})
                self.assertEqual('image.properties.%s' % key, field)
                self.assertIn('Is not a valid value', message)

    def test_property_names_and_value_types(self):
        self.assertIn('256 characters long', self.refused({'properties': {'p' * 256: 'v'}})[1])
        field, message = self.refused({'properties': {1: 'v'}})
        self.assertEqual('image.properties', field)
        self.assertIn('A property name is of type int, not a string.', message)
        for value in (None, {'a': 1}, ['a']):
            self.assertEqual('image.properties.x', self.refused({'properties': {'x': value}})[0])

    def test_attributes(self):
        for image, field in (({'id': 'not-a-uuid'}, 'image.id'), ({'min_ram': -1}, 'image.min_ram'),
                             ({'min_disk': 2 ** 31}, 'image.min_disk'),
                             ({'size': 'big'}, 'image.size'),
                             ({'properties': ['x']}, 'image.properties'),
                             ('image', 'image')):
            with self.subTest(image=image):
                self.assertEqual(field, self.refused(image)[0])
