"""Server create: what nova-api's request schema checks before anything is written.

The name and the availability zone are Nova's ``name`` (1 to 255 printable characters, no
whitespace first or last); with several servers each name gets a ``-N`` suffix, which must
fit too. Metadata is Nova's (keys of 1 to 255 of ``a-z
A-Z 0-9 - _ : .`` and space, string values of at most 255 characters; at most
``METADATA_ITEMS`` pairs, Nova's default quota). Scheduler hints the filters read have
Nova's types: ``group``, ``same_host`` and ``different_host`` take UUIDs, ``query`` a JSON
string (or an object, kept as its JSON), ``target_cell`` a name, ``build_near_host_ip`` an IP
address, ``cidr`` a ``/PREFIX``; other hints are accepted as Nova accepts them, as long as
the request spec can hold them (strings, numbers, or lists of those).

The counts are Nova's ``min_count`` and ``max_count`` (``num_instances`` here): positive
integers, ``min_count`` at most ``max_count``. How many one request may ask for is not the
schema's business (Nova's quota decides; here ``[api] max_instances_per_request``: see
``minisched.compute.api``).

Hints come in either of their forms: Nova's (a scalar or a list) or the request spec's (a
list per hint, a one-element list standing for its value). The result is the request
spec's form.
"""
import collections
import re

from oslo_serialization import jsonutils

from minisched.api.validation import parameter_types as types

#: Most metadata items of a server (Nova's default ``[quota] metadata_items``).
METADATA_ITEMS = 128

_CIDR = re.compile('/[0-9a-f.:]+')
_SCALARS = (str, int, float)

#: A server create request once validated: the values to build the instances with.
#: ``count`` is the most instances asked for (Nova's ``max_count``), ``min_count`` the
#: fewest the caller takes.
CreateRequest = collections.namedtuple(
    'CreateRequest', 'name availability_zone scheduler_hints metadata count min_count')


def check_count(field, value):
    """A count of servers (Nova's ``min_count``/``max_count``): a positive integer."""
    return types.check_integer(field, value, 1)


def check_server_name(name, count=1):
    """Nova's ``name``; with ``count`` servers, the last one's ``NAME-COUNT`` fits too."""
    types.check_name('name', name)
    if count > 1 and len(name) + len('-%d' % count) > types.MAX_LENGTH:
        raise types.invalid('name', name, 'With the suffix -%d of the last of %d servers its '
                            'name would be %d characters long, more than the maximum of %d.'
                            % (count, count, len(name) + len('-%d' % count),
                               types.MAX_LENGTH))
    return name


# -- scheduler hints ------------------------------------------------------------------------

def _single(field, value):
    """The one value of a hint that takes one, given alone or as a one-element list."""
    if isinstance(value, list):
        if len(value) != 1:
            raise types.invalid(field, value, 'Is a list of %d values; this hint takes one.'
                                % len(value))
        return value[0]
    return value


def _uuids(field, value):
    values = value if isinstance(value, list) else [value]
    return [types.check_uuid(field, item) for item in values]


def _query(field, value):
    value = _single(field, value)
    if isinstance(value, dict):
        value = jsonutils.dumps(value)  # Nova takes an object; the filter reads its JSON
    types.check_string(field, value)
    try:
        jsonutils.loads(value)
    except ValueError as exc:
        raise types.invalid(field, value, 'Is not valid JSON: %s.' % exc)
    return [value]


def _cidr(field, value):
    value = types.check_string(field, _single(field, value))
    if not _CIDR.fullmatch(value):
        raise types.invalid(field, value, "Is not of the form '/PREFIX' (a slash then a "
                            "prefix length or mask, e.g. '/24').")
    return [value]


def _strings(field, value):
    values = value if isinstance(value, list) else [value]
    return [types.check_string(field, item) for item in values]


def _storable(field, value):
    """Any hint the request spec can hold: strings, numbers or booleans, or lists of them
    (kept as strings, as the request spec's field converts them)."""
    for item in value if isinstance(value, list) else [value]:
        if not isinstance(item, _SCALARS):
            raise types.invalid(field, value, 'Holds a value of type %s; a hint holds strings,'
                                ' numbers or booleans, or a list of them.'
                                % type(item).__name__)
    return [str(item) for item in (value if isinstance(value, list) else [value])]


_HINTS = {
    'group': _uuids,
    'same_host': _uuids,
    'different_host': _uuids,
    'query': _query,
    'target_cell': lambda field, value: [types.check_name(field, _single(field, value))],
    'different_cell': _strings,
    'build_near_host_ip': lambda field, value: [
        types.check_ip_address(field, _single(field, value))],
    'cidr': _cidr,
}


def check_scheduler_hints(hints):
    """``hints`` in the request spec's form (``{name: [str, ...]}``), once valid."""
    if hints is None:
        return {}
    if not isinstance(hints, dict):
        raise types.invalid('scheduler_hints', hints, 'Is of type %s, not an object (a dict).'
                            % type(hints).__name__)
    result = {}
    for name, value in hints.items():
        if not isinstance(name, str):
            raise types.invalid('scheduler_hints', name, 'A hint name is of type %s, not a '
                                'string.' % type(name).__name__)
        check = _HINTS.get(name, _storable)
        result[name] = check('scheduler_hints.%s' % name, value)
    return result


# -- the request ----------------------------------------------------------------------------

def check_counts(max_count, min_count=None):
    """``(min_count, max_count)`` as Nova's API reads them: positive integers, ``min_count``
    (default: ``max_count``, all or nothing) at most ``max_count``."""
    count = check_count('num_instances', max_count)
    if min_count is None:
        return count, count
    least = check_count('min_count', min_count)
    if least > count:
        raise types.invalid('min_count', min_count, 'min_count must be <= max_count (%d).'
                            % count)
    return least, count


def validate_create(name=None, availability_zone=None, scheduler_hints=None, metadata=None,
                    num_instances=1, min_count=None):
    """The CreateRequest of these arguments, once each passes its rule (ValidationError
    for the first that does not). None leaves a name or a zone unset; ``num_instances`` is
    Nova's ``max_count``."""
    least, count = check_counts(num_instances, min_count)
    if name is not None:
        check_server_name(name, count)
    if availability_zone is not None:
        types.check_name('availability_zone', availability_zone)
    return CreateRequest(
        name, availability_zone, check_scheduler_hints(scheduler_hints),
        dict(types.check_metadata('metadata', metadata, METADATA_ITEMS)), count, least)
