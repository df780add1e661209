"""AggregateInstanceExtraSpecsFilter: scopes, missing keys, comma values, several aggregates."""
from minisched import objects
from minisched.scheduler.filters import aggregate_instance_extra_specs as aggregate_specs
from tests.unit import base, fakes

AGGREGATES = [{'ssd': 'true', 'gpu': 'a, b'}, {'speed': '1', 'ssd': 'false'}, {'speed': '3'}]

CASES = [  # (extra specs, passes)
    ({}, True),
    ({'ssd': 'true'}, True),
    ({'ssd': 'false'}, True),                                    # any aggregate's value
    ({'ssd': 'maybe'}, False),
    ({'aggregate_instance_extra_specs:ssd': 'true'}, True),
    ({'aggregate_instance_extra_specs:missing': 'x'}, False),
    ({'missing': 'x'}, False),                                   # key absent: fails
    ({'hw:cpu_policy': 'dedicated', 'capabilities:x': 'y'}, True),   # other scopes
    ({'gpu': 'b'}, True),                                        # comma-split, stripped
    ({'gpu': 'a, b'}, False),                                    # ... so the raw list is not
    ({'speed': '>= 2'}, True),                                   # 3 matches
    ({'speed': '>= 4'}, False),
    ({'speed': '<or> 2 <or> 3'}, True),
    ({'gpu': 's== a'}, True),
    ({'gpu': '<in> c'}, False),
    ({'ssd': 'true', 'speed': '= 5'}, False),                    # every spec must match
]


class TestAggregateInstanceExtraSpecsFilter(base.TestCase):
    def test_extra_specs_table(self):
        flt = aggregate_specs.AggregateInstanceExtraSpecsFilter(self.conf)
        aggs = [fakes.fake_aggregate(m, id=i) for i, m in enumerate(AGGREGATES, 1)]
        for extra_specs, passes in CASES:
            with self.subTest(extra_specs=extra_specs):
                host = fakes.fake_host_state(aggregates=aggs)
                spec = fakes.fake_spec(extra_specs=extra_specs)
                self.assertIs(passes, flt.host_passes(host, spec))

    def test_host_without_aggregates_fails_any_owned_spec(self):
        flt = aggregate_specs.AggregateInstanceExtraSpecsFilter(self.conf)
        self.assertFalse(flt.host_passes(fakes.fake_host_state(),
                                         fakes.fake_spec(extra_specs={'ssd': 'true'})))
        self.assertTrue(flt.host_passes(fakes.fake_host_state(),
                                        fakes.fake_spec(extra_specs={'hw:x': 'true'})))

    def test_numeric_operator_on_text_raises_like_nova(self):
        flt = aggregate_specs.AggregateInstanceExtraSpecsFilter(self.conf)
        host = fakes.fake_host_state(aggregates=[fakes.fake_aggregate({'ssd': 'true'})])
        self.assertRaises(ValueError, flt.host_passes, host,
                          fakes.fake_spec(extra_specs={'ssd': '>= 1'}))

    def test_flavor_without_extra_specs_passes_without_loading_them(self):
        # Nova's "'extra_specs' not in flavor" guard: an unset field is not lazy-loaded.
        flt = aggregate_specs.AggregateInstanceExtraSpecsFilter(self.conf)
        spec = fakes.fake_spec()
        spec.flavor = objects.Flavor(id=1, memory_mb=512, vcpus=1)
        host = fakes.fake_host_state(aggregates=[fakes.fake_aggregate({'ssd': 'true'})])
        self.assertTrue(flt.host_passes(host, spec))
        self.assertTrue(flt.is_noop(spec))
        self.assertNotIn('extra_specs', spec.flavor)

    def test_noop(self):
        flt = aggregate_specs.AggregateInstanceExtraSpecsFilter(self.conf)
        for extra_specs, noop in [({}, True), ({'hw:cpu_policy': 'x'}, True),
                                  ({'ssd': 'true'}, False),
                                  ({'aggregate_instance_extra_specs:ssd': 'true'}, False)]:
            with self.subTest(extra_specs=extra_specs):
                self.assertIs(noop, flt.is_noop(fakes.fake_spec(extra_specs=extra_specs)))
        self.assertTrue(flt.run_filter_once_per_request)
