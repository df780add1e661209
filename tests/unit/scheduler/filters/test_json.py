"""JsonFilter: every operator, $-lookups, dropped None arguments, list results."""
from oslo_serialization import jsonutils

from minisched.scheduler.filters import json as json_filter
from tests.unit import base, fakes

# host: free_ram_mb 8192, free_disk_mb 102400, vcpus_total 8, stats {'gpu': 'nvidia'}
CASES = [  # (query, passes)
    (None, True),
    ([], True),
    (['=', '$free_ram_mb', 8192], True),
    (['=', '$free_ram_mb', 8192, 8193], False),          # first against all the others
    (['<', '$free_ram_mb', 8193], True),
    (['<', '$free_ram_mb', 8192], False),
    (['>', '$free_ram_mb', 8191], True),
    (['<=', '$free_ram_mb', 8192], True),
    (['>=', '$free_ram_mb', 8193], False),
    (['in', '$host', 'host2', 'host1'], True),
    (['in', '$host', 'host2'], False),
    (['<', '$free_ram_mb'], False),                       # fewer than two arguments
    (['=', '$missing', 1], False),                        # None dropped: one argument
    (['=', '$stats.gpu', 'nvidia'], True),
    (['=', '$stats.cpu', 'x'], False),
    (['not', ['=', '$host', 'host1']], False),            # [False] -> any() -> False
    (['not', ['=', '$host', 'host2']], True),
    (['or', ['=', '$host', 'host2'], ['>', '$vcpus_total', 4]], True),
    (['and', ['=', '$host', 'host1'], ['>', '$vcpus_total', 8]], False),
    (['and', ['>=', '$free_ram_mb', 1024], ['>=', '$free_disk_mb', 100 * 1024]], True),
    (['=', '', 'x'], False),                              # empty strings are dropped
]


class TestJsonFilter(base.TestCase):
    def test_query_table(self):
        flt = json_filter.JsonFilter(self.conf)
        host = fakes.fake_host_state(stats={'gpu': 'nvidia'})
        for query, passes in CASES:
            with self.subTest(query=query):
                hints = {} if query is None else {'query': [jsonutils.dumps(query)]}
                spec = fakes.fake_spec(scheduler_hints=hints)
                self.assertIs(passes, flt.host_passes(host, spec))

    def test_unknown_operator_raises_like_nova(self):
        flt = json_filter.JsonFilter(self.conf)
        spec = fakes.fake_spec(scheduler_hints={'query': ['["~", 1, 2]']})
        self.assertRaises(KeyError, flt.host_passes, fakes.fake_host_state(), spec)

    def test_noop_and_flags(self):
        flt = json_filter.JsonFilter(self.conf)
        self.assertTrue(flt.is_noop(fakes.fake_spec()))
        self.assertFalse(flt.is_noop(fakes.fake_spec(scheduler_hints={'query': ['[]']})))
        self.assertFalse(flt.run_filter_once_per_request)
        self.assertFalse(flt.RUN_ON_REBUILD)
