"""DiskWeigher: free disk, minval 0, multiplier and aggregate override."""
from minisched.scheduler.weights import disk
from tests.unit import fakes
from tests.unit.scheduler.weights import helpers

FS = 'filter_scheduler'

CASES = [
    ('normalised against max (minval 0)', {},
     [{'free_disk_mb': 1024}, {'free_disk_mb': 4096}, {'free_disk_mb': 3072}],
     [('host2', 1.0), ('host3', 0.75), ('host1', 0.25)]),
    ('equal non-zero values weigh 1.0 each', {},
     [{'free_disk_mb': 10}, {'free_disk_mb': 10}], [('host1', 1.0), ('host2', 1.0)]),
    ('negative free disk is clamped to 0', {},
     [{'free_disk_mb': -2048}, {'free_disk_mb': 1024}], [('host2', 1.0), ('host1', 0.0)]),
    ('all zero weigh 0', {},
     [{'free_disk_mb': 0}, {'free_disk_mb': 0}], [('host1', 0.0), ('host2', 0.0)]),
    ('negative multiplier stacks', {FS: {'disk_weight_multiplier': -1.0}},
     [{'free_disk_mb': 4096}, {'free_disk_mb': 1024}], [('host2', -0.25), ('host1', -1.0)]),
    ('aggregate override; several aggregates take the minimum', {},
     [{'free_disk_mb': 4096},
      {'free_disk_mb': 4096, 'aggregates': [
          fakes.fake_aggregate({'disk_weight_multiplier': '3.0'}, id=1),
          fakes.fake_aggregate({'disk_weight_multiplier': '0.5'}, id=2)]}],
     [('host1', 1.0), ('host2', 0.5)]),
]


class TestDiskWeigher(helpers.WeigherTestCase):
    def test_cases(self):
        self.check_cases([disk.DiskWeigher], CASES)
