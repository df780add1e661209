"""BuildFailureWeigher: failed_builds, list-bounded, negated multiplier."""
from minisched.scheduler.weights import compute
from tests.unit import fakes
from tests.unit.scheduler.weights import helpers

FS = 'filter_scheduler'

CASES = [
    ('failures are a penalty of up to the multiplier', {},
     [{'failed_builds': 4}, {'failed_builds': 0}, {'failed_builds': 1}],
     [('host2', 0.0), ('host3', -250000.0), ('host1', -1000000.0)]),
    ('equal counts weigh 0 (list-bounded)', {},
     [{'failed_builds': 2}, {'failed_builds': 2}], [('host1', 0.0), ('host2', 0.0)]),
    ('multiplier option is negated', {FS: {'build_failure_weight_multiplier': 10.0}},
     [{'failed_builds': 1}, {'failed_builds': 0}], [('host2', 0.0), ('host1', -10.0)]),
    ('aggregate override is negated too', {},
     [{'failed_builds': 1, 'aggregates': [
         fakes.fake_aggregate({'build_failure_weight_multiplier': '3'})]},
      {'failed_builds': 0}],
     [('host2', 0.0), ('host1', -3.0)]),
]


class TestBuildFailureWeigher(helpers.WeigherTestCase):
    def test_cases(self):
        self.check_cases([compute.BuildFailureWeigher], CASES)
