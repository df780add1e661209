"""Which database errors are transient, and what the conductor does when one interrupts it.

A transient error passes by itself: the connection was refused or lost (the server restarted,
a network cut, a failover), the server is out of connections, a transaction lost a deadlock
or a lock wait. Running the same work again once the database is back is correct. Anything
else (a constraint, a missing table or column, bad SQL) is a bug or a setup problem that a
retry would only delay.

What counts, from the most to the least explicit (the exception, its oslo.db
``inner_exception``, SQLAlchemy's ``orig`` and its ``__cause__`` are all looked at):

* oslo.db's ``DBConnectionError`` and ``DBDeadlock`` (``DBConsistencyError`` included);
  SQLAlchemy's ``DisconnectionError``, pool ``TimeoutError`` and any DB-API error it marked
  ``connection_invalidated``; minisched's own ``DBTransientError`` (from another conductor);
* the driver's own error, when oslo.db passed an ``OperationalError`` through unwrapped (it
  does for every one it does not recognise, e.g. libpq 14's "connection to server ... failed"):
  SQLite "database is locked" and the like; PostgreSQL (psycopg2) errors without an SQLSTATE
  (the client lost or could not open its connection) or of the classes 08 (connection), 40
  (rollback: deadlock, serialization), 53 (insufficient resources), 57 (operator
  intervention: shutdown, cancelled) and 55P03 (lock not available); MySQL and MariaDB
  (PyMySQL, mysqlclient) errors numbered in ``MYSQL_TRANSIENT``;
* an ``OperationalError`` of any other driver (PEP 249: "errors related to the database's
  operation and not necessarily under the control of the programmer").

The conductor answers a transient error of a remoted object method with ``DBTransientError``
(see ``minisched.conductor.manager``), which computes retry as they retry a conductor that
does not answer; and it runs again a build task whose handler one interrupted
(:class:`ComputeTaskManager`): those handlers are written to be delivered more than once.
"""
import collections
import logging
import threading
import time

from oslo_db import exception as db_exc
from oslo_utils import timeutils
from sqlalchemy import exc as sa_exc

from minisched.conductor import compute_task
from minisched.db import engines
from minisched import exception
from minisched.objects import base as objects_base
from minisched import utils

LOG = logging.getLogger(__name__)

#: MySQL/MariaDB error numbers that pass by themselves: too many connections (1040), server
#: shutdown in progress (1053), lock wait timeout (1205), deadlock (1213), query interrupted
#: (1317), Galera node not ready (1047), connection killed (1927), idle client disconnected
#: (4031), and the client's can't connect (2002, 2003), server gone away (2006), lost
#: connection (2013, 2055).
MYSQL_TRANSIENT = frozenset((1040, 1047, 1053, 1205, 1213, 1317, 1927, 2002, 2003, 2006, 2013,
                             2055, 4031))
#: SQLSTATE classes of PostgreSQL errors that pass by themselves, and single codes.
PG_TRANSIENT_CLASSES = frozenset(('08', '40', '53', '57'))
PG_TRANSIENT_CODES = frozenset(('55P03',))
#: Substrings of SQLite's transient OperationalError messages.
SQLITE_TRANSIENT = ('database is locked', 'database table is locked', 'database is busy',
                    'disk i/o error')

_EXPLICIT = (db_exc.DBConnectionError, db_exc.DBDeadlock, sa_exc.DisconnectionError,
             sa_exc.TimeoutError, exception.DBTransientError)
#: oslo.db's verdicts that a retry cannot change, whatever the driver's error inside says
#: (SQLite's "unable to open database file" is a DBNonExistentDatabase, for one).
_PERMANENT = (db_exc.DBDuplicateEntry, db_exc.DBConstraintError, db_exc.DBReferenceError,
              db_exc.DBNonExistentConstraint, db_exc.DBNonExistentTable,
              db_exc.DBNonExistentDatabase, db_exc.DBDataError, db_exc.DBNotSupportedError,
              db_exc.DBMigrationError, db_exc.DBInvalidUnicodeParameter)
#: What a build task's arguments are kept as, for a run again.
_SERIALIZER = objects_base.MinischedObjectSerializer()


def is_transient(error):
    """Whether ``error`` (or what caused it) is a database error that passes by itself."""
    for cause in _causes(error):
        if isinstance(cause, _PERMANENT):
            return False
        if _transient(cause):
            return True
    return False


def reason(error):
    """One line naming the database error behind ``error``, for logs and DBTransientError:
    no SQL statement and no parameters (SQLAlchemy puts them on later lines)."""
    line = exception.first_line(error)
    return ('%s: %s' % (type(error).__name__, line))[:200]


def _causes(error):
    """``error``, then what it wraps and what caused it (outermost first)."""
    seen = set()
    pending = collections.deque([error])
    while pending:
        current = pending.popleft()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        pending.extend((getattr(current, 'inner_exception', None),
                        getattr(current, 'orig', None), current.__cause__))


def _transient(error):
    if isinstance(error, _EXPLICIT):
        return True
    if isinstance(error, sa_exc.DBAPIError):
        # What the driver raised is judged below (it is ``orig``); a generic one otherwise.
        return error.connection_invalidated or (
            isinstance(error, sa_exc.OperationalError) and _driver(error.orig) is None)
    driver = _driver(error)
    if driver == 'sqlite':
        return (_named(error, 'OperationalError') and
                any(text in str(error).lower() for text in SQLITE_TRANSIENT))
    if driver == 'postgresql':
        code = getattr(error, 'pgcode', None)
        if code is None:  # the client's own: no connection, or it was lost
            return _named(error, 'OperationalError', 'InterfaceError')
        return code[:2] in PG_TRANSIENT_CLASSES or code in PG_TRANSIENT_CODES
    if driver == 'mysql':
        if _named(error, 'InterfaceError'):  # PyMySQL's "(0, '')": the connection is closed
            return True
        number = error.args[0] if error.args else None
        return isinstance(number, int) and number in MYSQL_TRANSIENT
    return False


def _driver(error):
    """'sqlite', 'postgresql', 'mysql' for an exception of one of their DB-API drivers."""
    module = (type(error).__module__ or '').split('.')[0]
    return {'sqlite3': 'sqlite', 'psycopg2': 'postgresql', 'psycopg': 'postgresql',
            'pymysql': 'mysql', 'MySQLdb': 'mysql'}.get(module)


def _named(error, *names):
    return any(cls.__name__ in names for cls in type(error).__mro__)


# -- build tasks interrupted by the database ------------------------------------------------

def _uuids_of(items, attr):
    """The uuids of ``items`` for log lines; whatever a malformed message holds instead (the
    handler's own checks refuse it, with a precise reason)."""
    if not isinstance(items, (list, tuple)):
        return [repr(items)[:60]]
    return [str(getattr(item, attr, '?')) for item in items]


#: ``deadline``: when the outermost build task running in this thread stops retrying (a
#: task run inside another, as adopting orphans runs build_instances, shares its bound).
_retrying = threading.local()


def database_named(error):
    """The database ``error`` came from, capitalized for a message ("The API database")."""
    name = engines.database_of(error) or 'a database'
    return name[0].upper() + name[1:]


class _GaveUp(Exception):
    """A build task run inside another gave up on the database (``failure``): the other
    gives up too, without running again."""

    def __init__(self, failure):
        super().__init__(str(failure))
        self.failure = failure


class ComputeTaskManager(compute_task.ComputeTaskManager):
    """The ``compute_task`` endpoint, running a build task again after a transient error.

    A cast is acknowledged once its handler has run (on receipt without the admission,
    ``minisched.messaging.admission``), failed or not: a handler that fails would lose its build
    request (the instance would never be created, or never built). The handlers are idempotent,
    since RabbitMQ may deliver a message twice (build requests already taken are skipped,
    instances are created once, the cell mapping is taken conditionally), so running one
    again is a second delivery. It starts from a copy of the arguments as they arrived,
    with backoff, for up to ``[conductor] db_retry_timeout_seconds`` from the start of the
    task. A task run inside another (``build_instances`` for the instances an interrupted
    delivery placed) retries within the same bound, and its transient errors are never its
    builds' failure (``compute_task._unless_transient``). At the bound, the builds of each
    task end in ERROR with a fault naming the database that stayed away, where it can be
    written; the stuck-build check (``minisched.conductor.stuck_builds``) ends the others.
    """

    def schedule_and_build_instances(self, context, build_requests, request_specs, *args,
                                     **kwargs):
        uuids = _uuids_of(request_specs, 'instance_uuid')
        return self._until_done(super().schedule_and_build_instances, self._bury_pending,
                                uuids, context, build_requests, request_specs, *args,
                                **kwargs)

    def build_instances(self, context, instances, *args, **kwargs):
        return self._until_done(super().build_instances, self._fail_instances,
                                _uuids_of(instances, 'uuid'), context, instances, *args,
                                **kwargs)

    def _until_done(self, handler, give_up, uuids, context, *args, **kwargs):
        # Handlers change what they are given (instances get ids, retry counts grow): a run
        # after the first starts from the arguments as they arrived, kept as primitives. A
        # deep copy for every run cost each build a millisecond of the conductor's CPU; the
        # primitives cost a seventh of that, and only a run again decodes them.
        pristine = _SERIALIZER.serialize_entity(context, (args, kwargs))
        runs = []

        def run():
            runs.append(1)
            if len(runs) == 1:
                return handler(context, *args, **kwargs)
            run_args, run_kwargs = _SERIALIZER.deserialize_entity(context, pristine)
            # What the failed run placed is this delivery's to finish (compute_task.again).
            with compute_task.run_again():
                return handler(context, *run_args, **run_kwargs)
        outer = getattr(_retrying, 'deadline', None)
        bound = self.conf.conductor.db_retry_timeout_seconds
        deadline = outer if outer is not None else time.monotonic() + bound
        _retrying.deadline = deadline
        try:
            return utils.until_done(
                run, is_transient, max(0.0, deadline - time.monotonic()),
                lambda exc, delay: 'Database unavailable while building %s (%s); running '
                                   'the task again in %d s.' % (', '.join(uuids), reason(exc),
                                                                delay),
                log=LOG)
        except _GaveUp as exc:  # a task run inside this one reached the common bound
            failure = exc.failure
        except Exception as exc:
            if not is_transient(exc):
                raise
            failure = exc
        finally:
            _retrying.deadline = outer
        error = exception.DatabaseUnavailable(database=database_named(failure), seconds=bound,
                                              reason=reason(failure))
        LOG.error('Giving up building %s: %s', ', '.join(uuids), error.format_message())
        run_args, run_kwargs = _SERIALIZER.deserialize_entity(context, pristine)
        try:
            give_up(context, error, *run_args, **run_kwargs)
        except Exception as exc:  # the database that holds their records is away too
            LOG.error('Could not record the failure of %s (%s); the stuck-build check will '
                      'end them.', ', '.join(uuids), reason(exc))
        if outer is not None:
            raise _GaveUp(failure)  # the task this one runs in gives up too, at once

    def _bury_pending(self, context, error, build_requests, request_specs, *args, **kwargs):
        """ERROR in cell0, with ``error``, for the builds whose build request is left."""
        pending, _gone = self._still_pending(context, build_requests, request_specs)
        if pending:
            self._bury_in_cell0(context, request_specs[0], error,
                                [pair[0] for pair in pending], timeutils.utcnow())

    def _fail_instances(self, context, error, instances, *args, **kwargs):
        for instance in instances:
            self._set_error(instance._context or context, instance, error, 'build_instances')
