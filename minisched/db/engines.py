"""Which database engine a DB call uses, and whether this process may touch a database at all.

Decisions:

* ``configure(conf)`` records the two URLs: ``[database] connection`` (this cell, "main") and
  ``[api_database] connection`` (the API database). An unset URL means an SQLite file under
  ``state_path`` (``minisched.sqlite`` / ``minisched_api.sqlite``); that directory is created.
* ``main_engine(context)`` follows ``context.db_connection`` when ``target_cell`` set it, else
  the configured main URL. ``api_engine()`` always uses the API URL.
* Engines are cached per URL and created on first use, by
  ``oslo_db.sqlalchemy.engines.create_engine``: it sets MySQL's sql_mode, checks connections out
  with a ping (reconnecting after a server restart) and discards connections inherited across a
  fork. Pool options come from the group the URL belongs to (``[database]`` for cells,
  ``[api_database]`` for the API database). SQLite gets foreign keys enforced, like the servers.
* ``block_db_access(binary)`` makes every later engine request raise ``DBNotAllowed``; the first
  offending call stack is logged. Computes use it: they reach the database through the conductor.
* ``startup_engine(url)`` is a throwaway engine for the services' start-up check of their
  database (``minisched.cmd.common.check_database``), which waits and logs on its own.
* ``dispose_all()`` drops every cached engine; in a forked child it leaves the parent's sockets
  open (only the pool bookkeeping is reset).
* A connection error is marked with the database it concerns (``database_of(error)``): "the
  API database", "the database of cell1" (``name_database``, called by ``target_cell``), so
  that a build failed by an outage can say which database stayed away.
"""
import logging
import os
import threading
import traceback

from minisched.conf import database as db_conf
from minisched import exception
from minisched.db import lazy
from minisched.messaging import trace
from minisched.messaging import trace_db

# On first use: a compute calls configure() and block_db_access() and never makes an engine.
oslo_engines = lazy.module('oslo_db.sqlalchemy.engines')
sa = lazy.module('sqlalchemy')

LOG = logging.getLogger(__name__)

MAIN = 'main'
API = 'api'

#: Engine options used until ``configure()`` is called (URLs given explicitly, e.g. by tests).
#: ``thread_checkin`` off: oslo.db's sleep(0) on every connection check-in costs milliseconds
#: on a busy machine and the scheduler checks in twice per refresh.
_DEFAULT_OPTIONS = {'sqlite_fk': True, 'mysql_sql_mode': 'TRADITIONAL', 'thread_checkin': False}

_POOL_OPTIONS = ('sqlite_synchronous', 'max_pool_size', 'max_overflow', 'pool_timeout',
                 'connection_recycle_time', 'max_retries', 'retry_interval',
                 'connection_debug', 'connection_trace', 'connection_parameters')
_QUEUE_POOL_OPTIONS = ('max_pool_size', 'max_overflow', 'pool_timeout')

_lock = threading.Lock()
_urls = {MAIN: None, API: None}
_options = {MAIN: dict(_DEFAULT_OPTIONS), API: dict(_DEFAULT_OPTIONS)}
_engines = {}        # url -> (engine, pid of the process that created it)
_blocked = {'binary': None, 'logged': False}


def _sqlite_default(state_path, filename):
    os.makedirs(state_path, exist_ok=True)
    return 'sqlite:///%s' % os.path.join(state_path, filename)


def _group_options(group, mysql_sql_mode):
    options = dict(_DEFAULT_OPTIONS, mysql_sql_mode=mysql_sql_mode)
    for name in _POOL_OPTIONS:
        if name in group:
            options[name] = group[name]
    return options


def configure(conf):
    """Remember both URLs and their engine options from ``conf`` (an oslo.config ConfigOpts)."""
    main_url = conf.database.connection or _sqlite_default(conf.state_path, db_conf.MAIN_SQLITE)
    api_url = (conf.api_database.connection
               or _sqlite_default(conf.state_path, db_conf.API_SQLITE))
    sql_mode = conf.database.mysql_sql_mode
    with _lock:
        _urls.update({MAIN: main_url, API: api_url})
        _options[MAIN] = _group_options(conf.database, sql_mode)
        _options[API] = _group_options(conf.api_database, sql_mode)


def configured_url(database):
    """The URL ``configure()`` recorded for ``database`` ('main' or 'api')."""
    url = _urls[database]
    if url is None:
        raise exception.ConfigInvalid(
            reason='minisched.db.engines.configure() was not called; no %s database URL'
            % database)
    return url


#: Where each database's URL is configured, for messages.
OPTIONS = {MAIN: '[database] connection', API: '[api_database] connection'}


def url_problem(url):
    """Why SQLAlchemy could not use ``url`` (unparsable, unknown dialect or driver, the
    driver not installed, a port that is not a number), or None; the URL is not in it."""
    try:
        dialect = sa.make_url(url).get_dialect()  # a bad port fails here too
        dialect.import_dbapi()  # the driver module: psycopg2, pymysql, sqlite3...
    except (sa.exc.ArgumentError, ImportError, ValueError) as exc:
        return exception.first_line(exc)
    return None


def configured_url_problems():
    """``['invalid value for <option>: <why>']`` for each configured URL SQLAlchemy could
    not use (see :func:`url_problem`); empty when both are usable."""
    return ['invalid value for %s: %s' % (OPTIONS[database], problem)
            for database in (MAIN, API)
            for problem in [url_problem(configured_url(database))] if problem]


def check_allowed():
    """Raise DBNotAllowed in a process that ``block_db_access`` closed to databases."""
    binary = _blocked['binary']
    if binary is None:
        return
    if not _blocked['logged']:
        _blocked['logged'] = True
        LOG.error('No DB access allowed in %s; first attempt from:\n%s',
                  binary, ''.join(traceback.format_stack()[:-2]))
    raise exception.DBNotAllowed(binary=binary)


#: Seconds to wait for a database server to accept a connection before giving up.
CONNECT_TIMEOUT = 10


def _engine_options(url, database):
    options = dict(_options[database])
    parsed = sa.make_url(url)
    if parsed.get_backend_name() == 'sqlite':
        # SQLite files get a NullPool, which rejects queue-pool arguments (oslo.db only
        # removes max_pool_size and max_overflow, not pool_timeout).
        for name in _QUEUE_POOL_OPTIONS:
            options.pop(name, None)
    elif 'connect_timeout' not in parsed.query:
        # A cell whose server is down must fail a query quickly, not hang the scheduler.
        params = options.get('connection_parameters') or ''
        options['connection_parameters'] = '&'.join(
            p for p in (params, 'connect_timeout=%d' % CONNECT_TIMEOUT) if p)
    if url not in _urls.values():
        # Other cells' databases: no blocking connection test at creation; a cell that is
        # down shows up as an error of the query that needed it.
        options['max_retries'] = 0
    return options


def engine_for_url(url, database=MAIN):
    """The cached engine of ``url``, created with ``database``'s options on first use."""
    check_allowed()
    with _lock:
        cached = _engines.get(url)
        if cached is None:
            engine = oslo_engines.create_engine(url, **_engine_options(url, database))
            _mark_errors(engine, url, database)
            if engine.dialect.name == 'sqlite':
                _pool_sqlite_file(engine)
                _harden_sqlite(engine)
            if trace.ENABLED:
                trace_db.watch_engine(engine)
            cached = _engines[url] = (engine, os.getpid())
    return cached[0]


#: url -> how messages name its database (``name_database``).
_names = {}


def name_database(url, name):
    """Name the database of ``url`` in the errors of its connections (a cell's, say)."""
    if _names.get(url) != name:
        _names[url] = name


def database_of(error):
    """The name of the database ``error`` (or what it wraps) came from, or None."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        name = getattr(error, 'minisched_database', None)
        if name:
            return name
        error = (getattr(error, 'inner_exception', None) or getattr(error, 'orig', None)
                 or error.__cause__)
    return None


def _mark_errors(engine, url, database):
    """Mark the errors of ``engine``'s connections with the name of its database.

    A failed connect is marked where the driver raises it (``do_connect``): oslo.db's error
    filter re-raises the connect errors it does not recognise, which ends SQLAlchemy's
    ``handle_error`` chain before a later listener; the errors of a live connection are
    marked by ``handle_error``.
    """
    def mark(error):
        try:
            error.minisched_database = _names.get(url) or (
                'the API database' if database == API else 'the cell database')
        except AttributeError:  # an exception class without a __dict__
            pass

    @sa.event.listens_for(engine, 'do_connect')
    def _connect(dialect, connection_record, cargs, cparams):
        try:
            return dialect.connect(*cargs, **cparams)
        except Exception as exc:
            mark(exc)
            raise

    @sa.event.listens_for(engine, 'handle_error')
    def _failed(context):
        mark(context.original_exception)


def startup_engine(url, database=MAIN):
    """A fresh engine of ``url`` with ``database``'s options, for a start-up check: not
    cached, and without oslo.db's connection test at creation (``max_retries`` times,
    ``retry_interval`` apart, each with a line of its own), so that the caller alone decides
    how long to wait and what to log. The caller disposes of it."""
    check_allowed()
    return oslo_engines.create_engine(url, **dict(_engine_options(url, database),
                                                  max_retries=0))


#: Idle SQLite connections kept per engine (and how many more may be open at once).
SQLITE_POOL_SIZE = 5
SQLITE_POOL_OVERFLOW = 20


def _pool_sqlite_file(engine):
    """Keep connections to a SQLite file open between uses.

    oslo.db gives file databases a NullPool: every query then opens the file, sets its pragmas,
    parses the schema and starts with a cold page cache, about 0.5 ms per query, which was most
    of the scheduler's per-request refresh. A QueuePool keeps them (sqlite3 connections of file
    databases are not bound to a thread). A connection is dropped and replaced when the path no
    longer names the file it opened (moved, replaced or removed), as a fresh connection would
    see it.
    """
    path = engine.url.database
    if path in (None, '', ':memory:') or not isinstance(engine.pool, sa.pool.NullPool):
        return
    old = engine.pool
    engine.pool = sa.pool.QueuePool(
        old._creator, pool_size=SQLITE_POOL_SIZE, max_overflow=SQLITE_POOL_OVERFLOW,
        recycle=old._recycle, echo=old.echo, logging_name=old._orig_logging_name,
        reset_on_return=old._reset_on_return, pre_ping=False,  # a file cannot hang up
        _dispatch=old.dispatch, dialect=old._dialect)

    @sa.event.listens_for(engine, 'connect')
    def _remember_file(dbapi_connection, connection_record):
        connection_record.info['sqlite_file'] = _file_identity(path)

    @sa.event.listens_for(engine, 'checkout')
    def _same_file(dbapi_connection, connection_record, connection_proxy):
        if connection_record.info.get('sqlite_file') != _file_identity(path):
            raise sa.exc.DisconnectionError('SQLite file %s was moved or replaced' % path)


def _file_identity(path):
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


#: Seconds a SQLite connection waits for another process's lock before giving up.
SQLITE_BUSY_TIMEOUT_MS = 30000


def _harden_sqlite(engine):
    """Make the embedded SQLite default safe for several service processes at once.

    WAL lets readers (the scheduler) run while a writer (the conductor) commits, and waiting
    writers queue for up to ``SQLITE_BUSY_TIMEOUT_MS``. What a busy timeout cannot cure (a
    read-then-write transaction whose snapshot another writer made stale gets "database is
    locked" at once) is retried whole by ``minisched.db.utils.writer``.
    """
    @sa.event.listens_for(engine, 'connect')
    def _on_connect(dbapi_connection, connection_record):
        cursor = dbapi_connection.cursor()
        if engine.url.database not in (None, '', ':memory:'):
            cursor.execute('PRAGMA journal_mode=WAL')
            cursor.execute('PRAGMA synchronous=NORMAL')  # durable at checkpoints, in WAL
        cursor.execute('PRAGMA busy_timeout=%d' % SQLITE_BUSY_TIMEOUT_MS)
        cursor.close()


def main_url(context=None):
    """URL of the cell database ``context`` targets (``context.db_connection``), else main."""
    return getattr(context, 'db_connection', None) or configured_url(MAIN)


def main_engine(context=None):
    """Engine of the cell database ``context`` targets (``context.db_connection``), else main."""
    return engine_for_url(main_url(context), MAIN)


def api_engine():
    """Engine of the API database."""
    return engine_for_url(configured_url(API), API)


def block_db_access(binary):
    """Forbid database access in this process from now on (``DBNotAllowed(binary=...)``)."""
    dispose_all()
    _blocked.update(binary=binary, logged=False)


def unblock_db_access():
    """Undo ``block_db_access`` (for tests)."""
    _blocked.update(binary=None, logged=False)


def dispose_all():
    """Forget every cached engine, closing its pooled connections if this process opened them.

    Call it in a child right after a fork (the parent's connections are then left alone) and
    in tests before dropping a database.
    """
    with _lock:
        cached = list(_engines.values())
        _engines.clear()
    for engine, pid in cached:
        engine.dispose(close=(pid == os.getpid()))
