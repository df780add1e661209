"""minisched.utils: the backoff shared by the compute's build writes and the conductor's
build tasks (its callers' own tests cover what each retries)."""
import logging
from unittest import mock

import testtools

from minisched import utils
from tests.unit.conductor import test_db_errors


class TestUntilDone(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.clock = test_db_errors.FakeClock()
        patcher = mock.patch.object(utils, 'time', self.clock)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.log = mock.Mock(spec=logging.Logger)

    def _failing(self, errors, result='done'):
        """A call raising ``errors`` in turn, then returning ``result``."""
        pending = list(errors)
        calls = []

        def call():
            calls.append(self.clock.now)
            if pending:
                raise pending.pop(0)
            return result
        return call, calls

    def _until_done(self, call, seconds=3600, retried=lambda exc: isinstance(exc, IOError)):
        return utils.until_done(call, retried, seconds,
                                   lambda exc, delay: 'failed: %s; again in %d s' % (exc, delay),
                                   log=self.log)

    def test_backs_off_doubling_up_to_the_cap_then_returns_the_result(self):
        call, calls = self._failing([IOError(n) for n in range(8)])
        self.assertEqual('done', self._until_done(call))
        self.assertEqual([1, 2, 4, 8, 16, 30, 30, 30], self.clock.sleeps)
        self.assertEqual(9, len(calls))
        self.assertEqual(mock.call('failed: 0; again in 1 s'), self.log.warning.call_args_list[0])
        self.assertEqual(8, self.log.warning.call_count)

    def test_an_error_not_retried_is_raised_at_once(self):
        call, calls = self._failing([IOError('transient'), ValueError('bug')])
        self.assertRaises(ValueError, self._until_done, call)
        self.assertEqual([1], self.clock.sleeps)

    def test_gives_up_when_the_next_try_would_start_after_the_deadline(self):
        call, calls = self._failing([IOError(n) for n in range(10)])
        error = self.assertRaises(IOError, self._until_done, call, seconds=10)
        # Tries at 0, 1 and 3 s; the next would start at 7 + 8 = 15 s, past 10 s.
        self.assertEqual([0, 1, 3, 7], calls)
        self.assertEqual(3, error.args[0])
        self.assertEqual([1, 2, 4], self.clock.sleeps)
