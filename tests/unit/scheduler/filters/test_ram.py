"""RamFilter / AggregateRamFilter: capacity boundaries, ratio fallback, limits."""
from minisched.scheduler.filters import ram
from tests.unit import base, fakes

# (total_usable_ram_mb, free_ram_mb, node ratio, requested MB, passes, memory_mb limit)
RAM_CASES = [
    (1024, 1024, 1.0, 1024, True, 1024.0),     # exactly at capacity
    (1024, 1024, 1.0, 1025, False, None),
    (1024, 0, 1.5, 512, True, 1536.0),         # overcommit: limit 1536 - used 1024 = 512
    (1024, 0, 1.5, 513, False, None),
    (1024, 0, None, 512, True, 1536.0),        # unset ratio -> 1.5
    (1024, 0, 0.0, 512, True, 1536.0),         # 0.0 means unset too
    (1024, 1024, 10.0, 1025, False, None),     # no overcommit against itself
    (1024, -512, 1.5, 0, True, 1536.0),        # already overcommitted, empty flavor fits
    (1024, -512, 1.5, 1, False, None),
    (0, 0, 1.5, 0, True, 0.0),
    (1000, 300, 0.5, 1, False, None),          # under-commit: limit 500 < used 700
    (1000, 900, 0.5, 400, True, 500.0),
]


class TestRamFilter(base.TestCase):
    def test_ram_table(self):
        flt = ram.RamFilter(self.conf)
        for total, free, ratio, req, passes, limit in RAM_CASES:
            with self.subTest(total=total, free=free, ratio=ratio, req=req):
                host = fakes.fake_host_state(total_usable_ram_mb=total, free_ram_mb=free,
                                             ram_allocation_ratio=ratio)
                self.assertIs(passes, flt.host_passes(host, fakes.fake_spec(memory_mb=req)))
                self.assertEqual(limit, host.limits.get('memory_mb'))
                if limit is not None:
                    self.assertIsInstance(host.limits['memory_mb'], float)

    def test_unset_ratio_uses_the_schedulers_option_first(self):
        self.flags(ram_allocation_ratio=2.0)
        host = fakes.fake_host_state(total_usable_ram_mb=1024, free_ram_mb=0,
                                     ram_allocation_ratio=None)
        self.assertTrue(ram.RamFilter(self.conf).host_passes(host, fakes.fake_spec(memory_mb=1024)))
        self.assertEqual(2048.0, host.limits['memory_mb'])

    def test_flags(self):
        self.assertFalse(ram.RamFilter.run_filter_once_per_request)
        self.assertFalse(ram.RamFilter.RUN_ON_REBUILD)
        self.assertTrue(ram.RamFilter.SETS_LIMITS)
        self.assertFalse(ram.RamFilter(self.conf).is_noop(fakes.fake_spec()))


class TestAggregateRamFilter(base.TestCase):
    # host: 1024 MB total, all used; node ratio 1.5 -> 512 MB usable
    CASES = [  # (aggregate metadata list, requested, passes, limit)
        ([], 512, True, 1536.0),
        ([{'other': '9'}], 512, True, 1536.0),                  # no ratio key: node ratio
        ([{'ram_allocation_ratio': '2.0'}], 1024, True, 2048.0),
        ([{'ram_allocation_ratio': '2.0'}, {'ram_allocation_ratio': '1.75'}], 768, True, 1792.0),
        ([{'ram_allocation_ratio': '2.0'}, {'ram_allocation_ratio': '1.75'}], 769, False, None),
        ([{'ram_allocation_ratio': '1.0'}], 1, False, None),    # the minimum wins
        ([{'ram_allocation_ratio': 'abc'}], 512, True, 1536.0),  # unparsable: node ratio
        ([{'ram_allocation_ratio': 'abc'}, {'ram_allocation_ratio': '3'}], 512, True, 1536.0),
        ([{'ram_allocation_ratio': '0.0'}], 0, False, None),    # no fallback for aggregates
    ]

    def test_aggregate_ram_table(self):
        flt = ram.AggregateRamFilter(self.conf)
        for metadata, req, passes, limit in self.CASES:
            with self.subTest(metadata=metadata, req=req):
                aggs = [fakes.fake_aggregate(m, id=i) for i, m in enumerate(metadata, 1)]
                host = fakes.fake_host_state(total_usable_ram_mb=1024, free_ram_mb=0,
                                             ram_allocation_ratio=1.5, aggregates=aggs)
                self.assertIs(passes, flt.host_passes(host, fakes.fake_spec(memory_mb=req)))
                self.assertEqual(limit, host.limits.get('memory_mb'))

    def test_default_is_the_substituted_node_ratio(self):
        host = fakes.fake_host_state(total_usable_ram_mb=1024, free_ram_mb=0,
                                     ram_allocation_ratio=None,
                                     aggregates=[fakes.fake_aggregate({'x': '1'})])
        flt = ram.AggregateRamFilter(self.conf)
        self.assertTrue(flt.host_passes(host, fakes.fake_spec(memory_mb=512)))
        self.assertEqual(1536.0, host.limits['memory_mb'])
