"""NumInstancesFilter / AggregateNumInstancesFilter: strictly fewer instances than the max."""
from minisched.scheduler.filters import num_instances
from tests.unit import base, fakes


class TestNumInstancesFilter(base.TestCase):
    def test_num_instances_table(self):
        for max_instances, num, passes in [(50, 49, True), (50, 50, False), (1, 0, True),
                                           (1, 1, False)]:
            with self.subTest(max_instances=max_instances, num=num):
                self.flags(group='filter_scheduler', max_instances_per_host=max_instances)
                host = fakes.fake_host_state(num_instances=num)
                flt = num_instances.NumInstancesFilter(self.conf)
                self.assertIs(passes, flt.host_passes(host, fakes.fake_spec()))

    def test_aggregate_num_instances_table(self):
        cases = [  # (aggregate metadata list, num_instances, passes); option default 50
            ([], 49, True),
            ([{'max_instances_per_host': '10'}, {'max_instances_per_host': '4'}], 3, True),
            ([{'max_instances_per_host': '10'}, {'max_instances_per_host': '4'}], 4, False),
            ([{'max_instances_per_host': 'ten'}], 49, True),
            ([{'max_instances_per_host': 'ten'}], 50, False),
            ([{'max_instances_per_host': '100'}], 99, True),
        ]
        flt = num_instances.AggregateNumInstancesFilter(self.conf)
        for metadata, num, passes in cases:
            with self.subTest(metadata=metadata, num=num):
                aggs = [fakes.fake_aggregate(m, id=i) for i, m in enumerate(metadata, 1)]
                host = fakes.fake_host_state(num_instances=num, aggregates=aggs)
                self.assertIs(passes, flt.host_passes(host, fakes.fake_spec()))
