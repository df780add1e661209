"""This process's own outages: the silence it could not hear is not the others' silence."""
import datetime
import logging

import numpy as np
from oslo_utils import timeutils

from minisched.servicegroup.drivers import db
from minisched.servicegroup import outages
from tests.unit import base
from tests.unit import fakes

NOW = datetime.datetime(2026, 3, 1, 12, 0, 0)
EPOCH = datetime.datetime(1970, 1, 1)


def _ago(seconds):
    return NOW - datetime.timedelta(seconds=seconds)


def _us(moment):
    return (moment - EPOCH) // datetime.timedelta(microseconds=1)


class TestUnheard(base.TestCase):

    def setUp(self):
        super().setUp()
        self.outages = outages.Outages()

    def test_no_outage_hides_nothing(self):
        self.assertEqual(0, self.outages.unheard_seconds(_ago(100), NOW))

    def test_only_the_overlap_with_the_heartbeat_span_counts(self):
        self.outages.begin(outages.BUS, _ago(90))
        self.outages.end(outages.BUS, _ago(30))
        self.assertEqual(60, self.outages.unheard_seconds(_ago(100), NOW))
        self.assertEqual(40, self.outages.unheard_seconds(_ago(70), NOW))
        self.assertEqual(0, self.outages.unheard_seconds(_ago(20), NOW))

    def test_overlapping_outages_of_two_kinds_count_once(self):
        self.outages.begin(outages.BUS, _ago(90))
        self.outages.begin(outages.REPORT, _ago(80))
        self.outages.end(outages.REPORT, _ago(40))
        self.outages.end(outages.BUS, _ago(30))
        self.assertEqual(60, self.outages.unheard_seconds(_ago(100), NOW))

    def test_an_open_outage_counts_until_now_for_a_bounded_time(self):
        self.outages.begin(outages.BUS, _ago(50))
        self.outages.begin(outages.BUS, _ago(10))  # still away: the first start stays
        self.assertTrue(self.outages.is_away(outages.BUS))
        self.assertEqual(50, self.outages.unheard_seconds(_ago(100), NOW))
        # One whose end was never seen hides at most OPEN_LIMIT_SECONDS.
        stuck = outages.Outages()
        stuck.begin(outages.REPORT, _ago(3000))
        self.assertEqual(outages.OPEN_LIMIT_SECONDS, stuck.unheard_seconds(_ago(4000), NOW))

    def test_the_vectorised_form_gives_the_same_answers(self):
        self.outages.begin(outages.BUS, _ago(90))
        self.outages.end(outages.BUS, _ago(30))
        self.outages.begin(outages.REPORT, _ago(20))
        beats = [_ago(s) for s in (200, 100, 70, 25, 5, -5)]
        expected = [self.outages.unheard_seconds(b, NOW) * 1e6 for b in beats]
        got = self.outages.unheard_us(np.array([_us(b) for b in beats], dtype=np.int64),
                                      _us(NOW), EPOCH)
        self.assertEqual(expected, got.tolist())


class TestIsUpLessOwnOutages(base.TestCase):
    """A 60 s broker outage (down time 60 s, reports every 10): the computes' last reports
    are 75 s old when the scheduler is back; they are up, as they could not report."""

    def setUp(self):
        super().setUp()
        timeutils.set_time_override(NOW)
        self.addCleanup(timeutils.clear_time_override)
        self.driver = db.DbDriver(self.conf)   # service_down_time = 60

    def test_silence_during_the_observers_own_outage_does_not_count(self):
        compute = fakes.fake_service(last_seen_up=_ago(75))
        self.assertFalse(self.driver.is_up(compute))  # Nova's rule alone
        outages.OWN.begin(outages.BUS, _ago(70))
        outages.OWN.end(outages.BUS, _ago(5))
        self.assertTrue(self.driver.is_up(compute))
        # Silent for 61 s after this scheduler was back: down, as in Nova.
        self.assertFalse(self.driver.is_up(fakes.fake_service(last_seen_up=_ago(136))))
        # Silent well before the outage: down still.
        self.assertFalse(self.driver.is_up(fakes.fake_service(last_seen_up=_ago(600))))

    def test_the_observers_failed_reports_are_its_outage(self):
        """The scheduler's own state report failed (its database was away) from its last
        report to the next: the computes' silence meanwhile does not count."""
        from oslo_db import exception as db_exc
        saves = []

        class Ref:
            report_count = 0

            def save(self):
                saves.append(timeutils.utcnow())
                if len(saves) in (2, 3):
                    raise db_exc.DBConnectionError('connection refused')
        service = type('S', (), {'service_ref': Ref(), 'model_disconnected': False})()
        compute = fakes.fake_service(last_seen_up=_ago(70))
        timeutils.set_time_override(_ago(70))
        self.driver._report_state(service)           # went through
        for seconds in (40, 10):                     # the database is away
            timeutils.set_time_override(_ago(seconds))
            self.driver._report_state(service)
        timeutils.set_time_override(NOW)
        self.assertTrue(outages.OWN.is_away(outages.REPORT))
        self.assertTrue(self.driver.is_up(compute))
        self.driver._report_state(service)           # back
        self.assertFalse(outages.OWN.is_away(outages.REPORT))
        self.assertTrue(self.driver.is_up(compute))  # 70 s, 70 of them unheard
        timeutils.set_time_override(NOW + datetime.timedelta(seconds=61))
        self.assertFalse(self.driver.is_up(compute))


class TestBusWatch(base.TestCase):

    def test_the_rabbit_drivers_lines_open_and_close_a_bus_outage(self):
        watched = outages.Outages()
        logger = logging.getLogger('test.outages.rabbit')
        logger.setLevel(logging.DEBUG)
        handler = outages.BusWatch(watched)
        logger.addHandler(handler)
        self.addCleanup(logger.removeHandler, handler)
        logger.info('[%(connection_id)s] Reconnected to AMQP server on h:5672 via ...',
                    {'connection_id': 'x'})
        self.assertEqual([], watched.spans(NOW))
        logger.warning('AMQP server on h:5672 is unreachable (a warning: not an outage)')
        self.assertFalse(watched.is_away(outages.BUS))
        logger.error('[%(connection_id)s] AMQP server on %(hostname)s:%(port)s is '
                     'unreachable: %(err_str)s. Trying again in %(sleep_time)d seconds.',
                     {'connection_id': 'x', 'hostname': 'h', 'port': 5672, 'err_str': 'e',
                      'sleep_time': 1})
        self.assertTrue(watched.is_away(outages.BUS))
        logger.info('[%(connection_id)s] Reconnected to AMQP server on %(hostname)s:%(port)s '
                    'via [%(transport)s] client with port %(client_port)s.',
                    {'connection_id': 'x', 'hostname': 'h', 'port': 1, 'transport': 'amqp',
                     'client_port': 2})
        self.assertFalse(watched.is_away(outages.BUS))
        self.assertEqual(1, len(watched.spans(timeutils.utcnow())))
        logger.error('Connection failed: %s (retrying in %s seconds)', 'refused', 1.0)
        self.assertTrue(watched.is_away(outages.BUS))

    def test_installed_on_the_rabbit_drivers_logger_when_it_logs_reconnections(self):
        from unittest import mock
        logger = logging.getLogger(outages.RABBIT_LOGGER)
        self.addCleanup(logger.setLevel, logger.level)
        with mock.patch.object(outages, '_watching', []):
            logger.setLevel(logging.WARNING)   # reconnections unseen: not installed
            db.DbDriver(self.conf)
            self.assertEqual([], outages._watching)
            logger.setLevel(logging.INFO)
            db.DbDriver(self.conf)
            handler, = outages._watching
            self.addCleanup(logger.removeHandler, handler)
            self.assertIn(handler, logger.handlers)
            self.assertIs(outages.OWN, handler.outages)
