"""ComputeCapabilitiesFilter: scopes, attribute/stats/JSON walks, missing values, operators."""
from oslo_serialization import jsonutils

from minisched import objects
from minisched.scheduler import filters
from minisched.scheduler import host_state as host_state_mod
from minisched.scheduler.filters import compute_capabilities
from tests.unit import base, fakes

CPU_INFO = jsonutils.dumps({'vendor': 'Intel', 'features': ['avx', 'sse4.2'],
                            'topology': {'cores': 8}, 'maxphysaddr': {'bits': 46}})

# (extra specs, passes) against the host built in _host()
CASES = [
    ({}, True),
    ({'hypervisor_type': 'fake'}, True),                      # bare key, host attribute
    ({'hypervisor_type': 'kvm'}, False),
    ({'free_ram_mb': '>= 4096'}, True),
    ({'free_ram_mb': '>= 8193'}, False),
    ({'free_ram_mb': '= 8192'}, True),
    ({'hypervisor_version': '== 1000'}, True),
    ({'not_an_attribute': 'x'}, True),                        # bare unknown key: ignored
    ({'row': 'x'}, True),                                     # minisched internals are not
    ({'gpu': 'nvidia'}, True),                                # bare key found in stats
    ({'gpu': 'amd'}, False),
    ({'capabilities:gpu': 'nvidia'}, True),
    ({'capabilities:hypervisor_type': 's== fake'}, True),
    ({'capabilities:missing': 'x'}, False),                   # scoped and missing: fails
    ({'capabilities:cpu_info:vendor': 'Intel'}, True),        # JSON string walked
    ({'capabilities:cpu_info:vendor': 'AMD'}, False),
    ({'capabilities:cpu_info:features': '<in> avx'}, True),   # str() of the list
    ({'capabilities:cpu_info:topology:cores': '>= 8'}, True),
    ({'capabilities:cpu_info:topology:cores': '>= 9'}, False),
    ({'capabilities:cpu_info:topology:threads': '1'}, False),
    ({'capabilities:cpu_info:vendor:x': 'Intel'}, False),     # walking into a string fails
    ({'capabilities:free_ram_mb:x': '1'}, False),             # an int has no stats
    ({'capabilities:stats:gpu': 'nvidia'}, True),
    ({'hw:cpu_policy': 'dedicated', 'trait:X': 'required'}, True),   # other scopes
    ({'capabilities:gpu': '<or> amd <or> nvidia'}, True),
    ({'hypervisor_type': 'fake', 'gpu': 'amd'}, False),       # every spec must match
    ({'hw:maxphysaddr_bits': '46'}, True),                    # HEAD: at least N bits
    ({'hw:maxphysaddr_bits': '47'}, False),
]


def _host(**kw):
    values = dict(stats={'gpu': 'nvidia', 'num_instances': '3'}, cpu_info=CPU_INFO)
    values.update(kw)
    return fakes.fake_host_state(**values)


class TestComputeCapabilitiesFilter(base.TestCase):
    def test_capabilities_table(self):
        flt = compute_capabilities.ComputeCapabilitiesFilter(self.conf)
        for extra_specs, passes in CASES:
            with self.subTest(extra_specs=extra_specs):
                spec = fakes.fake_spec(extra_specs=extra_specs)
                self.assertIs(passes, flt.host_passes(_host(), spec))

    def test_bad_json_fails(self):
        flt = compute_capabilities.ComputeCapabilitiesFilter(self.conf)
        spec = fakes.fake_spec(extra_specs={'capabilities:cpu_info:vendor': 'Intel'})
        self.assertFalse(flt.host_passes(_host(cpu_info='{not json'), spec))

    def test_numeric_operator_on_text_raises_like_nova(self):
        flt = compute_capabilities.ComputeCapabilitiesFilter(self.conf)
        spec = fakes.fake_spec(extra_specs={'hypervisor_type': '>= 1'})
        self.assertRaises(ValueError, flt.host_passes, _host(), spec)

    def test_flavor_without_extra_specs_passes_without_loading_them(self):
        # Nova's "'extra_specs' in flavor" guard: an unset field is not lazy-loaded.
        flt = compute_capabilities.ComputeCapabilitiesFilter(self.conf)
        spec = fakes.fake_spec()
        spec.flavor = objects.Flavor(id=1, memory_mb=512, vcpus=1)
        table = host_state_mod.HostStateTable(capacity=1)
        host = _host(table=table)
        self.assertTrue(flt.host_passes(host, spec))
        self.assertTrue(flt.is_noop(spec))
        self.assertEqual([True], list(flt.filter_rows(filters.RowView(table, table.rows()),
                                                      spec)))
        self.assertNotIn('extra_specs', spec.flavor)

    def test_noop_only_when_no_spec_concerns_it(self):
        flt = compute_capabilities.ComputeCapabilitiesFilter(self.conf)
        for extra_specs, noop in [({}, True), ({'hw:cpu_policy': 'dedicated'}, True),
                                  ({'capabilities:x': '1'}, False), ({'x': '1'}, False),
                                  ({'hw:maxphysaddr_bits': '40'}, False)]:
            with self.subTest(extra_specs=extra_specs):
                self.assertIs(noop, flt.is_noop(fakes.fake_spec(extra_specs=extra_specs)))
        self.assertTrue(flt.run_filter_once_per_request)
        self.assertFalse(flt.RUN_ON_REBUILD)
