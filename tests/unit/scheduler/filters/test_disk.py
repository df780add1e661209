"""DiskFilter / AggregateDiskFilter: root + ephemeral + swap, ratio fallback, limits in GB."""
from minisched.scheduler.filters import disk
from tests.unit import base, fakes

# (total_usable_disk_gb, free_disk_mb, node ratio, (root_gb, ephemeral_gb, swap_mb),
#  passes, disk_gb limit)
DISK_CASES = [
    (10, 10240, 1.0, (10, 0, 0), True, 10.0),        # exactly at capacity
    (10, 10240, 1.0, (9, 1, 0), True, 10.0),
    (10, 10240, 1.0, (10, 0, 1), False, None),       # swap counts
    (10, 10240, 5.0, (11, 0, 0), False, None),       # no overcommit against itself
    (10, 0, 2.0, (10, 0, 0), True, 20.0),            # limit 20480 - used 10240
    (10, 0, 2.0, (10, 0, 1), False, None),
    (10, 0, None, (0, 0, 0), True, 10.0),            # unset ratio -> 1.0
    (10, 0, 0.0, (0, 0, 1), False, None),
    (10, 1, 1.0, (0, 0, 1), True, 10.0),
    (3, 1000, 1.5, (1, 0, 512), True, 4.5),          # fractional GB limit
]


class TestDiskFilter(base.TestCase):
    def test_disk_table(self):
        flt = disk.DiskFilter(self.conf)
        for total, free, ratio, (root, eph, swap), passes, limit in DISK_CASES:
            with self.subTest(total=total, free=free, ratio=ratio, req=(root, eph, swap)):
                host = fakes.fake_host_state(total_usable_disk_gb=total, free_disk_mb=free,
                                             disk_allocation_ratio=ratio)
                spec = fakes.fake_spec(root_gb=root, ephemeral_gb=eph, swap=swap)
                self.assertIs(passes, flt.host_passes(host, spec))
                self.assertEqual(limit, host.limits.get('disk_gb'))

    def test_unset_ratio_uses_the_schedulers_option_first(self):
        self.flags(disk_allocation_ratio=3.0)
        host = fakes.fake_host_state(total_usable_disk_gb=1, free_disk_mb=0,
                                     disk_allocation_ratio=None)
        self.assertTrue(disk.DiskFilter(self.conf).host_passes(host, fakes.fake_spec(root_gb=1)))
        self.assertEqual(3.0, host.limits['disk_gb'])


class TestAggregateDiskFilter(base.TestCase):
    # host: 10 GB, all used, node ratio 1.0 -> nothing usable
    CASES = [  # (aggregate metadata list, root_gb, passes, limit)
        ([], 1, False, None),
        ([], 0, True, 10.0),
        ([{'disk_allocation_ratio': '2'}, {'disk_allocation_ratio': '1.5'}], 5, True, 15.0),
        ([{'disk_allocation_ratio': '2'}, {'disk_allocation_ratio': '1.5'}], 6, False, None),
        ([{'disk_allocation_ratio': 'big'}], 1, False, None),    # unparsable: node ratio
    ]

    def test_aggregate_disk_table(self):
        flt = disk.AggregateDiskFilter(self.conf)
        for metadata, root, passes, limit in self.CASES:
            with self.subTest(metadata=metadata, root=root):
                aggs = [fakes.fake_aggregate(m, id=i) for i, m in enumerate(metadata, 1)]
                host = fakes.fake_host_state(total_usable_disk_gb=10, free_disk_mb=0,
                                             disk_allocation_ratio=1.0, aggregates=aggs)
                self.assertIs(passes, flt.host_passes(host, fakes.fake_spec(root_gb=root)))
                self.assertEqual(limit, host.limits.get('disk_gb'))
