"""Aggregate helpers, per-aggregate numbers, ratio fallback and version predicates."""
import numpy as np

from minisched.scheduler import filters
from minisched.scheduler import host_state as host_state_mod
from minisched.scheduler.filters import utils
from tests.unit import base, fakes


class TestAggregateHelpers(base.TestCase):
    def setUp(self):
        super().setUp()
        self.host = fakes.fake_host_state(aggregates=[
            fakes.fake_aggregate({'availability_zone': 'az1', 'ssd': 'true'}, id=1),
            fakes.fake_aggregate({'availability_zone': 'az2, az3', 'gpu': 'a,b'}, id=2),
            fakes.fake_aggregate({'ssd': 'false'}, id=3),
        ])

    def test_aggregate_values_from_key_are_raw_values(self):
        self.assertEqual({'az1', 'az2, az3'},
                         utils.aggregate_values_from_key(self.host, 'availability_zone'))
        self.assertEqual(set(), utils.aggregate_values_from_key(self.host, 'missing'))

    def test_metadata_by_host_splits_strips_and_merges(self):
        metadata = utils.aggregate_metadata_get_by_host(self.host)
        self.assertEqual({'az1', 'az2', 'az3'}, metadata['availability_zone'])
        self.assertEqual({'true', 'false'}, metadata['ssd'])
        self.assertEqual({'a', 'b'}, metadata['gpu'])

    def test_metadata_by_host_with_key_keeps_only_aggregates_having_it(self):
        metadata = utils.aggregate_metadata_get_by_host(self.host, key='availability_zone')
        # aggregate 3 has no AZ, so its 'false' is not there
        self.assertEqual({'true'}, metadata['ssd'])
        self.assertNotIn('missing', utils.aggregate_metadata_get_by_host(self.host, 'missing'))

    def test_validate_num_values(self):
        cases = [
            (set(), 7, int, 7),
            ({'3'}, 7, int, 3),
            ({'3', '1', '2'}, 7, int, 1),
            ({'1.5', '0.5'}, None, float, 0.5),
            ({' 4 '}, 7, int, 4),
        ]
        for values, default, cast_to, expected in cases:
            with self.subTest(values=values):
                self.assertEqual(expected,
                                 utils.validate_num_values(values, default, cast_to=cast_to))
        self.assertEqual(3, utils.validate_num_values({'1', '3'}, based_on=max))
        self.assertRaises(ValueError, utils.validate_num_values, {'1.5'}, 7, cast_to=int)

    def test_aggregate_number_falls_back_on_bad_value(self):
        host = fakes.fake_host_state(aggregates=[fakes.fake_aggregate({'k': 'x'})])
        self.assertEqual(7, utils.aggregate_number(host, 'k', 7, int))

    def test_instance_uuids_overlap(self):
        host = fakes.fake_host_state(instances={'u1': None, 'u2': None})
        self.assertTrue(utils.instance_uuids_overlap(host, 'u1'))
        self.assertTrue(utils.instance_uuids_overlap(host, ['x', 'u2']))
        self.assertFalse(utils.instance_uuids_overlap(host, ['x']))
        self.assertFalse(utils.instance_uuids_overlap(host, []))


class TestRatios(base.TestCase):
    def test_node_ratio_substitutes_unset_values(self):
        cases = [  # (node value, [DEFAULT] option, expected)
            (2.0, 0.0, 2.0), (None, 0.0, 1.5), (0.0, 0.0, 1.5), (-0.0, 0.0, 1.5),
            (None, 3.0, 3.0), (0.0, 3.0, 3.0), (0.5, 3.0, 0.5),
        ]
        for node, option, expected in cases:
            with self.subTest(node=node, option=option):
                self.flags(ram_allocation_ratio=option)
                host = fakes.fake_host_state(ram_allocation_ratio=node)
                self.assertEqual(expected,
                                 utils.node_ratio(self.conf, host, 'ram_allocation_ratio'))

    def test_node_ratio_rows_matches_node_ratio(self):
        table = host_state_mod.HostStateTable()
        hosts = [fakes.fake_host_state('h%d' % i, table=table, cpu_allocation_ratio=ratio)
                 for i, ratio in enumerate([None, 0.0, -0.0, 4.0, 0.25])]
        view = filters.RowView(table, table.rows())
        rows = utils.node_ratio_rows(self.conf, view, 'cpu_allocation_ratio')
        expected = [utils.node_ratio(self.conf, h, 'cpu_allocation_ratio') for h in hosts]
        np.testing.assert_array_equal(expected, rows)
        self.assertEqual([16.0, 16.0, 16.0, 4.0, 0.25], list(rows))


class TestVersionSatisfies(base.TestCase):
    def test_version_predicates(self):
        cases = [
            ('>= 6.0', '6.0', True), ('>=6.0', '6.0.0', True), ('> 6.0', '6.0.0', False),
            ('< 6.0', '5.9.9', True), ('<= 6.0', '6.0.1', False), ('== 6.0', '6.0.0', True),
            ('!= 6.0', '6.0.0', False), ('>= 5.0, < 7.0', '6.1', True),
            ('>= 5.0, < 7.0', '7.0', False), (' >= 1.2 ', '1.10', True),
            ('>= 1.0a1', '1.0', True), ('< 1.0', '1.0', False),
            # PEP 440, as oslo.utils' VersionPredicate (HEAD Nova) compares: missing parts are
            # zeros and more than three parts are allowed.
            ('>= 6', '6.0', True), ('>= 6.0', '6', True), ('== 6', '6.0.0', True),
            ('>= 2.11, < 7', '6.2.0', True), ('< 7', '7.0.0.1', False),
            ('>= 1.0', '1.2.3.4', True), ('>= 1.0\n', '1.0', True),
        ]
        for requirement, version, expected in cases:
            with self.subTest(requirement=requirement, version=version):
                self.assertIs(expected, utils.version_satisfies(requirement, version))

    def test_bad_predicates_raise_value_error(self):
        for requirement, version in [('6.0', '6.0'), ('>= x', '6.0'), ('>= 6.0', 'x'),
                                     ('>= 6.0,', '6.0'), ('=> 6.0', '6.0'), ('', '6.0')]:
            with self.subTest(requirement=requirement, version=version):
                self.assertRaises(ValueError, utils.version_satisfies, requirement, version)
