"""RequestContext across the wire: to_dict / from_dict, and the timestamp every message carries."""
import datetime

from oslo_utils import timeutils

from minisched import context
from minisched import exception
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


class FromDictTypesTestCase(base.TestCase):
    """A deserialized context's fields have their types: ``bool("false")`` is True."""

    def _dict(self, **changes):
        values = context.RequestContext(user_id='u', project_id='p').to_dict()
        values.update(changes)
        return values

    def test_round_trip(self):
        for ctxt in (context.get_admin_context(), context.get_context(),
                     context.RequestContext(user_id='u', project_id='p', roles=['member'])):
            copy = context.RequestContext.from_dict(ctxt.to_dict())
            self.assertIs(ctxt.is_admin, copy.is_admin)
            self.assertEqual(ctxt.to_dict(), copy.to_dict())

    def test_is_admin_must_be_a_boolean(self):
        for value in ('false', 'False', 'true', '', 0, 1, 'no', [], {}):
            with self.subTest(value=value):
                with self.assertRaises(exception.InvalidContext) as caught:
                    context.RequestContext.from_dict(self._dict(is_admin=value))
                self.assertIn('is_admin is a %s' % type(value).__name__,
                              str(caught.exception))
        self.assertTrue(context.RequestContext.from_dict(self._dict(is_admin=True)).is_admin)
        self.assertFalse(context.RequestContext.from_dict(self._dict(is_admin=False)).is_admin)
        self.assertFalse(context.RequestContext.from_dict(self._dict(is_admin=None)).is_admin)

    def test_other_fields_have_their_types(self):
        for name, value in (('user_id', 5), ('project_id', ['p']), ('read_only', 'false'),
                            ('show_deleted', 1), ('is_admin_project', 'true'),
                            ('roles', 'admin'), ('roles', ['admin', 1]), ('timestamp', 5),
                            ('read_deleted', True), ('request_id', {'a': 1})):
            with self.subTest(name=name, value=value):
                with self.assertRaises(exception.InvalidContext) as caught:
                    context.RequestContext.from_dict(self._dict(**{name: value}))
                self.assertIn(name, str(caught.exception))

    def test_not_a_mapping(self):
        self.assertRaises(exception.InvalidContext, context.RequestContext.from_dict, 'ctx')

    def test_unknown_keys_are_ignored(self):
        ctxt = context.RequestContext.from_dict(self._dict(anything=object()))
        self.assertEqual('u', ctxt.user_id)

    def test_a_value_that_does_not_read_is_refused_naming_its_field(self):
        for field, value in (('timestamp', 'the day after tomorrow'),
                             ('read_deleted', 'sometimes')):
            with self.subTest(field=field):
                with self.assertRaises(exception.InvalidContext) as raised:
                    context.RequestContext.from_dict(self._dict(**{field: value}))
                self.assertIn('%s %r' % (field, value) if field == 'timestamp' else
                              '%s is %r' % (field, value), raised.exception.format_message())


class ThreadContextTestCase(base.TestCase):
    """A context that fails to build never becomes the thread's current one (oslo.log reads
    that one for every line: a half-made one broke the logging of the very error)."""

    def test_a_failed_context_leaves_the_current_one(self):
        from oslo_context import context as oslo_context
        current = context.RequestContext(user_id='u', project_id='p')
        self.assertIs(current, oslo_context.get_current())
        for bad in ({'timestamp': 'never'}, {'read_deleted': 'sometimes'}):
            with self.subTest(bad=bad):
                self.assertRaises(ValueError, context.RequestContext, **bad)
                self.assertIs(current, oslo_context.get_current())
