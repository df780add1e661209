"""HypervisorVersionWeigher: newer hosts win, None counts as 0, list-bounded."""
from minisched.scheduler.weights import hypervisor_version
from tests.unit.scheduler.weights import helpers

FS = 'filter_scheduler'

CASES = [
    ('newer wins; None is 0', {},
     [{'hypervisor_version': 1000}, {'hypervisor_version': None},
      {'hypervisor_version': 2000}],
     [('host3', 1.0), ('host1', 0.5), ('host2', 0.0)]),
    ('equal versions weigh 0 (list-bounded)', {},
     [{'hypervisor_version': 3}, {'hypervisor_version': 3}], [('host1', 0.0), ('host2', 0.0)]),
    ('negative multiplier prefers older', {FS: {'hypervisor_version_weight_multiplier': -2.0}},
     [{'hypervisor_version': 2000}, {'hypervisor_version': 1000}],
     [('host2', 0.0), ('host1', -2.0)]),
]


class TestHypervisorVersionWeigher(helpers.WeigherTestCase):
    def test_cases(self):
        self.check_cases([hypervisor_version.HypervisorVersionWeigher], CASES)
