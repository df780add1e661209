"""AllHostsFilter passes everything."""
from minisched.scheduler.filters import all_hosts
from tests.unit import base, fakes


class TestAllHostsFilter(base.TestCase):
    def test_passes_every_host(self):
        flt = all_hosts.AllHostsFilter(self.conf)
        self.assertTrue(flt.host_passes(fakes.fake_host_state(free_ram_mb=-1), fakes.fake_spec()))
        self.assertTrue(flt.is_noop(fakes.fake_spec()))
