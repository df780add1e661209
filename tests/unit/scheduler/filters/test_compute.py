"""ComputeFilter: disabled services and services silent for longer than service_down_time."""
import datetime

import numpy as np
from oslo_utils import timeutils

from minisched.scheduler import filters
from minisched.scheduler import host_state as host_state_mod
from minisched.scheduler.filters import compute
from minisched.servicegroup import outages
from tests.unit import base, fakes

NOW = datetime.datetime(2024, 5, 1, 12, 0, 0)


def _ago(seconds):
    return NOW - datetime.timedelta(seconds=seconds)


# (service fields, passes) with service_down_time 60 at NOW
SERVICE_CASES = [
    ({}, True),
    ({'disabled': True}, False),
    ({'forced_down': True}, False),
    ({'last_seen_up': _ago(60)}, True),                          # exactly the down time
    ({'last_seen_up': _ago(60.000001)}, False),
    ({'last_seen_up': _ago(-60)}, True),                         # clock skew: abs()
    ({'last_seen_up': _ago(-61)}, False),
    ({'last_seen_up': None, 'created_at': _ago(10)}, True),      # never reported
    ({'last_seen_up': None, 'created_at': _ago(61)}, False),
    ({'last_seen_up': None, 'created_at': None}, False),
    ({'last_seen_up': _ago(30).strftime('%Y-%m-%dT%H:%M:%S.%f')}, True),  # over RPC
    ({'last_seen_up': _ago(90).replace(tzinfo=datetime.timezone.utc)}, False),
    ({'last_seen_up': _ago(30).replace(tzinfo=datetime.timezone.utc)}, True),
    ({'disabled': True, 'forced_down': True}, False),
]


class TestComputeFilter(base.TestCase):
    def setUp(self):
        super().setUp()
        timeutils.set_time_override(NOW)
        self.addCleanup(timeutils.clear_time_override)

    def test_service_table_per_host_and_vectorised(self):
        flt = compute.ComputeFilter(self.conf)
        table = host_state_mod.HostStateTable()
        hosts = []
        for index, (service, passes) in enumerate(SERVICE_CASES):
            with self.subTest(service=repr(service)):
                values = {'last_seen_up': NOW, 'created_at': NOW}
                values.update(service)
                host = fakes.fake_host_state('h%d' % index, table=table, service=values)
                self.assertIs(passes, flt.host_passes(host, fakes.fake_spec()))
                hosts.append(host)
        view = filters.RowView(table, table.rows())
        expected = [passes for _service, passes in SERVICE_CASES]
        np.testing.assert_array_equal(expected, flt.filter_rows(view, fakes.fake_spec()))

    def test_silence_during_the_schedulers_own_outage_does_not_count(self):
        """A 60 s outage of the bus that ended 10 s ago: a compute last heard 75 s ago could
        not report meanwhile and passes; one silent 70 s before the outage does not; the
        scalar and the vectorised forms agree."""
        outages.OWN.begin(outages.BUS, _ago(70))
        outages.OWN.end(outages.BUS, _ago(10))
        flt = compute.ComputeFilter(self.conf)
        table = host_state_mod.HostStateTable()
        cases = [(75, True), (120, True), (121, False), (200, False), (5, True)]
        for index, (seconds, passes) in enumerate(cases):
            host = fakes.fake_host_state('h%d' % index, table=table, service={
                'last_seen_up': _ago(seconds), 'created_at': _ago(1000)})
            self.assertIs(passes, flt.host_passes(host, fakes.fake_spec()), seconds)
        view = filters.RowView(table, table.rows())
        np.testing.assert_array_equal([passes for _seconds, passes in cases],
                                      flt.filter_rows(view, fakes.fake_spec()))

    def test_vectorised_sees_a_replaced_service_record(self):
        flt = compute.ComputeFilter(self.conf)
        table = host_state_mod.HostStateTable()
        host = fakes.fake_host_state(table=table, service={'last_seen_up': NOW})
        view = filters.RowView(table, table.rows())
        self.assertTrue(flt.filter_rows(view, fakes.fake_spec())[0])
        host.update(service=fakes.fake_service(disabled=True))
        self.assertFalse(flt.filter_rows(view, fakes.fake_spec())[0])
        timeutils.set_time_override(NOW + datetime.timedelta(seconds=3600))
        host.update(service=fakes.fake_service(last_seen_up=NOW))
        self.assertFalse(flt.filter_rows(view, fakes.fake_spec())[0])

    def test_down_host_logs_a_warning(self):
        host = fakes.fake_host_state(service={'last_seen_up': _ago(600)})
        with self.assertLogs(compute.LOG, 'WARNING') as logs:
            self.assertFalse(compute.ComputeFilter(self.conf).host_passes(host, None))
        self.assertIn('has not been heard from in a while', logs.output[0])

    def test_service_down_time_is_configurable(self):
        self.flags(service_down_time=120)
        host = fakes.fake_host_state(service={'last_seen_up': _ago(90)})
        self.assertTrue(compute.ComputeFilter(self.conf).host_passes(host, None))

    def test_flags(self):
        self.assertTrue(compute.ComputeFilter.run_filter_once_per_request)
        self.assertFalse(compute.ComputeFilter.RUN_ON_REBUILD)
