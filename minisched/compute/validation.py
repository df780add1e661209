"""Whether a build's arguments have the right types, and its records fit their columns.

``compute.api`` validates requests at the edge (``minisched.api.validation``), but the
conductor's ``schedule_and_build_instances`` and ``build_instances`` take messages from any
client on the bus. Before the conductor writes an instance, an action or a fault, it checks
here that its arguments are the objects they should be and that every value fits the column
it goes to, whatever the database: SQLite keeps any string, PostgreSQL and MySQL refuse (or,
MySQL without strict mode, cut) one longer than its column, PostgreSQL refuses a NUL
character, and MySQL's ``utf8`` columns (three bytes per character) refuse characters
beyond U+FFFF. Integer columns hold 32 bits.

The columns are read from the table definitions (``minisched.db.main.models``), so a new or
resized column is checked without a change here. Refusals are ValidationErrors naming the
field, the column and what does not fit; ``fit_instance`` and ``fit_context`` then make
what a refused build still has to write (its ERROR record in cell0) fit.
"""
import copy

import sqlalchemy as sa

from minisched.api.validation import parameter_types as types
from minisched.db.main import models
from minisched.objects import build_request as build_request_obj
from minisched.objects import instance as instance_obj
from minisched.objects import request_spec as request_spec_obj
from minisched.objects import selection as selection_obj

_INT_MIN, _INT_MAX = -2 ** 31, 2 ** 31 - 1
#: Request spec fields that become the instance's (or the scheduler compares with them).
_SPEC_FIELDS = {'instance_uuid': 'uuid', 'availability_zone': 'availability_zone',
                'project_id': 'project_id', 'user_id': 'user_id'}
#: What an instance action records of the context that asked for the build.
_CONTEXT_FIELDS = ('request_id', 'user_id', 'project_id')


# -- columns --------------------------------------------------------------------------------

def _unstorable(char):
    return char == '\x00' or ord(char) > 0xFFFF


def column_problem(column, value):
    """Why ``value`` does not fit ``column`` (a sentence), or None when it does."""
    where = '%s.%s' % (column.table.name, column.name)
    if value is None:
        return None
    if isinstance(column.type, sa.String) and column.type.length:
        if not isinstance(value, str):
            return 'Is of type %s, not a string (column %s).' % (type(value).__name__, where)
        if len(value) > column.type.length:
            return ('Is %d characters long, more than the %d of column %s.'
                    % (len(value), column.type.length, where))
        bad = next((char for char in value if _unstorable(char)), None)
        if bad is not None:
            return ('Contains U+%04X, which column %s cannot hold on every database '
                    '(PostgreSQL refuses NUL, a utf8 MySQL column characters beyond U+FFFF).'
                    % (ord(bad), where))
    elif isinstance(column.type, sa.Integer):
        if not isinstance(value, int):  # a bool is one (``cleaned`` is kept as 0 or 1)
            return 'Is of type %s, not an integer (column %s).' % (type(value).__name__,
                                                                    where)
        if not _INT_MIN <= value <= _INT_MAX:
            return 'Is out of the 32-bit range of column %s.' % where
    return None


def _fitted(column, value):
    """``value`` made to fit ``column``: cut, without unstorable characters, or None."""
    if column_problem(column, value) is None:
        return value
    if isinstance(column.type, sa.String) and column.type.length:
        text = ''.join(char for char in str(value) if not _unstorable(char))
        return text[:column.type.length]
    return None


def _checked_columns(obj, table, names):
    """``(field, column)`` of the ``names`` (field: column name) set on ``obj``."""
    for field, column_name in names.items():
        if obj.obj_attr_is_set(field):
            yield field, table.c[column_name]


def _instance_columns():
    return {column.name: column.name for column in models.instances.columns
            if column.name in instance_obj.Instance.fields and
            isinstance(column.type, (sa.String, sa.Integer))}


def check_instance(instance, field_prefix=''):
    """Refuse (ValidationError) an instance with a value its ``instances`` column cannot
    hold; fields are named ``<field_prefix><field>``."""
    for field, column in _checked_columns(instance, models.instances, _instance_columns()):
        value = getattr(instance, field)
        problem = column_problem(column, value)
        if problem:
            raise types.invalid(field_prefix + field, value, problem)


def check_request_spec(spec):
    """Refuse a request spec whose zone, project, user or instance uuid the instance's
    columns cannot hold."""
    for field, column in _checked_columns(spec, models.instances, _SPEC_FIELDS):
        value = getattr(spec, field)
        problem = column_problem(column, value)
        if problem:
            raise types.invalid('request_spec.' + field, value, problem)


def check_context(context):
    """Refuse a context whose request id, user or project an instance action cannot hold."""
    for name in _CONTEXT_FIELDS:
        value = getattr(context, name, None)
        problem = column_problem(models.instance_actions.c[name], value)
        if problem:
            raise types.invalid('context.' + name, value, problem)


def fit_instance(instance):
    """Make each of ``instance``'s values fit its column (cut a string, drop characters no
    database holds, None for an integer out of range); returns the fields changed.

    For the ERROR record of a refused build: the fault says what was wrong.
    """
    changed = []
    for field, column in _checked_columns(instance, models.instances, _instance_columns()):
        value = getattr(instance, field)
        fitted = _fitted(column, value)
        if fitted != value and field != 'uuid':  # a uuid is not made up
            setattr(instance, field, fitted)
            changed.append(field)
    return changed


def recordable(instance):
    """Whether ``instance``'s uuid fits its column (nothing else can stand for it)."""
    return column_problem(models.instances.c.uuid, instance.uuid) is None


def fit_context(context):
    """``context``, or a copy whose request id, user and project fit an action's columns."""
    fitted = {name: _fitted(models.instance_actions.c[name], getattr(context, name, None))
              for name in _CONTEXT_FIELDS}
    if all(fitted[name] == getattr(context, name, None) for name in _CONTEXT_FIELDS):
        return context
    result = copy.copy(context)
    for name, value in fitted.items():
        setattr(result, name, value)
    return result


# -- RPC arguments --------------------------------------------------------------------------

def _refuse_type(field, value, expected):
    raise types.invalid(field, value, 'Is of type %s, not %s.' % (type(value).__name__,
                                                                  expected))


def _check_list(field, value, cls, count=None):
    if not isinstance(value, (list, tuple)):
        _refuse_type(field, value, 'a list of %s' % cls.obj_name())
    for index, item in enumerate(value):
        if not isinstance(item, cls):
            _refuse_type('%s[%d]' % (field, index), item, 'a %s' % cls.obj_name())
    if count is not None and len(value) != count:
        raise types.invalid(field, value, 'Has %d items for %d instances.'
                            % (len(value), count))


def _check_optional(field, value, expected, name):
    if value is not None and not isinstance(value, expected):
        _refuse_type(field, value, '%s or None' % name)


def check_build_requests(build_requests):
    """Refuse ``build_requests`` that are not a list of BuildRequests with an Instance."""
    _check_list('build_requests', build_requests, build_request_obj.BuildRequest)
    for index, build_request in enumerate(build_requests):
        for name, cls in (('instance_uuid', str), ('instance', instance_obj.Instance)):
            value = (getattr(build_request, name) if build_request.obj_attr_is_set(name)
                     else None)
            if not isinstance(value, cls):
                _refuse_type('build_requests[%d].%s' % (index, name), value,
                             'an Instance' if cls is not str else 'a UUID string')


def check_schedule_and_build(context, build_requests, request_specs, image):
    """Refuse ``schedule_and_build_instances`` arguments of the wrong type, or whose records
    would not fit their columns (``build_requests`` are checked already)."""
    _check_list('request_specs', request_specs, request_spec_obj.RequestSpec,
                count=len(build_requests))
    _check_optional('image', image, dict, 'a dict')
    check_context(context)
    for build_request, spec in zip(build_requests, request_specs):
        check_instance(build_request.instance)
        check_request_spec(spec)


def check_instances(instances):
    """Refuse ``instances`` that are not a non-empty list of Instances with a uuid."""
    _check_list('instances', instances, instance_obj.Instance)
    if not instances:
        raise types.invalid('instances', instances, 'Is empty.')
    for index, instance in enumerate(instances):
        uuid = instance.uuid if instance.obj_attr_is_set('uuid') else None
        if not isinstance(uuid, str):
            _refuse_type('instances[%d].uuid' % index, uuid, 'a UUID string')


def check_build_instances(context, instances, image, filter_properties, request_spec,
                          host_lists):
    """Refuse ``build_instances`` arguments of the wrong type, or whose instances would not
    fit their columns (``instances`` are checked already)."""
    _check_optional('image', image, dict, 'a dict')
    _check_optional('filter_properties', filter_properties, dict, 'a dict')
    if host_lists is None:
        if not isinstance(request_spec, request_spec_obj.RequestSpec):
            _refuse_type('request_spec', request_spec, 'a RequestSpec (needed to schedule)')
    else:
        _check_optional('request_spec', request_spec, request_spec_obj.RequestSpec,
                        'a RequestSpec')
        if not isinstance(host_lists, (list, tuple)) or len(host_lists) != len(instances):
            raise types.invalid('host_lists', host_lists, 'Is not a list of one host list '
                                'per instance (%d).' % len(instances))
        for index, host_list in enumerate(host_lists):
            _check_list('host_lists[%d]' % index, host_list, selection_obj.Selection)
    check_context(context)
    for instance in instances:
        check_instance(instance)
    if request_spec is not None:
        check_request_spec(request_spec)
