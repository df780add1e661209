"""IoOpsFilter / AggregateIoOpsFilter: strictly fewer I/O operations than the maximum."""
from minisched.scheduler.filters import io_ops
from tests.unit import base, fakes


class TestIoOpsFilter(base.TestCase):
    def test_io_ops_table(self):
        for max_ops, num, passes in [(8, 7, True), (8, 8, False), (8, 9, False),
                                     (0, 0, False), (1, 0, True)]:
            with self.subTest(max_ops=max_ops, num=num):
                self.flags(group='filter_scheduler', max_io_ops_per_host=max_ops)
                host = fakes.fake_host_state(num_io_ops=num)
                flt = io_ops.IoOpsFilter(self.conf)
                self.assertIs(passes, flt.host_passes(host, fakes.fake_spec()))

    def test_aggregate_io_ops_table(self):
        cases = [  # (aggregate metadata list, num_io_ops, passes); option default 8
            ([], 7, True),
            ([], 8, False),
            ([{'max_io_ops_per_host': '3'}, {'max_io_ops_per_host': '5'}], 2, True),
            ([{'max_io_ops_per_host': '3'}, {'max_io_ops_per_host': '5'}], 3, False),
            ([{'max_io_ops_per_host': '20'}], 19, True),          # above the option
            ([{'max_io_ops_per_host': 'many'}], 7, True),         # unparsable: option
            ([{'max_io_ops_per_host': '2.5'}], 7, True),          # ints only: option
            ([{'max_io_ops_per_host': '2.5'}], 8, False),
            ([{'other': '1'}], 7, True),
        ]
        flt = io_ops.AggregateIoOpsFilter(self.conf)
        for metadata, num, passes in cases:
            with self.subTest(metadata=metadata, num=num):
                aggs = [fakes.fake_aggregate(m, id=i) for i, m in enumerate(metadata, 1)]
                host = fakes.fake_host_state(num_io_ops=num, aggregates=aggs)
                self.assertIs(passes, flt.host_passes(host, fakes.fake_spec()))
