"""CPUWeigher: vcpus_total * cpu_allocation_ratio - vcpus_used, minval 0."""
from minisched.scheduler.weights import cpu
from tests.unit import fakes
from tests.unit.scheduler.weights import helpers

FS = 'filter_scheduler'

CASES = [
    ('free vCPUs after overcommit, normalised against max', {},
     [{'vcpus_total': 8, 'vcpus_used': 0, 'cpu_allocation_ratio': 2.0},
      {'vcpus_total': 8, 'vcpus_used': 12, 'cpu_allocation_ratio': 2.0},
      {'vcpus_total': 4, 'vcpus_used': 0, 'cpu_allocation_ratio': 1.0}],
     [('host1', 1.0), ('host2', 0.25), ('host3', 0.25)]),
    ('per-host ratio is used', {},
     [{'vcpus_total': 4, 'vcpus_used': 0, 'cpu_allocation_ratio': 4.0},
      {'vcpus_total': 8, 'vcpus_used': 0, 'cpu_allocation_ratio': 1.0}],
     [('host1', 1.0), ('host2', 0.5)]),
    ('overcommitted (negative) hosts clamp to 0', {},
     [{'vcpus_total': 2, 'vcpus_used': 5, 'cpu_allocation_ratio': 1.0},
      {'vcpus_total': 2, 'vcpus_used': 0, 'cpu_allocation_ratio': 1.0}],
     [('host2', 1.0), ('host1', 0.0)]),
    ('all full weigh 0', {},
     [{'vcpus_total': 2, 'vcpus_used': 2, 'cpu_allocation_ratio': 1.0},
      {'vcpus_total': 2, 'vcpus_used': 4, 'cpu_allocation_ratio': 1.0}],
     [('host1', 0.0), ('host2', 0.0)]),
    ('negative multiplier stacks', {FS: {'cpu_weight_multiplier': -1.0}},
     [{'vcpus_total': 8, 'vcpus_used': 0, 'cpu_allocation_ratio': 1.0},
      {'vcpus_total': 8, 'vcpus_used': 6, 'cpu_allocation_ratio': 1.0}],
     [('host2', -0.25), ('host1', -1.0)]),
    ('unparsable aggregate multiplier falls back to the option', {},
     [{'aggregates': [fakes.fake_aggregate({'cpu_weight_multiplier': 'lots'})]},
      {'vcpus_used': 64}],
     [('host1', 1.0), ('host2', 0.5)]),
]


class TestCPUWeigher(helpers.WeigherTestCase):
    def test_cases(self):
        self.check_cases([cpu.CPUWeigher], CASES)

    def test_unset_ratio_fails_like_nova(self):
        hosts = self.hosts({'cpu_allocation_ratio': None}, {})
        with self.assertRaises(TypeError):
            self.weigh([cpu.CPUWeigher], hosts)
