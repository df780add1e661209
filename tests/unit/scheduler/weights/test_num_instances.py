"""NumInstancesWeigher: num_instances, list-bounded, multiplier 0.0 by default."""
from minisched.scheduler.weights import num_instances
from tests.unit import fakes
from tests.unit.scheduler.weights import helpers

FS = 'filter_scheduler'

CASES = [
    ('off by default', {},
     [{'num_instances': 5}, {'num_instances': 1}], [('host1', 0.0), ('host2', 0.0)]),
    ('negative multiplier spreads, normalised on the list min..max',
     {FS: {'num_instances_weight_multiplier': -1.0}},
     [{'num_instances': 6}, {'num_instances': 2}, {'num_instances': 4}],
     [('host2', 0.0), ('host3', -0.5), ('host1', -1.0)]),
    ('positive multiplier packs', {FS: {'num_instances_weight_multiplier': 2.0}},
     [{'num_instances': 1}, {'num_instances': 3}], [('host2', 2.0), ('host1', 0.0)]),
    ('equal values are list-bounded: all 0', {FS: {'num_instances_weight_multiplier': 1.0}},
     [{'num_instances': 7}, {'num_instances': 7}], [('host1', 0.0), ('host2', 0.0)]),
    ('aggregate turns it on for its hosts', {},
     [{'num_instances': 1}, {'num_instances': 3, 'aggregates': [
         fakes.fake_aggregate({'num_instances_weight_multiplier': '-4'})]}],
     [('host1', 0.0), ('host2', -4.0)]),
]


class TestNumInstancesWeigher(helpers.WeigherTestCase):
    def test_cases(self):
        self.check_cases([num_instances.NumInstancesWeigher], CASES)
