"""TypeAffinityFilter (one flavor per host) and AggregateTypeAffinityFilter."""
from minisched.scheduler.filters import type as type_filter
from tests.unit import base, fakes
from tests.unit.base import uuids


class TestTypeAffinityFilter(base.TestCase):
    def test_type_affinity_table(self):
        cases = [([], True), ([1], True), ([1, 1], True), ([2], False), ([1, 2], False)]
        flt = type_filter.TypeAffinityFilter(self.conf)
        for flavor_ids, passes in cases:
            with self.subTest(flavor_ids=flavor_ids):
                instances = {}
                for index, flavor_id in enumerate(flavor_ids):
                    uuid = getattr(uuids, 'inst%d' % index)
                    instances[uuid] = fakes.fake_instance(uuid, instance_type_id=flavor_id)
                host = fakes.fake_host_state(instances=instances)
                spec = fakes.fake_spec(flavor=fakes.fake_flavor(id=1))
                self.assertIs(passes, flt.host_passes(host, spec))
        self.assertFalse(flt.run_filter_once_per_request)


class TestAggregateTypeAffinityFilter(base.TestCase):
    def test_aggregate_type_table(self):
        cases = [  # (aggregates' metadata, passes) for flavor m1.small
            ([], True),
            ([{'ssd': 'true'}], True),
            ([{'instance_type': 'm1.small'}], True),
            ([{'instance_type': 'm1.large'}], False),
            ([{'instance_type': 'm1.large, m1.small'}], True),
            ([{'instance_type': 'm1.large'}, {'instance_type': 'm1.small'}], True),
            ([{'instance_type': 'm1.smal'}], False),             # whole names only
        ]
        flt = type_filter.AggregateTypeAffinityFilter(self.conf)
        for metadata, passes in cases:
            with self.subTest(metadata=metadata):
                aggs = [fakes.fake_aggregate(m, id=i) for i, m in enumerate(metadata, 1)]
                spec = fakes.fake_spec(flavor=fakes.fake_flavor(name='m1.small'))
                self.assertIs(passes, flt.host_passes(fakes.fake_host_state(aggregates=aggs),
                                                      spec))
        self.assertTrue(flt.run_filter_once_per_request)
