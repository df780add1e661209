"""ExactRamFilter: free RAM must equal the flavor; limit = physical total."""
from minisched.scheduler.filters import exact_ram
from tests.unit import base, fakes


class TestExactRamFilter(base.TestCase):
    def test_exact_ram_table(self):
        flt = exact_ram.ExactRamFilter(self.conf)
        for free, req, passes in [(512, 512, True), (513, 512, False), (511, 512, False),
                                  (0, 0, True)]:
            with self.subTest(free=free, req=req):
                host = fakes.fake_host_state(total_usable_ram_mb=4096, free_ram_mb=free)
                self.assertIs(passes, flt.host_passes(host, fakes.fake_spec(memory_mb=req)))
                self.assertEqual(4096 if passes else None, host.limits.get('memory_mb'))
