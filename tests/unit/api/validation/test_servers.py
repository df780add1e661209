"""Server create: name, zone, count, metadata and each scheduler hint Nova types."""
from minisched.api.validation import servers
from minisched import exception
from tests.unit import base

uuids = base.uuids


class ServerTestCase(base.TestCase):

    def refusal(self, **kw):
        with self.assertRaises(exception.ValidationError) as raised:
            servers.validate_create(**kw)
        return raised.exception

    def assertRefused(self, field, says, **kw):
        error = self.refusal(**kw)
        self.assertEqual(field, error.kwargs['field'])
        self.assertIn(says, error.format_message())


class TestNameZoneCount(ServerTestCase):

    def test_a_plain_request(self):
        self.assertEqual(
            servers.CreateRequest('web', 'az1', {}, {'role': 'db'}, 2, 2),
            servers.validate_create('web', 'az1', None, {'role': 'db'}, '2'))
        self.assertEqual(servers.CreateRequest(None, None, {}, {}, 1, 1),
                         servers.validate_create())

    def test_name_and_zone_boundaries(self):
        servers.validate_create(name='n' * 255, availability_zone='z' * 255)
        self.assertRefused('name', 'maximum of 255', name='n' * 256)
        self.assertRefused('availability_zone', 'maximum of 255', availability_zone='z' * 256)
        self.assertRefused('name', '300 characters long', name='n' * 300)
        self.assertRefused('availability_zone', '300 characters long',
                           availability_zone='z' * 300)

    def test_the_suffix_of_the_last_server_must_fit(self):
        servers.validate_create(name='n' * 253, num_instances=9)   # n...-9: 255
        self.assertRefused('name', 'would be 256 characters', name='n' * 253, num_instances=10)
        self.assertRefused('name', 'would be 256 characters', name='n' * 254, num_instances=2)

    def test_names_and_zones_follow_nova_name_rules(self):
        for value in ('', ' web', 'web ', 'a\nb', 5):
            with self.subTest(value=value):
                self.assertEqual('name', self.refusal(name=value).kwargs['field'])
                self.assertEqual('availability_zone',
                                 self.refusal(availability_zone=value).kwargs['field'])

    def test_count_is_a_positive_integer(self):
        for value in (0, -1, True, '1.0', None, 'x'):
            with self.subTest(value=value):
                self.assertEqual('num_instances',
                                 self.refusal(num_instances=value).kwargs['field'])

    def test_min_count_is_a_positive_integer_at_most_max_count(self):
        """Nova's ``min_count``/``max_count``: ``num_instances`` is the maximum."""
        request = servers.validate_create(num_instances=5, min_count='2')
        self.assertEqual((5, 2), (request.count, request.min_count))
        self.assertEqual((5, 5), servers.validate_create(num_instances=5)[4:])
        self.assertRefused('min_count', 'min_count must be <= max_count (5)', num_instances=5,
                           min_count=6)
        for value in (0, -1, True, '1.0', 'x'):
            with self.subTest(value=value):
                self.assertEqual('min_count', self.refusal(num_instances=5,
                                                           min_count=value).kwargs['field'])

    def test_an_absurd_count_is_refused_at_once(self):
        """No maximum in the schema (Nova's has none), but nothing is built per instance
        before the count is read: ``1099511627776`` is just a large integer here."""
        request = servers.validate_create(num_instances=1099511627776)
        self.assertEqual(1099511627776, request.count)

    def test_metadata(self):
        self.assertRefused('metadata.k', 'maximum of 255', metadata={'k': 'v' * 256})
        self.assertRefused('metadata', 'characters a-z', metadata={'k/1': 'v'})
        self.assertRefused('metadata', 'maximum of 128',
                           metadata={'k%d' % i: '' for i in range(129)})


class TestSchedulerHints(ServerTestCase):

    def hints(self, hints):
        return servers.validate_create(scheduler_hints=hints).scheduler_hints

    def test_hints_are_returned_as_the_request_spec_holds_them(self):
        self.assertEqual({
            'same_host': [uuids.a], 'different_host': [uuids.a, uuids.b], 'group': [uuids.g],
            'query': ['[">=", "$free_ram_mb", 1024]'], 'target_cell': ['cell1'],
            'different_cell': ['cell2'], 'build_near_host_ip': ['10.0.0.1'], 'cidr': ['/24'],
            'custom': ['1'], 'several': ['a', '2'],
        }, self.hints({
            'same_host': uuids.a, 'different_host': [uuids.a, uuids.b], 'group': [uuids.g],
            'query': ['[">=", "$free_ram_mb", 1024]'], 'target_cell': 'cell1',
            'different_cell': 'cell2', 'build_near_host_ip': ['10.0.0.1'], 'cidr': '/24',
            'custom': 1, 'several': ['a', 2]}))

    def test_an_object_query_is_kept_as_its_json(self):
        self.assertEqual({'query': ['{"and": []}']}, self.hints({'query': {'and': []}}))

    def test_bad_hints_are_refused_naming_the_hint(self):
        for hints, says in (
                ({'same_host': 'host1'}, 'not a valid UUID'),
                ({'different_host': [uuids.a, 'x']}, 'not a valid UUID'),
                ({'group': 'my-group'}, 'not a valid UUID'),
                ({'query': '[">=", "$free_ram_mb"'}, 'not valid JSON'),
                ({'query': ['[]', '[]']}, 'list of 2 values'),
                ({'query': 5}, 'not a string'),
                ({'target_cell': 'c' * 256}, 'maximum of 255'),
                ({'build_near_host_ip': 'host1'}, 'IPv4 or IPv6'),
                ({'cidr': '24'}, "'/PREFIX'"),
                ({'cidr': '/24/'}, "'/PREFIX'"),
                ({'different_cell': [1]}, 'not a string'),
                ({'custom': {'a': 1}}, 'type dict'),
                ({'custom': None}, 'type NoneType'),
                ({'custom': [[1]]}, 'type list')):
            with self.subTest(hints=hints):
                name, = hints
                self.assertRefused('scheduler_hints.%s' % name, says, scheduler_hints=hints)

    def test_hints_must_be_a_dict_with_string_names(self):
        self.assertRefused('scheduler_hints', 'not an object', scheduler_hints=['same_host'])
        self.assertRefused('scheduler_hints', 'not a string', scheduler_hints={1: 'x'})
