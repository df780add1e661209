"""Servicegroup DB driver: Nova's up/down rule, the down-time floor and the state report."""
import datetime
from unittest import mock

import oslo_messaging as messaging
from oslo_db import exception as db_exc
from oslo_utils import timeutils

from minisched import context
from minisched import exception
from minisched import objects
from minisched import servicegroup
from minisched.servicegroup.drivers import db
from tests.unit import base
from tests.unit import fakes

NOW = datetime.datetime(2026, 3, 1, 12, 0, 0)
_LOGGER = 'minisched.servicegroup.drivers.db'


def _ago(seconds):
    return NOW - datetime.timedelta(seconds=seconds)


class _DriverTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        timeutils.set_time_override(NOW)
        self.addCleanup(timeutils.clear_time_override)
        self.driver = db.DbDriver(self.conf)   # service_down_time = 60


class TestServiceIsUp(_DriverTestCase):

    def test_recent_report_is_up(self):
        self.assertTrue(self.driver.is_up(fakes.fake_service(last_seen_up=_ago(10))))

    def test_old_report_is_down(self):
        self.assertFalse(self.driver.is_up(fakes.fake_service(last_seen_up=_ago(61))))

    def test_exactly_service_down_time_is_still_up(self):
        self.assertTrue(self.driver.is_up(fakes.fake_service(last_seen_up=_ago(60))))
        self.assertFalse(self.driver.is_up(fakes.fake_service(
            last_seen_up=_ago(60) - datetime.timedelta(microseconds=1))))

    def test_forced_down_wins_over_a_fresh_report(self):
        self.assertFalse(self.driver.is_up(fakes.fake_service(last_seen_up=NOW,
                                                               forced_down=True)))

    def test_forced_down_is_checked_before_the_timestamps(self):
        service = {'forced_down': True}  # no timestamps at all: must not blow up
        with self.assertNoLogs(_LOGGER, 'DEBUG'):
            self.assertFalse(self.driver.is_up(service))

    def test_created_at_is_used_before_the_first_report(self):
        self.assertTrue(self.driver.is_up(fakes.fake_service(last_seen_up=None,
                                                              created_at=_ago(5))))
        self.assertFalse(self.driver.is_up(fakes.fake_service(last_seen_up=None,
                                                               created_at=_ago(600))))

    def test_last_seen_up_is_preferred_over_created_at(self):
        self.assertFalse(self.driver.is_up(fakes.fake_service(last_seen_up=_ago(120),
                                                               created_at=NOW)))

    def test_updated_at_is_not_a_heartbeat(self):
        self.assertFalse(self.driver.is_up(fakes.fake_service(
            last_seen_up=_ago(120), created_at=_ago(600), updated_at=NOW)))

    def test_no_timestamps_is_down(self):
        self.assertFalse(self.driver.is_up({'forced_down': False}))

    def test_string_timestamps_from_rpc_are_parsed(self):
        recent = _ago(30).strftime(timeutils.PERFECT_TIME_FORMAT)
        old = _ago(90).strftime(timeutils.PERFECT_TIME_FORMAT)
        self.assertTrue(self.driver.is_up(fakes.fake_service(last_seen_up=recent)))
        self.assertFalse(self.driver.is_up(fakes.fake_service(last_seen_up=old)))
        self.assertTrue(self.driver.is_up(fakes.fake_service(last_seen_up=None,
                                                              created_at=recent)))

    def test_timezone_aware_timestamps_are_compared_in_utc(self):
        plus_two = datetime.timezone(datetime.timedelta(hours=2))
        aware = (NOW + datetime.timedelta(hours=2)).replace(tzinfo=plus_two)
        self.assertTrue(self.driver.is_up(fakes.fake_service(last_seen_up=aware)))
        stale = (_ago(61) + datetime.timedelta(hours=2)).replace(tzinfo=plus_two)
        self.assertFalse(self.driver.is_up(fakes.fake_service(last_seen_up=stale)))

    def test_clock_skew_into_the_future_counts_by_its_size(self):
        self.assertTrue(self.driver.is_up(fakes.fake_service(last_seen_up=_ago(-30))))
        self.assertFalse(self.driver.is_up(fakes.fake_service(last_seen_up=_ago(-61))))

    def test_service_objects_work_like_dicts(self):
        service = objects.Service(forced_down=False, last_seen_up=_ago(10))
        self.assertTrue(self.driver.is_up(service))
        # unset fields are read as None, never lazy-loaded
        self.assertTrue(self.driver.is_up(objects.Service(created_at=_ago(10))))
        self.assertFalse(self.driver.is_up(objects.Service(forced_down=True)))

    def test_service_down_time_option_is_read(self):
        self.flags(service_down_time=200)
        self.assertTrue(self.driver.is_up(fakes.fake_service(last_seen_up=_ago(150))))

    def test_updated_time_is_updated_at(self):
        self.assertEqual(NOW, self.driver.updated_time(fakes.fake_service(updated_at=NOW)))


class TestAPI(base.TestCase):

    def test_down_time_not_above_report_interval_is_raised_to_2_5_times(self):
        self.flags(report_interval=30, service_down_time=30)
        with self.assertLogs('minisched.servicegroup.api', 'WARNING'):
            servicegroup.API(self.conf)
        self.assertEqual(75, self.conf.service_down_time)

    def test_fractional_result_is_truncated(self):
        self.flags(report_interval=11, service_down_time=10)
        servicegroup.API(self.conf)
        self.assertEqual(27, self.conf.service_down_time)

    def test_larger_down_time_is_kept(self):
        self.flags(report_interval=10, service_down_time=11)
        servicegroup.API(self.conf)
        self.assertEqual(11, self.conf.service_down_time)

    def test_service_is_up_delegates_to_the_driver(self):
        api = servicegroup.API(self.conf)
        self.assertTrue(api.service_is_up(fakes.fake_service()))
        self.assertFalse(api.service_is_up(fakes.fake_service(forced_down=True)))
        self.assertEqual(NOW, api.get_updated_time({'updated_at': NOW}))

    def test_join_starts_the_report_timer(self):
        service = mock.Mock(report_interval=10)
        servicegroup.API(self.conf).join('host1', 'compute', service)
        service.tg.add_timer_args.assert_called_once_with(
            10, mock.ANY, args=[service], initial_delay=db.INITIAL_REPORTING_DELAY)
        self.assertEqual(5, db.INITIAL_REPORTING_DELAY)

    def test_join_without_report_interval_starts_nothing(self):
        service = mock.Mock(report_interval=0)
        servicegroup.API(self.conf).join('host1', 'compute', service)
        service.tg.add_timer_args.assert_not_called()

    def test_join_needs_a_service(self):
        with self.assertRaises(RuntimeError):
            servicegroup.API(self.conf).join('host1', 'compute')


class _FakeService:
    """What ``_report_state`` touches on a minisched Service: ``service_ref`` and a flag."""

    def __init__(self, service_ref):
        self.service_ref = service_ref
        self.model_disconnected = False


class TestReportState(_DriverTestCase):

    def setUp(self):
        super().setUp()
        self.conductor = fakes.fake_indirection(self)
        ref = objects.Service(context.get_admin_context(), id=1, host='host1',
                              binary='minisched-compute', report_count=7)
        ref.obj_reset_changes()
        self.service = _FakeService(ref)

    def _fail_saves_with(self, error):
        self.conductor.action_results[('Service', 'save')] = error

    def _succeed_saves(self):
        self.conductor.action_results.pop(('Service', 'save'), None)

    def test_report_increments_report_count_and_saves(self):
        self.driver._report_state(self.service)
        self.assertEqual(8, self.service.service_ref.report_count)
        self.assertEqual(['Service.save'], self.conductor.methods())
        self.assertEqual(('action', 'Service', 'save', (), {}), self.conductor.calls[0])
        self.assertFalse(self.service.model_disconnected)

    def test_messaging_timeout_is_logged_once_and_survived(self):
        self._fail_saves_with(messaging.MessagingTimeout('no conductor'))
        with self.assertLogs(_LOGGER, 'WARNING') as logs:
            self.driver._report_state(self.service)
            self.driver._report_state(self.service)
        self.assertEqual(1, len(logs.records))
        self.assertIn('Lost connection', logs.output[0])
        self.assertTrue(self.service.model_disconnected)
        self.assertEqual(2, len(self.conductor.calls))

    def test_conductor_database_outage_is_one_line_then_recovery(self):
        self._fail_saves_with(exception.DBTransientError(reason='connection refused'))
        with self.assertLogs(_LOGGER, 'WARNING') as logs:
            for _ in range(3):
                self.driver._report_state(self.service)
        self.assertEqual(1, len(logs.records))
        self.assertIn('Cannot report service status', logs.output[0])
        self.assertIn('connection refused', logs.output[0])
        self.assertIsNone(logs.records[0].exc_info)
        self._succeed_saves()
        with self.assertLogs(_LOGGER, 'INFO') as logs:
            self.driver._report_state(self.service)
        self.assertIn('Recovered', logs.output[-1])

    def test_recovery_after_timeout_is_logged(self):
        self._fail_saves_with(messaging.MessagingTimeout('no conductor'))
        self.driver._report_state(self.service)
        self._succeed_saves()
        with self.assertLogs(_LOGGER, 'INFO') as logs:
            self.driver._report_state(self.service)
        self.assertIn('Recovered', logs.output[-1])
        self.assertFalse(self.service.model_disconnected)

    def test_other_errors_are_logged_and_survived(self):
        self._fail_saves_with(RuntimeError('database on fire'))
        with self.assertLogs(_LOGGER, 'ERROR') as logs:
            self.driver._report_state(self.service)
        self.assertIn('Unexpected error', logs.output[0])
        self.assertTrue(self.service.model_disconnected)
        self._succeed_saves()
        with self.assertLogs(_LOGGER, 'INFO') as logs:
            self.driver._report_state(self.service)
        self.assertIn('Recovered', logs.output[-1])

    def test_no_recovery_message_when_nothing_failed(self):
        with mock.patch.object(db.LOG, 'info') as info:
            self.driver._report_state(self.service)
            self.driver._report_state(self.service)
        info.assert_not_called()
        self.assertEqual(9, self.service.service_ref.report_count)

    def test_message_bus_give_up_is_one_line(self):
        self._fail_saves_with(messaging.MessageDeliveryFailure(
            'Unable to connect to AMQP server on 127.0.0.1:5672 after 8 tries'))
        with self.assertLogs(_LOGGER, 'WARNING') as logs:
            for _ in range(3):
                self.driver._report_state(self.service)
        self.assertEqual(1, len(logs.records))
        self.assertIn('message bus is unreachable: MessageDeliveryFailure: Unable to connect',
                      logs.output[0])
        self.assertIsNone(logs.records[0].exc_info)
        self.assertTrue(self.service.model_disconnected)


class TestReportStateWithOwnDatabase(_DriverTestCase):
    """The conductor and the scheduler save their service record themselves: during an
    outage of their database each report fails with oslo.db's own error."""

    def setUp(self):
        super().setUp()
        self.ref = objects.Service(context.get_admin_context(), id=1, host='host1',
                                   binary='minisched-scheduler', report_count=7)
        self.ref.obj_reset_changes()
        self.service = _FakeService(self.ref)

    def _save_raises(self, error):
        def save():
            raise error
        self.ref.save = save

    def test_database_outage_is_one_line_not_a_traceback_per_report(self):
        self._save_raises(db_exc.DBConnectionError(
            'connection to server at "127.0.0.1", port 5432 failed: Connection refused\n'
            '[SQL: SELECT 1]'))
        with self.assertLogs(_LOGGER, 'WARNING') as logs:
            for _ in range(5):
                self.driver._report_state(self.service)
        self.assertEqual(1, len(logs.records))
        self.assertIsNone(logs.records[0].exc_info)
        self.assertIn('the database is unavailable: DBConnectionError: connection to server',
                      logs.output[0])
        self.assertNotIn('SELECT', logs.output[0])

    def test_a_permanent_database_error_keeps_its_traceback(self):
        self._save_raises(db_exc.DBDataError('value too long'))
        with self.assertLogs(_LOGGER, 'ERROR') as logs:
            self.driver._report_state(self.service)
        self.assertIsNotNone(logs.records[0].exc_info)
