"""Per-aggregate weight multipliers (Nova's get_weight_multiplier) and their vector form."""
import numpy as np

from minisched.scheduler import filters
from minisched.scheduler.weights import utils
from tests.unit import fakes
from tests.unit.scheduler.weights import helpers

KEY = 'ram_weight_multiplier'


def agg(value, id=1, key=KEY):
    return fakes.fake_aggregate({key: value}, id=id)


CASES = [
    ('no aggregate: config', [], 1.5),
    ('aggregate without the key: config', [fakes.fake_aggregate({'other': '3'})], 1.5),
    ('one aggregate', [agg('2.0')], 2.0),
    ('several aggregates: minimum', [agg('4', 1), agg('-1.5', 2), agg('3', 3)], -1.5),
    ('same value twice', [agg('2', 1), agg('2', 2)], 2.0),
    ('unparsable: config', [agg('x')], 1.5),
    ('one unparsable among several: config', [agg('0.5', 1), agg('x', 2)], 1.5),
]


class TestWeightMultiplier(helpers.WeigherTestCase):
    def test_get_weight_multiplier(self):
        for name, aggregates, expected in CASES:
            with self.subTest(name):
                host = self.hosts({'aggregates': aggregates})[0]
                self.assertEqual(expected, utils.get_weight_multiplier(host, KEY, 1.5))

    def test_unparsable_value_is_logged(self):
        host = self.hosts({'aggregates': [agg('many')]})[0]
        with self.assertLogs(utils.LOG, 'WARNING') as logs:
            utils.get_weight_multiplier(host, KEY, 1.0)
        self.assertIn("Could not decode 'ram_weight_multiplier'", logs.output[0])

    def test_rows_scalar_without_overrides(self):
        hosts = self.hosts({}, {'aggregates': [fakes.fake_aggregate({'other': '1'})]})
        view = filters.RowView(self.table, np.array([h.row for h in hosts]))
        self.assertEqual(1.5, utils.weight_multipliers_rows(view, KEY, 1.5))

    def test_rows_array_with_overrides(self):
        hosts = self.hosts({}, {'aggregates': [agg('3')]}, {'aggregates': [agg('y')]})
        view = filters.RowView(self.table, np.array([h.row for h in hosts])[::-1])
        self.assertEqual([1.5, 3.0, 1.5],
                         utils.weight_multipliers_rows(view, KEY, 1.5).tolist())
