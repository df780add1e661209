"""The database side of :mod:`minisched.messaging.trace`: statements, transactions and pool
checkouts of an engine, recorded in the ``db`` and ``transactions`` sections of its files.

:mod:`minisched.db.engines` calls :func:`watch_engine` on each engine it makes while tracing.
"""
import re
import time

from minisched.messaging import trace

_VERB = re.compile(r'\s*(\w+)')
_TABLES = {'SELECT': re.compile(r'\bFROM\s+"?(\w+)', re.IGNORECASE),
           'DELETE': re.compile(r'\bFROM\s+"?(\w+)', re.IGNORECASE),
           'INSERT': re.compile(r'\bINTO\s+"?(\w+)', re.IGNORECASE),
           'UPDATE': re.compile(r'^\s*UPDATE\s+"?(\w+)', re.IGNORECASE)}
_kinds = {}
_MAX_KINDS = 4096


def statement_kind(statement):
    """``<VERB> <first table>`` of an SQL statement (``SELECT instances``), else its verb."""
    kind = _kinds.get(statement)
    if kind is None:
        match = _VERB.match(statement)
        verb = match.group(1).upper() if match else '?'
        pattern = _TABLES.get(verb)
        table = pattern.search(statement) if pattern else None
        kind = '%s %s' % (verb, table.group(1).lower()) if table else verb
        if len(_kinds) >= _MAX_KINDS:
            _kinds.clear()
        _kinds[statement] = kind
    return kind


def watch_engine(engine):
    """Record the statements, transactions and pool checkouts of ``engine``."""
    from sqlalchemy import event
    for name, hook in (('before_cursor_execute', _before_execute),
                       ('after_cursor_execute', _after_execute), ('handle_error', _db_error),
                       ('begin', _begin), ('commit', _commit), ('rollback', _rollback),
                       ('checkout', _checkout), ('connect', _connect)):
        if not event.contains(engine, name, hook):
            event.listen(engine, name, hook)


# The hooks stay on a cached engine after disable(): each one checks trace.ENABLED first.

def _before_execute(conn, cursor, statement, parameters, context, executemany):
    if trace.ENABLED:
        conn.info['trace_t0'] = time.perf_counter()


def _after_execute(conn, cursor, statement, parameters, context, executemany):
    started = conn.info.pop('trace_t0', None)
    if started is None:
        return
    trace._ensure_writer()
    kind = statement_kind(statement) + (' [many]' if executemany else '')
    trace._record('db', trace._attribution() + (kind,)).add(time.perf_counter() - started)


def _db_error(exception_context):
    conn = exception_context.connection
    started = conn.info.pop('trace_t0', None) if conn is not None else None
    statement = exception_context.statement
    if started is None or not statement:
        return
    record = trace._record('db', trace._attribution() + (statement_kind(statement),))
    record.add(time.perf_counter() - started, failed=True)


def _begin(conn):
    if not trace.ENABLED:
        return
    conn.info['trace_begin'] = time.perf_counter()
    trace._ensure_writer()
    trace._record('transactions', trace._attribution()).begins += 1


def _end(conn, field):
    if not trace.ENABLED:
        return
    record = trace._record('transactions', trace._attribution())
    setattr(record, field, getattr(record, field) + 1)
    started = conn.info.pop('trace_begin', None)
    if started is not None:
        record.total += time.perf_counter() - started


def _commit(conn):
    _end(conn, 'commits')


def _rollback(conn):
    _end(conn, 'rollbacks')


def _checkout(dbapi_connection, connection_record, connection_proxy):
    if trace.ENABLED:
        trace._record('transactions', trace._attribution()).checkouts += 1


def _connect(dbapi_connection, connection_record):
    if trace.ENABLED:
        trace._record('transactions', trace._attribution()).connects += 1
