"""RetryFilter: nodes already attempted by this build are skipped."""
from minisched.scheduler.filters import retry
from tests.unit import base, fakes


class TestRetryFilter(base.TestCase):
    def test_retry_table(self):
        cases = [  # (tried (host, node) pairs or None, (host, node), passes)
            (None, ('host1', 'node1'), True),
            ([], ('host1', 'node1'), True),
            ([('host1', 'node1')], ('host1', 'node1'), False),
            ([('host1', 'node1')], ('host1', 'node2'), True),   # same host, other node
            ([('host2', 'node1')], ('host1', 'node1'), True),
            ([('host2', 'n'), ('host1', 'node1')], ('host1', 'node1'), False),
            ([('HOST1', 'node1')], ('host1', 'node1'), True),   # exact match only
        ]
        flt = retry.RetryFilter(self.conf)
        for tried, (host, node), passes in cases:
            with self.subTest(tried=tried, host=host, node=node):
                spec = fakes.fake_spec(
                    retry=None if tried is None else fakes.fake_retry(*tried))
                state = fakes.fake_host_state(host, node=node)
                self.assertIs(passes, flt.host_passes(state, spec))

    def test_noop_without_retry(self):
        flt = retry.RetryFilter(self.conf)
        self.assertTrue(flt.is_noop(fakes.fake_spec()))
        self.assertFalse(flt.is_noop(fakes.fake_spec(retry=fakes.fake_retry())))
        self.assertFalse(flt.run_filter_once_per_request)
