"""Request context: who is asking, carried across RPC as ``_context_*`` keys (oslo.context),
and what the database API lets each kind of context reach (Nova's authorization rules).

An admin context reaches every row. A user context (not admin, with a user and a project)
reaches its own project's instances and their records, and no admin-only writes. Any other
context (not admin, without a user or a project: anonymous) reaches nothing that checks.
``None`` is not a request: only an in-process caller passes it, never the message bus, whose
contexts are always deserialized into a :class:`RequestContext`; it is not checked.
"""
import contextlib
import copy
import datetime
import functools

from oslo_context import context
from oslo_utils import timeutils

from minisched import exception

#: Values of ``read_deleted``: hide soft-deleted rows, show them too, or show only them.
READ_DELETED = ('no', 'yes', 'only')


class RequestContext(context.RequestContext):
    """Security context and request information, Nova's fields on top of oslo.context's."""

    def __init__(self, user_id=None, project_id=None, is_admin=None, read_deleted='no',
                 remote_address=None, timestamp=None, quota_class=None, user_name=None,
                 project_name=None, service_catalog=None, **kwargs):
        kwargs.setdefault('user_id', user_id)
        kwargs.setdefault('project_id', project_id)
        for legacy in ('user', 'tenant'):
            kwargs.pop(legacy, None)
        # Checked before oslo.context's __init__, which makes this context the thread's
        # current one (read by every log line): a half-made one would break the logging of
        # the very error that stopped it.
        _check_read_deleted(read_deleted)
        if timestamp is None:
            timestamp = timeutils.utcnow()
        elif isinstance(timestamp, str):
            timestamp = parse_timestamp(timestamp)
        super().__init__(is_admin=bool(is_admin), **kwargs)
        self.read_deleted = read_deleted
        self.remote_address = remote_address
        self.timestamp = timestamp
        self.quota_class = quota_class
        self.user_name = user_name
        self.project_name = project_name
        self.service_catalog = service_catalog or []
        #: Set by ``target_cell``: the cell this context's DB calls go to (None: [database]),
        #: and its message bus when it has one of its own (RPC clients follow it).
        self.cell_uuid = None
        self.db_connection = None
        self.transport_url = None

    @property
    def read_deleted(self):
        return self._read_deleted

    @read_deleted.setter
    def read_deleted(self, value):
        _check_read_deleted(value)
        self._read_deleted = value

    def to_dict(self):
        values = super().to_dict()
        values.update({
            'user_id': self.user_id, 'project_id': self.project_id,
            'read_deleted': self.read_deleted, 'remote_address': self.remote_address,
            'timestamp': self.timestamp.strftime(timeutils.PERFECT_TIME_FORMAT),
            'quota_class': self.quota_class, 'user_name': self.user_name,
            'service_catalog': self.service_catalog, 'project_name': self.project_name,
        })
        return values

    @classmethod
    def from_dict(cls, values):
        """The context ``values`` (from :meth:`to_dict`, or the message bus) describe.

        Every known field must have its type (see ``FIELD_TYPES``): ``"is_admin": "false"``
        would be admin if it were read as ``bool()`` reads it, so a value of another type is
        refused with :class:`~minisched.exception.InvalidContext`, naming the field, as is a
        ``read_deleted`` or a ``timestamp`` that does not read. Unknown keys are ignored, as
        oslo.context does.
        """
        if not isinstance(values, dict):
            raise exception.InvalidContext(reason='a context is a mapping, not a %s'
                                           % type(values).__name__)
        kwargs = {k: v for k, v in values.items() if k in FIELD_TYPES}
        for name, value in kwargs.items():
            check_field(name, value)
        if kwargs.get('read_deleted', 'no') not in READ_DELETED:
            raise exception.InvalidContext(reason='read_deleted is %s, not one of %s' % (
                _short(kwargs['read_deleted']), ', '.join(READ_DELETED)))
        if kwargs.get('timestamp') is not None:
            try:
                kwargs['timestamp'] = parse_timestamp(kwargs['timestamp'])
            except ValueError:
                raise exception.InvalidContext(reason='timestamp %s is not a date and time'
                                               % _short(kwargs['timestamp'])) from None
        kwargs.setdefault('user_id', values.get('user'))
        kwargs.setdefault('project_id', values.get('tenant'))
        return cls(**kwargs)

    def elevated(self, read_deleted=None):
        """A copy that is admin (with the ``admin`` role); this context is left unchanged."""
        ctx = copy.copy(self)
        ctx.roles = list(ctx.roles) + ([] if 'admin' in ctx.roles else ['admin'])
        ctx.is_admin = True
        if read_deleted is not None:
            ctx.read_deleted = read_deleted
        return ctx


def _check_read_deleted(value):
    if value not in READ_DELETED:
        raise ValueError("read_deleted can only be one of 'no', 'yes' or 'only', not %r"
                         % (value,))


_TEXT = (str, type(None))
#: The type of each field a serialized context may carry; any other key is ignored.
#: ``roles`` is a list of strings and ``read_deleted`` one of READ_DELETED (its setter checks).
FIELD_TYPES = {
    'is_admin': (bool, type(None)), 'read_only': (bool,), 'show_deleted': (bool,),
    'is_admin_project': (bool,), 'roles': (list,), 'service_catalog': (list, type(None)),
    'read_deleted': (str,), 'timestamp': _TEXT,
    **dict.fromkeys((
        'user_id', 'project_id', 'user', 'tenant', 'remote_address', 'quota_class',
        'user_name', 'project_name', 'auth_token', 'request_id', 'global_request_id',
        'domain_id', 'user_domain_id', 'project_domain_id', 'resource_uuid',
        'system_scope'), _TEXT),
}


def check_field(name, value):
    """Raise InvalidContext unless ``value`` has the type of context field ``name``."""
    types = FIELD_TYPES[name]
    if not isinstance(value, types):
        expected = ' or '.join('null' if t is type(None) else t.__name__ for t in types)
        raise exception.InvalidContext(reason='%s is a %s (%s), not a %s' % (
            name, type(value).__name__, _short(value), expected))
    if name == 'roles' and not all(isinstance(role, str) for role in value):
        raise exception.InvalidContext(reason='roles is not a list of strings')


def _short(value, limit=40):
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + '...'


#: A timestamp as :meth:`RequestContext.to_dict` writes it (``PERFECT_TIME_FORMAT``), and the
#: positions of its separators: a string of that length with those separators is that form.
_WRITTEN = datetime.datetime(2000, 1, 1).strftime(timeutils.PERFECT_TIME_FORMAT)
_WRITTEN_SEPARATORS = tuple((i, c) for i, c in enumerate(_WRITTEN) if not c.isdigit())


def parse_timestamp(value):
    """A context's ``timestamp`` string as a naive datetime, as ``parse_isotime`` reads it.

    Every RPC message carries one. The form :meth:`RequestContext.to_dict` writes is read by
    the standard library's ``fromisoformat`` (0.3 us) instead of oslo.utils' regular
    expression (9 us, half of decoding a context); any other form takes oslo.utils' path,
    so what it accepts and rejects is unchanged (``fromisoformat`` alone would take ISO week
    dates, which oslo.utils refuses). An offset is dropped, not applied, as before.
    """
    if len(value) == len(_WRITTEN) and all(value[i] == c for i, c in _WRITTEN_SEPARATORS):
        try:
            return datetime.datetime.fromisoformat(value).replace(tzinfo=None)
        except ValueError:
            pass  # oslo.utils' message for it
    return timeutils.parse_isotime(value).replace(tzinfo=None)


def get_admin_context(read_deleted='no'):
    return RequestContext(user_id=None, project_id=None, is_admin=True,
                          read_deleted=read_deleted, overwrite=False)


def get_context():
    """A blank non-admin context with no user (Nova's): anonymous, so the database API refuses
    it wherever it checks. A service acting for itself uses :func:`get_admin_context`."""
    return RequestContext(user_id=None, project_id=None, is_admin=False, overwrite=False)


# -- authorization: Nova's rules, checked by the database API -----------------------------------

def is_user_context(context):
    """True for a user's request: not admin, and with both a user and a project."""
    if not context or context.is_admin:
        return False
    return bool(context.user_id and context.project_id)


def require_context(context):
    """Raise Forbidden unless ``context`` is admin or a user's (an anonymous one is not)."""
    if context is not None and not context.is_admin and not is_user_context(context):
        raise exception.Forbidden()


def require_admin_context(context):
    """Raise AdminRequired unless ``context`` is admin."""
    if context is not None and not context.is_admin:
        raise exception.AdminRequired()


def authorize_project_context(context, project_id):
    """Raise Forbidden when a user's context acts for a project that is not its own."""
    if is_user_context(context) and context.project_id != project_id:
        raise exception.Forbidden()


def authorize_user_context(context, user_id):
    """Raise Forbidden when a user's context acts for a user that is not itself."""
    if is_user_context(context) and context.user_id != user_id:
        raise exception.Forbidden()


def checked(check):
    """Decorator: ``check(context)`` on the first argument before the function runs.

    ``@checked(require_context)`` is Nova's ``@require_context`` of its database API.
    """
    def decorate(func):
        @functools.wraps(func)
        def wrapper(context, *args, **kwargs):
            check(context)
            return func(context, *args, **kwargs)
        return wrapper
    return decorate


def hide(error):
    """Mark ``error``, a NotFound, as hiding a row of another project from a user's context.

    The caller gets the NotFound alone, exactly as when there is no such row (Nova's
    project-scoped reads answer so); the mark is an attribute, which RPC does not carry, so
    that the conductor can log the refusal. Call it before the ``raise``, not inside it: the
    traceback, which RPC does carry, must be the same either way.
    """
    error.hides_row = True
    return error


def is_refusal(error):
    """Whether ``error`` refused its context: Forbidden, or a NotFound marked by :func:`hide`."""
    return isinstance(error, exception.Forbidden) or getattr(error, 'hides_row', False)


@contextlib.contextmanager
def target_cell(context, cell_mapping):
    """Yield a copy of ``context`` whose DB calls go to ``cell_mapping``'s database.

    ``cell_mapping`` None targets the configured ``[database]`` (the single-cell default).
    """
    cctxt = copy.copy(context)
    if cell_mapping is not None:
        from minisched.db import engines  # imported when first needed, as before
        cctxt.cell_uuid = cell_mapping.uuid
        url = cell_mapping.database_connection
        if url and '{' in url:
            # A template (Nova's cell URL templates): fill it from this host's own URL.
            from minisched.objects import cell_mapping as cell_mapping_obj
            url = cell_mapping_obj.format_url(url, engines.configured_url(engines.MAIN))
        if url:  # errors of its connections name the cell
            name = cell_mapping.name if 'name' in cell_mapping else None
            engines.name_database(url, 'the database of cell %s' % (name or cell_mapping.uuid))
        cctxt.db_connection = url
        from minisched import rpc
        cctxt.transport_url = rpc.cell_bus_url(cell_mapping)
    yield cctxt
