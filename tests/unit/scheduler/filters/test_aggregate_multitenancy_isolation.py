"""AggregateMultiTenancyIsolation: filter_tenant_id* keys reserve hosts to projects."""
from minisched.scheduler.filters import aggregate_multitenancy_isolation as tenancy
from tests.unit import base, fakes

CASES = [  # (aggregates' metadata, project, passes)
    ([], 'p1', True),
    ([{'ssd': 'true'}], 'p1', True),
    ([{'filter_tenant_id': 'p1'}], 'p1', True),
    ([{'filter_tenant_id': 'p1'}], 'p2', False),
    ([{'filter_tenant_id': 'p1, p2'}], 'p2', True),
    ([{'filter_tenant_id2': 'p3'}], 'p3', True),                 # any key with the prefix
    ([{'filter_tenant_id': 'p1', 'filter_tenant_id_x': 'p3'}], 'p3', True),
    ([{'filter_tenant_id': 'p1'}, {'filter_tenant_id': 'p2'}], 'p2', True),
    ([{'filter_tenant_id': 'p1'}, {'ssd': 'true'}], 'p2', False),
    ([{'tenant_filter_tenant_id': 'p2'}], 'p1', True),           # prefix, not substring
]


class TestAggregateMultiTenancyIsolation(base.TestCase):
    def test_tenancy_table(self):
        flt = tenancy.AggregateMultiTenancyIsolation(self.conf)
        for metadata, project, passes in CASES:
            with self.subTest(metadata=metadata, project=project):
                aggs = [fakes.fake_aggregate(m, id=i) for i, m in enumerate(metadata, 1)]
                host = fakes.fake_host_state(aggregates=aggs)
                self.assertIs(passes, flt.host_passes(host, fakes.fake_spec(project_id=project)))
        self.assertTrue(flt.run_filter_once_per_request)
        self.assertFalse(flt.RUN_ON_REBUILD)
