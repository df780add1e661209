"""ExactCoreFilter: free vCPUs must equal the flavor; no vCPU count fails."""
from minisched.scheduler.filters import exact_core
from tests.unit import base, fakes


class TestExactCoreFilter(base.TestCase):
    def test_exact_core_table(self):
        flt = exact_core.ExactCoreFilter(self.conf)
        for total, used, req, passes in [(4, 2, 2, True), (4, 1, 2, False), (4, 3, 2, False),
                                         (0, 0, 0, False), (4, 4, 0, True)]:
            with self.subTest(total=total, used=used, req=req):
                host = fakes.fake_host_state(vcpus_total=total, vcpus_used=used)
                self.assertIs(passes, flt.host_passes(host, fakes.fake_spec(vcpus=req)))
                self.assertEqual(total if passes else None, host.limits.get('vcpu'))
