"""RequestContext across the wire: to_dict / from_dict, and the timestamp every message carries."""
import datetime

from oslo_utils import timeutils

from minisched import context
from tests.unit import base


class TimestampTestCase(base.TestCase):
    def _as_before(self, value):
        return timeutils.parse_isotime(value).replace(tzinfo=None)

    def test_round_trip_keeps_the_timestamp(self):
        ctxt = context.RequestContext(user_id='u', project_id='p',
                                      timestamp=datetime.datetime(2026, 11, 24, 15, 1, 2, 345678))
        copy = context.RequestContext.from_dict(ctxt.to_dict())
        self.assertEqual(ctxt.timestamp, copy.timestamp)
        self.assertIsNone(copy.timestamp.tzinfo)

    def test_same_answer_as_parse_isotime(self):
        for value in ('2026-11-24T15:01:02.345678',  # the written form
                      '2026-11-24T15:01:02.000000',
                      '2026-11-24T15:01:02',
                      '2026-11-24T15:01:02Z',
                      '2026-11-24T15:01:02.345+01',  # written length, with an offset
                      '2026-11-24T15:01:02.34567Z',
                      '2026-11-24T15:01:02,345678',
                      '2026-11-24T15:01:02.345678+02:00',
                      '2026-11-24 15:01:02.345678',
                      '2026-11-24T15:01:02.3456789'):
            with self.subTest(value=value):
                self.assertEqual(self._as_before(value), context.parse_timestamp(value))
                self.assertIsNone(context.parse_timestamp(value).tzinfo)

    def test_rejects_what_parse_isotime_rejects(self):
        for value in ('not a timestamp at all!!!!', '2026-13-24T15:01:02.345678',
                      '2026-11-24X15:01:02.345678', '',
                      '2026-W47-2T15:01:02.345678'):  # written length; fromisoformat takes it
            with self.subTest(value=value):
                self.assertRaises(ValueError, self._as_before, value)
                self.assertRaises(ValueError, context.parse_timestamp, value)
                self.assertRaises(ValueError, context.RequestContext, timestamp=value)
