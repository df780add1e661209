"""CoreFilter / AggregateCoreFilter: vCPU boundaries, broken counts, ratio fallback, limits."""
from minisched.scheduler.filters import core
from tests.unit import base, fakes

# (vcpus_total, vcpus_used, node ratio, requested, passes, vcpu limit)
CORE_CASES = [
    (0, 0, 16.0, 4, True, None),            # no count: assume broken accounting, pass
    (0, 10, 16.0, 400, True, None),
    (4, 0, 1.0, 4, True, 4.0),              # exactly at capacity
    (4, 1, 1.0, 4, False, 4.0),             # the limit is set even when the host fails
    (4, 0, 16.0, 5, False, 64.0),           # no overcommit against itself
    (4, 60, 16.0, 4, True, 64.0),
    (4, 61, 16.0, 4, False, 64.0),
    (4, 60, None, 4, True, 64.0),           # unset ratio -> 16.0
    (4, 60, 0.0, 4, True, 64.0),
    (4, 1, 0.5, 1, True, 2.0),
    (4, 2, 0.5, 1, False, 2.0),
    (4, 0, 1.0, 0, True, 4.0),
]


class TestCoreFilter(base.TestCase):
    def test_core_table(self):
        flt = core.CoreFilter(self.conf)
        for total, used, ratio, req, passes, limit in CORE_CASES:
            with self.subTest(total=total, used=used, ratio=ratio, req=req):
                host = fakes.fake_host_state(vcpus_total=total, vcpus_used=used,
                                             cpu_allocation_ratio=ratio)
                self.assertIs(passes, flt.host_passes(host, fakes.fake_spec(vcpus=req)))
                self.assertEqual(limit, host.limits.get('vcpu'))

    def test_unset_ratio_uses_the_schedulers_option_first(self):
        self.flags(cpu_allocation_ratio=2.0)
        host = fakes.fake_host_state(vcpus_total=4, vcpus_used=4, cpu_allocation_ratio=0.0)
        self.assertTrue(core.CoreFilter(self.conf).host_passes(host, fakes.fake_spec(vcpus=4)))
        self.assertEqual(8.0, host.limits['vcpu'])


class TestAggregateCoreFilter(base.TestCase):
    # host: 4 vCPUs, 8 used, node ratio 4.0 -> limit 16, 8 free
    CASES = [  # (aggregate metadata list, requested, passes, limit)
        ([], 4, True, 16.0),
        ([{'cpu_allocation_ratio': '3'}, {'cpu_allocation_ratio': '2.5'}], 2, True, 10.0),
        ([{'cpu_allocation_ratio': '3'}, {'cpu_allocation_ratio': '2.5'}], 3, False, 10.0),
        ([{'cpu_allocation_ratio': 'x'}], 4, True, 16.0),       # unparsable: node ratio
        ([{'cpu_allocation_ratio': '-1'}], 1, False, None),     # no positive limit, no limit
        ([{'cpu_allocation_ratio': 'nan'}], 4, True, None),     # NaN never compares: passes
        ([{'cpu_allocation_ratio': '100'}], 5, False, 400.0),   # still not above the total
    ]

    def test_aggregate_core_table(self):
        flt = core.AggregateCoreFilter(self.conf)
        for metadata, req, passes, limit in self.CASES:
            with self.subTest(metadata=metadata, req=req):
                aggs = [fakes.fake_aggregate(m, id=i) for i, m in enumerate(metadata, 1)]
                host = fakes.fake_host_state(vcpus_total=4, vcpus_used=8,
                                             cpu_allocation_ratio=4.0, aggregates=aggs)
                self.assertIs(passes, flt.host_passes(host, fakes.fake_spec(vcpus=req)))
                self.assertEqual(limit, host.limits.get('vcpu'))
