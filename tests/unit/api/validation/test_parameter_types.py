"""The value rules of Nova's parameter types: boundaries, types, characters, messages."""
from minisched.api.validation import parameter_types as types
from minisched import exception
from tests.unit import base

uuids = base.uuids


class RuleTestCase(base.TestCase):

    def assertRefused(self, check, *args, field=None, says=()):
        """``check(*args)`` raises a ValidationError naming ``field`` and saying ``says``."""
        with self.assertRaises(exception.ValidationError) as raised:
            check(*args)
        message = raised.exception.format_message()
        if field is not None:
            self.assertEqual(field, raised.exception.kwargs['field'])
            self.assertTrue(message.startswith('Invalid input for field/attribute %s. '
                                               % field), message)
        for text in (says,) if isinstance(says, str) else says:
            self.assertIn(text, message)
        return message


class TestName(RuleTestCase):

    def test_names_of_1_to_255_printable_characters_pass(self):
        for name in ('a', 'x' * 255, 'web server 1', 'café-ß', 'a:b', '名前'):
            self.assertEqual(name, types.check_name('name', name))

    def test_256_characters_are_refused_naming_the_length_and_the_limit(self):
        message = self.assertRefused(types.check_name, 'name', 'x' * 256, field='name',
                                     says=('256 characters long', 'maximum of 255'))
        self.assertLess(len(message), 200)  # the value is shown cut, with its length

    def test_empty_and_non_strings_are_refused(self):
        self.assertRefused(types.check_name, 'name', '', field='name', says='shorter than 1')
        for value in (None, 5, ['a'], b'a'):
            self.assertRefused(types.check_name, 'name', value, field='name', says='not a string')

    def test_whitespace_first_or_last_is_refused(self):
        for name in (' a', 'a ', '\u00a0a'):  # NO-BREAK SPACE is a space (Zs) too
            self.assertRefused(types.check_name, 'name', name, says='whitespace')

    def test_control_separator_and_astral_characters_are_refused(self):
        for char in ('\n', '\t', '\x00', '\x7f', '\u2028', '\u200b', '\U0001F600'):
            self.assertRefused(types.check_name, 'name', 'a%sb' % char,
                               says='U+%04X' % ord(char))

    def test_zone_names_cannot_hold_a_colon(self):
        self.assertEqual('az1', types.check_az_name('availability_zone', 'az1'))
        self.assertRefused(types.check_az_name, 'availability_zone', 'az:1', says="':'")


class TestDescriptionUuidAddress(RuleTestCase):

    def test_description_allows_none_spaces_and_its_maximum(self):
        for value in (None, '', ' a b ', 'x' * 255):
            self.assertEqual(value, types.check_description('description', value))
        self.assertRefused(types.check_description, 'description', 'x' * 256,
                           says='maximum of 255')
        self.assertRefused(types.check_description, 'description', 'a\nb', says='U+000A')

    def test_uuids(self):
        self.assertEqual(uuids.a, types.check_uuid('f', uuids.a))
        self.assertRefused(types.check_uuid, 'f', 'not-a-uuid', field='f', says='not a valid UUID')
        self.assertRefused(types.check_uuid, 'f', 7, says='not a string')

    def test_ip_addresses(self):
        for address in ('10.0.0.1', '::1', 'fe80::1'):
            self.assertEqual(address, types.check_ip_address('ip', address))
        for address in ('10.0.0', '10.0.0.256', 'host', ''):
            self.assertRefused(types.check_ip_address, 'ip', address, says='IPv4 or IPv6')


class TestNumbers(RuleTestCase):

    def test_integers_as_numbers_or_digit_strings(self):
        self.assertEqual(3, types.check_integer('n', '3', 1))
        self.assertEqual(3, types.check_integer('n', 3.0, 1))
        self.assertEqual(types.MAX_INT, types.check_integer('n', types.MAX_INT, 1, types.MAX_INT))

    def test_integer_bounds(self):
        self.assertRefused(types.check_integer, 'n', 0, 1, says='minimum of 1')
        self.assertRefused(types.check_integer, 'n', types.MAX_INT + 1, 1, types.MAX_INT,
                           says='maximum of 2147483647')

    def test_integer_types(self):
        for value in (True, None, [1], 1.5, '-1', '1.0', '', ' 2'):
            self.assertRefused(types.check_integer, 'n', value, 0, field='n')

    def test_positive_floats(self):
        self.assertEqual(0.5, types.check_positive_float('f', '0.5'))
        self.assertEqual(2.0, types.check_positive_float('f', 2))
        for value in (0, '0', -1, 'x', '1e3', True, None, 3.5e38):
            self.assertRefused(types.check_positive_float, 'f', value, field='f')

    def test_booleans_take_nova_forms_only(self):
        for value, expected in ((True, True), ('yes', True), ('ON', True), ('1', True),
                                (False, False), ('no', False), ('Off', False)):
            self.assertIs(expected, types.check_boolean('b', value))
        for value in (1, 0, 'maybe', 'tRUE', None):
            self.assertRefused(types.check_boolean, 'b', value, says='not a boolean')


class TestMetadata(RuleTestCase):

    def test_keys_and_values_up_to_255(self):
        metadata = {'k' * 255: 'v' * 255, 'a-b_c:d. e': ''}
        self.assertEqual(metadata, types.check_metadata('metadata', metadata))
        self.assertEqual({}, types.check_metadata('metadata', None))

    def test_bad_keys_and_values_are_refused(self):
        self.assertRefused(types.check_metadata, 'metadata', {'k' * 256: 'v'},
                           says='256 characters')
        self.assertRefused(types.check_metadata, 'metadata', {'': 'v'}, says='0 characters')
        self.assertRefused(types.check_metadata, 'metadata', {'a/b': 'v'}, says='characters')
        self.assertRefused(types.check_metadata, 'metadata', {1: 'v'}, says='not a string')
        self.assertRefused(types.check_metadata, 'metadata', {'k': 'v' * 256},
                           field='metadata.k', says='maximum of 255')
        self.assertRefused(types.check_metadata, 'metadata', {'k': 5}, field='metadata.k')
        self.assertRefused(types.check_metadata, 'metadata', ['k'], says='not an object')

    def test_item_limit(self):
        self.assertEqual(2, len(types.check_metadata('m', {'a': '', 'b': ''}, max_items=2)))
        self.assertRefused(types.check_metadata, 'm', dict.fromkeys('abc', ''), 2,
                           says='3 items, more than the maximum of 2')
