"""RAMWeigher: free RAM, minval 0, multiplier and aggregate override."""
from minisched.scheduler.weights import ram
from tests.unit import fakes
from tests.unit.scheduler.weights import helpers

FS = 'filter_scheduler'
AGG2 = [fakes.fake_aggregate({'ram_weight_multiplier': '2.0'})]

CASES = [
    ('normalised against max (minval 0), not the list minimum', {},
     [{'free_ram_mb': 1024}, {'free_ram_mb': 2048}, {'free_ram_mb': 4096}],
     [('host3', 1.0), ('host2', 0.5), ('host1', 0.25)]),
    ('equal non-zero values weigh 1.0 each, input order kept', {},
     [{'free_ram_mb': 512}, {'free_ram_mb': 512}], [('host1', 1.0), ('host2', 1.0)]),
    ('negative free RAM is clamped to 0', {},
     [{'free_ram_mb': -1024}, {'free_ram_mb': 2048}], [('host2', 1.0), ('host1', 0.0)]),
    ('all zero weigh 0', {},
     [{'free_ram_mb': 0}, {'free_ram_mb': 0}], [('host1', 0.0), ('host2', 0.0)]),
    ('all negative weigh 0', {},
     [{'free_ram_mb': -5}, {'free_ram_mb': -1}], [('host1', 0.0), ('host2', 0.0)]),
    ('negative multiplier stacks', {FS: {'ram_weight_multiplier': -1.0}},
     [{'free_ram_mb': 1024}, {'free_ram_mb': 4096}], [('host1', -0.25), ('host2', -1.0)]),
    ('multiplier scales', {FS: {'ram_weight_multiplier': 2.0}},
     [{'free_ram_mb': 1024}, {'free_ram_mb': 4096}], [('host2', 2.0), ('host1', 0.5)]),
    ('aggregate metadata overrides the option per host', {},
     [{'free_ram_mb': 4096}, {'free_ram_mb': 4096, 'aggregates': AGG2}],
     [('host2', 2.0), ('host1', 1.0)]),
]


class TestRAMWeigher(helpers.WeigherTestCase):
    def test_cases(self):
        self.check_cases([ram.RAMWeigher], CASES)

    def test_single_host_is_not_weighed(self):
        self.assertEqual([('host1', 0.0)],
                         self.weigh([ram.RAMWeigher], self.hosts({'free_ram_mb': 4096})))

    def test_declared_bounds_never_change(self):
        weigher = ram.RAMWeigher(self.conf)
        self.weigh([ram.RAMWeigher], self.hosts({'free_ram_mb': -10}, {'free_ram_mb': 10 ** 6}))
        self.assertEqual((0, None), (weigher.minval, weigher.maxval))
        self.assertEqual((0, None), (ram.RAMWeigher.minval, ram.RAMWeigher.maxval))
