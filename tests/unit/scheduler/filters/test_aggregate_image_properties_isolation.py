"""AggregateImagePropertiesIsolation: aggregate metadata restricting image property values."""
from minisched.scheduler.filters import aggregate_image_properties_isolation as isolation
from tests.unit import base, fakes

CASES = [  # (aggregates' metadata, image properties, passes)
    ([], {'hw_architecture': 'x86_64'}, True),
    ([{'hw_architecture': 'x86_64'}], {'hw_architecture': 'x86_64'}, True),
    ([{'hw_architecture': 'x86_64'}], {'hw_architecture': 'aarch64'}, False),
    ([{'hw_architecture': 'x86_64'}], {}, True),                 # property not set
    ([{'hw_architecture': 'x86_64, aarch64'}], {'hw_architecture': 'aarch64'}, True),
    ([{'hw_architecture': 'x86_64'}, {'hw_architecture': 'aarch64'}],
     {'hw_architecture': 'aarch64'}, True),                      # values are merged
    ([{'os_distro': 'ubuntu'}], {'os_distro': 'fedora'}, False),
    ([{'hw_cpu_cores': '4'}], {'hw_cpu_cores': 4}, True),        # compared as strings
    ([{'hw_cpu_cores': '4'}], {'hw_cpu_cores': 0}, True),        # falsy values never fail
    ([{'ssd': 'true'}], {'hw_architecture': 'x86_64'}, True),    # not an image property
    ([{'os_require_quiesce': 'True'}], {'os_require_quiesce': True}, True),
]


class TestAggregateImagePropertiesIsolation(base.TestCase):
    def _passes(self, metadata, props):
        flt = isolation.AggregateImagePropertiesIsolation(self.conf)
        aggs = [fakes.fake_aggregate(m, id=i) for i, m in enumerate(metadata, 1)]
        return flt.host_passes(fakes.fake_host_state(aggregates=aggs),
                               fakes.fake_spec(image_props=props))

    def test_isolation_table(self):
        for metadata, props, passes in CASES:
            with self.subTest(metadata=metadata, props=props):
                self.assertIs(passes, self._passes(metadata, props))

    def test_namespace_skips_other_keys_and_looks_prefixed_keys_up_as_is(self):
        self.flags(group='filter_scheduler',
                   aggregate_image_properties_isolation_namespace='ns')
        # Not prefixed: ignored.
        self.assertTrue(self._passes([{'hw_architecture': 'x86_64'}],
                                     {'hw_architecture': 'aarch64'}))
        # Prefixed: Nova looks "ns.hw_architecture" up, which is no image property.
        self.assertTrue(self._passes([{'ns.hw_architecture': 'x86_64'}],
                                     {'hw_architecture': 'aarch64'}))

    def test_no_image(self):
        flt = isolation.AggregateImagePropertiesIsolation(self.conf)
        host = fakes.fake_host_state(aggregates=[fakes.fake_aggregate({'os_distro': 'x'})])
        self.assertTrue(flt.host_passes(host, fakes.fake_spec(image=None)))
        self.assertTrue(flt.is_noop(fakes.fake_spec(image=None)))
        self.assertTrue(flt.is_noop(fakes.fake_spec()))
        self.assertFalse(flt.is_noop(fakes.fake_spec(image_props={'os_distro': 'y'})))
        self.assertTrue(flt.RUN_ON_REBUILD)
        self.assertTrue(flt.run_filter_once_per_request)
