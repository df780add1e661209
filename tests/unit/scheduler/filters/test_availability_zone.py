"""AvailabilityZoneFilter: aggregate zones, the default zone, no zone requested."""
from minisched.scheduler.filters import availability_zone
from tests.unit import base, fakes

# (host aggregates' metadata, requested zone, passes) with default_availability_zone 'nova'
AZ_CASES = [
    ([], None, True),
    ([], '', True),
    ([], 'nova', True),                            # no AZ aggregate: default zone
    ([], 'az1', False),
    ([{'ssd': 'true'}], 'nova', True),             # aggregates without the key count as none
    ([{'availability_zone': 'az1'}], 'az1', True),
    ([{'availability_zone': 'az1'}], 'nova', False),
    ([{'availability_zone': 'az1'}, {'availability_zone': 'az2'}], 'az2', True),
    ([{'availability_zone': 'az1, az2'}], 'az2', True),   # comma-split, stripped
    ([{'availability_zone': 'az1'}, {'ssd': 'true'}], 'nova', False),
    ([{'availability_zone': 'AZ1'}], 'az1', False),       # case matters
]


class TestAvailabilityZoneFilter(base.TestCase):
    def test_zone_table(self):
        flt = availability_zone.AvailabilityZoneFilter(self.conf)
        for metadata, zone, passes in AZ_CASES:
            with self.subTest(metadata=metadata, zone=zone):
                aggs = [fakes.fake_aggregate(m, id=i) for i, m in enumerate(metadata, 1)]
                host = fakes.fake_host_state(aggregates=aggs)
                spec = fakes.fake_spec(availability_zone=zone)
                self.assertIs(passes, flt.host_passes(host, spec))

    def test_default_zone_is_configurable(self):
        self.flags(default_availability_zone='zone0')
        flt = availability_zone.AvailabilityZoneFilter(self.conf)
        host = fakes.fake_host_state()
        self.assertTrue(flt.host_passes(host, fakes.fake_spec(availability_zone='zone0')))
        self.assertFalse(flt.host_passes(host, fakes.fake_spec(availability_zone='nova')))

    def test_noop_without_zone(self):
        flt = availability_zone.AvailabilityZoneFilter(self.conf)
        self.assertTrue(flt.is_noop(fakes.fake_spec()))
        self.assertFalse(flt.is_noop(fakes.fake_spec(availability_zone='nova')))
        self.assertTrue(flt.run_filter_once_per_request)
        self.assertFalse(flt.RUN_ON_REBUILD)
