"""The value rules of nova-api's request schemas (its ``parameter_types`` and format checkers).

Each ``check_*`` function applies one rule to one value and returns the value, converted
where Nova's schema accepts another form (``"2"`` for an integer); a value that breaks the
rule raises :class:`~minisched.exception.ValidationError` whose message names the field, the
rule and what is wrong, in Nova's form: ``Invalid input for field/attribute FIELD. Value:
VALUE. PROBLEM``. Long values are shortened in the message, with their length.
"""
import ipaddress
import re
import unicodedata

from oslo_utils import uuidutils

from minisched import exception

#: Largest value of an integer column (Nova's ``db.constants.MAX_INT``).
MAX_INT = 0x7FFFFFFF
#: Largest value of a single-precision float column (``db.constants.SQL_SP_FLOAT_MAX``).
SQL_SP_FLOAT_MAX = 3.40282e+38
#: Longest name, zone, metadata key or value: the width of the columns they are kept in.
MAX_LENGTH = 255

NAME_RULE = 'printable characters. Can not start or end with whitespace.'
AZ_NAME_RULE = 'printable characters except :. Can not start or end with whitespace.'

#: Nova builds its set of printable characters by scanning U+0000 to U+FFFE: a character
#: beyond the Basic Multilingual Plane is never printable (nor storable in a utf8 MySQL
#: column, which holds three bytes per character).
_LAST_SCANNED = 0xFFFE
#: Characters of a value shown in a message before it is cut.
_PREVIEW_CHARS = 40
#: Characters of a field name (it may hold a caller's key) shown in a message.
_FIELD_CHARS = 80
#: Nova's metadata key pattern (``parameter_types.metadata``).
_METADATA_KEY = re.compile('[a-zA-Z0-9-_:. ]{1,255}')
#: The forms of a boolean Nova's ``parameter_types.boolean`` accepts.
_TRUE = ('True', 'TRUE', 'true', '1', 'ON', 'On', 'on', 'YES', 'Yes', 'yes')
_FALSE = ('False', 'FALSE', 'false', '0', 'OFF', 'Off', 'off', 'NO', 'No', 'no')
_DIGITS = re.compile('[0-9]+')
_DECIMAL = re.compile(r'[0-9]+(\.[0-9]+)?')


# -- messages -------------------------------------------------------------------------------

def preview(value):
    """``value`` as a message shows it: a repr, cut after a few dozen characters."""
    if isinstance(value, str) and len(value) > _PREVIEW_CHARS:
        return '%r... (%d characters)' % (value[:_PREVIEW_CHARS], len(value))
    text = repr(value)
    if len(text) > _PREVIEW_CHARS:
        text = '%s... (a %s)' % (text[:_PREVIEW_CHARS], type(value).__name__)
    return text


def invalid(field, value, problem):
    """The ValidationError of ``field``, whose ``value`` has ``problem`` (a sentence)."""
    shown = field if len(field) <= _FIELD_CHARS else field[:_FIELD_CHARS - 3] + '...'
    return exception.ValidationError(
        detail='Invalid input for field/attribute %s. Value: %s. %s'
               % (shown, preview(value), problem), field=field)


def _wrong_type(value, expected):
    """The problem of ``value`` not being of the ``expected`` type (a phrase)."""
    if value is None:
        return 'Is None, not %s.' % expected
    return 'Is of type %s, not %s.' % (type(value).__name__, expected)


def _character(char):
    return '%r (U+%04X, %s)' % (char, ord(char), unicodedata.category(char))


# -- characters -----------------------------------------------------------------------------

def printable(char):
    """Whether Nova's names may hold ``char``: a character of the Basic Multilingual Plane
    that is no control, format, surrogate, private-use or unassigned character (category
    C*), and no line or paragraph separator (of the separators, only spaces, Zs, are)."""
    if ord(char) > _LAST_SCANNED:
        return False
    category = unicodedata.category(char)
    return category[0] != 'C' and (category[0] != 'Z' or category == 'Zs')


def _is_space(char):
    return unicodedata.category(char) == 'Zs'


# -- strings --------------------------------------------------------------------------------

def check_string(field, value, min_length=0, max_length=None):
    """A string of ``min_length`` to ``max_length`` characters."""
    if not isinstance(value, str):
        raise invalid(field, value, _wrong_type(value, 'a string'))
    if len(value) < min_length:
        raise invalid(field, value, 'Is shorter than %d character%s.'
                      % (min_length, '' if min_length == 1 else 's'))
    if max_length is not None and len(value) > max_length:
        raise invalid(field, value, 'Is %d characters long, more than the maximum of %d.'
                      % (len(value), max_length))
    return value


def check_name(field, value, exclude='', rule=NAME_RULE):
    """Nova's ``name``: 1 to 255 printable characters, no whitespace first or last."""
    check_string(field, value, 1, MAX_LENGTH)
    for char in value:
        if not printable(char) or char in exclude:
            raise invalid(field, value, 'Contains %s; the value must be: %s'
                          % (_character(char), rule))
    if _is_space(value[0]) or _is_space(value[-1]):
        raise invalid(field, value, 'Starts or ends with whitespace; the value must be: %s'
                      % rule)
    return value


def check_az_name(field, value):
    """Nova's ``az_name`` (an aggregate's zone): a name without ``:``."""
    return check_name(field, value, exclude=':', rule=AZ_NAME_RULE)


def check_description(field, value, max_length=MAX_LENGTH):
    """Nova's ``description``: None, or up to ``max_length`` printable characters."""
    if value is None:
        return None
    check_string(field, value, 0, max_length)
    for char in value:
        if not printable(char):
            raise invalid(field, value, 'Contains %s; a description holds printable '
                          'characters only.' % _character(char))
    return value


def check_uuid(field, value):
    """A string in one of the forms of a UUID (Nova's ``uuid`` format)."""
    check_string(field, value)
    if not uuidutils.is_uuid_like(value):
        raise invalid(field, value, 'Is not a valid UUID.')
    return value


def check_ip_address(field, value):
    """An IPv4 or IPv6 address (Nova's ``ip_address``)."""
    check_string(field, value)
    try:
        ipaddress.ip_address(value)
    except ValueError:
        raise invalid(field, value, 'Is not a valid IPv4 or IPv6 address.')
    return value


# -- numbers and flags ----------------------------------------------------------------------

def check_integer(field, value, minimum, maximum=None):
    """An integer (or a string of digits) from ``minimum`` to ``maximum``; returns the int.

    Nova's ``positive_integer``/``non_negative_integer`` (no maximum) and flavor sizes
    (maximum ``MAX_INT``).
    """
    if isinstance(value, str):
        if not _DIGITS.fullmatch(value):
            raise invalid(field, value, 'Is not an integer: a string must hold digits only.')
        number = int(value)
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise invalid(field, value, _wrong_type(value, 'an integer or a string of digits'))
    elif isinstance(value, float) and not value.is_integer():
        raise invalid(field, value, 'Is not an integer.')
    else:
        number = int(value)
    if number < minimum:
        raise invalid(field, value, 'Is less than the minimum of %d.' % minimum)
    if maximum is not None and number > maximum:
        raise invalid(field, value, 'Is greater than the maximum of %d.' % maximum)
    return number


def check_positive_float(field, value, maximum=SQL_SP_FLOAT_MAX):
    """A number (or a decimal string) above 0 and at most ``maximum``; returns the float."""
    if isinstance(value, str):
        if not _DECIMAL.fullmatch(value):
            raise invalid(field, value, 'Is not a number: a string must be digits with an '
                          'optional decimal part.')
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise invalid(field, value, _wrong_type(value, 'a number or a decimal string'))
    number = float(value)
    if number <= 0:
        raise invalid(field, value, 'Is less than or equal to the minimum of 0.')
    if number > maximum:
        raise invalid(field, value, 'Is greater than the maximum of %g.' % maximum)
    return number


def check_boolean(field, value):
    """True, False or one of the strings Nova's ``boolean`` takes (``'yes'``, ``'0'``...)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in _TRUE + _FALSE:
        return value in _TRUE
    raise invalid(field, value, 'Is not a boolean: true, false, or one of the strings %s.'
                  % '/'.join(sorted({text.lower() for text in _TRUE + _FALSE})))


# -- metadata -------------------------------------------------------------------------------

def check_metadata(field, value, max_items=None):
    """Nova's ``metadata``: a dict of up to ``max_items`` pairs, each key 1 to 255 of
    ``a-z A-Z 0-9 - _ : .`` and space, each value a string of at most 255 characters."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid(field, value, _wrong_type(value, 'an object (a dict)'))
    if max_items is not None and len(value) > max_items:
        raise invalid(field, value, 'Has %d items, more than the maximum of %d.'
                      % (len(value), max_items))
    for key, item in value.items():
        if not isinstance(key, str):
            raise invalid(field, key, 'A key ' + _wrong_type(key, 'a string').lower())
        if not 1 <= len(key) <= MAX_LENGTH:
            raise invalid(field, key, 'A key is %d characters long; keys have 1 to %d.'
                          % (len(key), MAX_LENGTH))
        if not _METADATA_KEY.fullmatch(key):
            raise invalid(field, key, 'A key holds only the characters a-z A-Z 0-9 - _ : . '
                          'and space.')
        check_string('%s.%s' % (field, key), item, 0, MAX_LENGTH)
    return value
