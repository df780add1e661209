"""ExactDiskFilter: free disk must equal root + ephemeral + swap; limit = physical total."""
from minisched.scheduler.filters import exact_disk
from tests.unit import base, fakes


class TestExactDiskFilter(base.TestCase):
    def test_exact_disk_table(self):
        flt = exact_disk.ExactDiskFilter(self.conf)
        for free, (root, eph, swap), passes in [(2048, (1, 1, 0), True), (2049, (1, 1, 1), True),
                                                (2048, (1, 1, 1), False), (0, (0, 0, 0), True),
                                                (2049, (2, 0, 0), False)]:
            with self.subTest(free=free, req=(root, eph, swap)):
                host = fakes.fake_host_state(total_usable_disk_gb=40, free_disk_mb=free)
                spec = fakes.fake_spec(root_gb=root, ephemeral_gb=eph, swap=swap)
                self.assertIs(passes, flt.host_passes(host, spec))
                self.assertEqual(40 if passes else None, host.limits.get('disk_gb'))
