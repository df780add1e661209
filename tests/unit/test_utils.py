"""minisched.utils: the backoff shared by the compute's build writes and the conductor's
build tasks (its callers' own tests cover what each retries)."""
import logging
import threading
import time
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


class TestTurnstile(testtools.TestCase):

    def _wait_until(self, condition):
        deadline = time.monotonic() + 10
        while not condition():
            self.assertLess(time.monotonic(), deadline, 'timed out')
            time.sleep(0.001)

    def _queue_up(self, turnstile, entered, count):
        """``count`` threads, started one after another and each waiting before the next
        starts; each appends its number to ``entered`` once inside, then leaves."""
        threads = []
        for number in range(count):
            def enter(number=number):
                with turnstile:
                    entered.append(number)
            thread = threading.Thread(target=enter)
            thread.start()
            threads.append(thread)
            self._wait_until(lambda: len(turnstile._waiting) == number + 1)
        return threads

    def test_waiting_threads_enter_in_the_order_they_arrived(self):
        turnstile = utils.Turnstile(1)
        entered = []
        turnstile.__enter__()
        threads = self._queue_up(turnstile, entered, 8)
        turnstile.__exit__(None, None, None)
        for thread in threads:
            thread.join(10)
        self.assertEqual(list(range(8)), entered)

    def test_a_newcomer_waits_behind_those_already_waiting(self):
        turnstile = utils.Turnstile(1)
        entered = []
        turnstile.__enter__()
        threads = self._queue_up(turnstile, entered, 2)
        # The place is handed to the first waiter: a thread arriving now finds none free.
        turnstile.__exit__(None, None, None)
        with turnstile:
            entered.append('newcomer')
        for thread in threads:
            thread.join(10)
        self.assertEqual([0, 1, 'newcomer'], entered)

    def test_size_places_are_held_at_once_and_never_more(self):
        turnstile = utils.Turnstile(3)
        inside, most = [0], [0]
        lock = threading.Lock()

        def hold():
            with turnstile:
                with lock:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                time.sleep(0.01)
                with lock:
                    inside[0] -= 1
        threads = [threading.Thread(target=hold) for _ in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        self.assertEqual(3, most[0])
        self.assertEqual(3, turnstile._free)

    def test_a_turnstile_without_a_place_is_refused(self):
        self.assertRaises(ValueError, utils.Turnstile, 0)
