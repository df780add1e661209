"""Which database errors are transient: real SQLite errors through oslo.db's engine, the
PostgreSQL and MySQL drivers' own exception classes, oslo.db's and SQLAlchemy's wrappers."""
import os
import shutil
import sqlite3
import tempfile
from unittest import mock

from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import engines as oslo_engines
import psycopg2
import pymysql
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from minisched.conductor import db_errors
from minisched import exception
from minisched import objects
from minisched import utils
from tests.unit import base


def _wrapped(orig, cls=sa_exc.OperationalError, **kwargs):
    """``orig`` as SQLAlchemy hands a driver's error on (statement and parameters kept)."""
    return cls('SELECT secret FROM t WHERE x = %(x)s', {'x': 'hidden'}, orig, **kwargs)


def _pg_error(base_class, code):
    """A psycopg2 error carrying ``code`` (psycopg2 sets pgcode only for server errors)."""
    return type('PgError', (base_class,), {'pgcode': code, '__module__': 'psycopg2.errors'})()


class TestRealSqliteErrors(base.TestCase):
    """What oslo.db's engine raises for real SQLite failures."""

    def setUp(self):
        super().setUp()
        self.dir = tempfile.mkdtemp(prefix='minisched-db-errors-')
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.path = os.path.join(self.dir, 'db.sqlite')
        self.engine = self._engine('sqlite:///%s' % self.path)
        with self.engine.begin() as conn:
            conn.execute(sa.text('CREATE TABLE t (a INTEGER)'))

    def _engine(self, url):
        engine = oslo_engines.create_engine(url, max_retries=0,
                                            connection_parameters='timeout=0')
        self.addCleanup(engine.dispose)
        return engine

    def _error(self, sql, engine=None):
        with self.assertRaises(Exception) as caught:
            with (engine or self.engine).connect() as conn:
                conn.execute(sa.text(sql))
        return caught.exception

    def test_database_is_locked_is_transient(self):
        holder = sqlite3.connect(self.path, isolation_level=None)
        self.addCleanup(holder.close)
        holder.execute('BEGIN EXCLUSIVE')
        error = self._error('SELECT a FROM t')
        self.assertIn('database is locked', str(error))
        self.assertTrue(db_errors.is_transient(error))

    def test_missing_column_or_table_is_not_transient(self):
        for sql in ('SELECT b FROM t', 'SELECT a FROM nosuch', 'SELEC 1'):
            error = self._error(sql)
            self.assertFalse(db_errors.is_transient(error), repr(error))

    def test_missing_database_file_is_not_transient(self):
        # oslo.db's DBNonExistentDatabase, though the driver's message could be transient.
        engine = self._engine('sqlite:///%s' % os.path.join(self.dir, 'no', 'db.sqlite'))
        error = self._error('SELECT 1', engine)
        self.assertIsInstance(error, db_exc.DBNonExistentDatabase)
        self.assertFalse(db_errors.is_transient(error))

    def test_duplicate_is_not_transient(self):
        with self.engine.begin() as conn:
            conn.execute(sa.text('CREATE UNIQUE INDEX u ON t (a)'))
            conn.execute(sa.text('INSERT INTO t VALUES (1)'))
        error = self._error('INSERT INTO t VALUES (1)')
        self.assertIsInstance(error, db_exc.DBDuplicateEntry)
        self.assertFalse(db_errors.is_transient(error))


class TestDriverErrors(base.TestCase):

    def test_oslo_db_connection_and_deadlock_errors(self):
        for error in (db_exc.DBConnectionError(), db_exc.DBDeadlock(),
                      db_exc.DBConsistencyError(), exception.DBTransientError(reason='x')):
            self.assertTrue(db_errors.is_transient(error), error)
        for error in (db_exc.DBError(), db_exc.DBReferenceError('t', 'c', 'k', 'r'),
                      db_exc.DBDataError(), ValueError('x'), exception.InstanceNotFound(
                          instance_id='x')):
            self.assertFalse(db_errors.is_transient(error), error)

    def test_sqlalchemy_disconnects_and_pool_timeouts(self):
        self.assertTrue(db_errors.is_transient(sa_exc.DisconnectionError('gone')))
        self.assertTrue(db_errors.is_transient(sa_exc.TimeoutError('QueuePool limit')))
        invalidated = _wrapped(Exception('reset'), cls=sa_exc.InterfaceError,
                               connection_invalidated=True)
        self.assertTrue(db_errors.is_transient(invalidated))
        self.assertFalse(db_errors.is_transient(_wrapped(Exception('x'),
                                                         cls=sa_exc.IntegrityError)))

    def test_postgresql_connection_errors_without_sqlstate(self):
        # libpq 14+ words a refused connection so that oslo.db passes it through unwrapped.
        refused = psycopg2.OperationalError(
            'connection to server at "127.0.0.1", port 5432 failed: Connection refused')
        for error in (refused, _wrapped(refused), db_exc.DBError(_wrapped(refused)),
                      psycopg2.InterfaceError('connection already closed')):
            self.assertTrue(db_errors.is_transient(error), repr(error))

    def test_postgresql_errors_by_sqlstate(self):
        for code in ('08006', '40001', '40P01', '53300', '57P01', '57014', '55P03'):
            self.assertTrue(db_errors.is_transient(_wrapped(
                _pg_error(psycopg2.OperationalError, code))), code)
        for code in ('42703', '42P01', '23505', '22001', '54000'):
            self.assertFalse(db_errors.is_transient(_wrapped(
                _pg_error(psycopg2.DatabaseError, code))), code)
        self.assertFalse(db_errors.is_transient(psycopg2.ProgrammingError('syntax')))

    def test_mysql_errors_by_number(self):
        for number in (2003, 2006, 2013, 1205, 1213, 1040, 1927, 4031):
            error = pymysql.err.OperationalError(number, 'message')
            self.assertTrue(db_errors.is_transient(_wrapped(error)), number)
        self.assertTrue(db_errors.is_transient(pymysql.err.InterfaceError(0, '')))
        # PyMySQL makes every unmapped server error >= 1000 an OperationalError.
        for number in (1054, 1146, 1045, 1062):
            error = pymysql.err.OperationalError(number, 'message')
            self.assertFalse(db_errors.is_transient(_wrapped(error)), number)

    def test_operational_error_of_another_driver_is_transient(self):
        other = type('OperationalError', (Exception,), {'__module__': 'otherdb'})('lost')
        self.assertTrue(db_errors.is_transient(_wrapped(other)))
        self.assertFalse(db_errors.is_transient(_wrapped(other, cls=sa_exc.ProgrammingError)))

    def test_cause_chain_is_followed(self):
        try:
            try:
                raise db_exc.DBConnectionError()
            except db_exc.DBConnectionError as inner:
                raise RuntimeError('while saving') from inner
        except RuntimeError as outer:
            self.assertTrue(db_errors.is_transient(outer))

    def test_reason_is_one_line_without_the_statement(self):
        error = _wrapped(psycopg2.OperationalError('server closed the connection\nmore'))
        text = db_errors.reason(error)
        self.assertTrue(text.startswith('OperationalError: (psycopg2.OperationalError) '
                                        'server closed the connection'), text)
        self.assertNotIn('secret', text)
        self.assertNotIn('hidden', text)


class FakeClock:
    """``time`` for code that sleeps: sleeping moves ``monotonic()`` on at once."""

    def __init__(self):
        self.now = 0.0
        self.sleeps = []

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


class TestComputeTaskRetry(base.TestCase):
    """A build task a transient error interrupted runs again, from its arguments as given."""

    HANDLER = 'minisched.conductor.compute_task.ComputeTaskManager.build_instances'

    def setUp(self):
        super().setUp()
        self.use_fake_transport()
        self.flags(db_retry_timeout_seconds=60, group='conductor')
        self.manager = db_errors.ComputeTaskManager(self.conf, 'conductor1')
        self.clock = FakeClock()
        for module in (utils, db_errors):
            patcher = mock.patch.object(module, 'time', self.clock)
            patcher.start()
            self.addCleanup(patcher.stop)

    def test_transient_failure_runs_the_task_again_with_fresh_arguments(self):
        seen = []

        def handler(context, instances, *args, **kwargs):
            seen.append([(i.uuid, i.obj_attr_is_set('host')) for i in instances])
            instances[0].host = 'changed by the failed run'
            if len(seen) < 3:
                raise db_exc.DBConnectionError()
        with mock.patch(self.HANDLER, side_effect=handler):
            self.manager.build_instances(None, [objects.Instance(uuid=base.uuids.i1)],
                                         image={})
        self.assertEqual([[(base.uuids.i1, False)]] * 3, seen)
        self.assertEqual([1, 2], self.clock.sleeps)

    def test_other_failures_are_raised(self):
        with mock.patch(self.HANDLER, side_effect=ValueError('bug')) as handler:
            self.assertRaises(ValueError, self.manager.build_instances, None, [], image={})
        self.assertEqual(1, handler.call_count)

    def test_exhausted_retries_end_the_builds_naming_the_database(self):
        self.flags(db_retry_timeout_seconds=20, group='conductor')
        error = sa_exc.OperationalError('SELECT 1', {}, psycopg2.OperationalError('refused'))
        error.orig.minisched_database = 'the database of cell cell1'
        instance = objects.Instance(uuid=base.uuids.i1)
        with mock.patch(self.HANDLER, side_effect=error) as handler, \
                mock.patch.object(self.manager, '_set_error') as set_error:
            self.manager.build_instances(None, [instance], image={})
        # runs at 0, 1, 3 and 7 s; the next would start after the 20 s bound
        self.assertEqual([1, 2, 4, 8], self.clock.sleeps)
        self.assertEqual(5, handler.call_count)
        (_ctx, failed, fault, method), _kw = set_error.call_args
        self.assertEqual((base.uuids.i1, 'build_instances'), (failed.uuid, method))
        self.assertIsInstance(fault, exception.DatabaseUnavailable)
        self.assertEqual('The database of cell cell1 was unavailable for 20 seconds: '
                         'OperationalError: (psycopg2.OperationalError) refused',
                         fault.format_message())

    def test_a_task_run_inside_another_shares_its_bound(self):
        """build_instances run by a schedule_and_build_instances (adopting orphans) retries
        until the outer task's deadline, not a deadline of its own, then both give up."""
        self.flags(db_retry_timeout_seconds=20, group='conductor')
        inner_runs = []

        def inner(context, instances, *args, **kwargs):
            inner_runs.append(self.clock.now)
            raise db_exc.DBConnectionError()

        def outer(context, build_requests, request_specs, *args, **kwargs):
            self.clock.sleep(10)  # the outer task's own work before it adopts
            self.manager.build_instances(None, [objects.Instance(uuid=base.uuids.i1)],
                                         image={})
        with mock.patch(self.HANDLER, side_effect=inner), \
                mock.patch('minisched.conductor.compute_task.ComputeTaskManager.'
                           'schedule_and_build_instances', side_effect=outer) as handler, \
                mock.patch.object(self.manager, '_set_error') as set_error, \
                mock.patch.object(self.manager, '_bury_pending') as bury:
            self.manager.schedule_and_build_instances(None, [], [], image={})
        self.assertEqual([10, 11, 13, 17], inner_runs)  # then 25 > 20: the shared bound
        self.assertEqual(1, handler.call_count)
        self.assertEqual(1, set_error.call_count)
        self.assertEqual(1, bury.call_count)
