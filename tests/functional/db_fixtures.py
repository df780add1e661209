"""Throwaway databases for functional tests: a fresh, uniquely named database per request.

API (keep it this small):

``make_db(backend) -> (url, cleanup)``
    ``backend`` is one of ``BACKENDS``. Creates ``minisched_t_<hex>`` on the server (SQLite: a
    file in a new temp dir) and returns its SQLAlchemy URL and a function that drops it (safe to
    call twice). ``cleanup`` first calls ``minisched.db.engines.dispose_all()`` so no pooled
    connection of minisched keeps the database busy.

``throwaway_db`` (pytest fixture)
    The URL of a database dropped after the test. Choose the backend by indirect
    parametrization; without it the fixture uses SQLite::

        from tests.functional import db_fixtures

        throwaway_db = db_fixtures.throwaway_db  # expose the fixture to this module

        @pytest.mark.parametrize('throwaway_db', db_fixtures.SERVER_BACKENDS, indirect=True)
        def test_something(throwaway_db):
            migration.db_sync(throwaway_db, 'main')

Servers are reached through admin URLs (a user allowed to CREATE and DROP DATABASE), from
``MINISCHED_TEST_PG_URL`` (default ``postgresql+psycopg2://postgres@127.0.0.1:5432/test``) and
``MINISCHED_TEST_MYSQL_URL`` (default ``mysql+pymysql://root@127.0.0.1:3306/test``). When a
server cannot be reached the test is skipped with a loud reason, or failed if ``CI=true``.
"""
import os
import shutil
import tempfile
import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy import pool

from minisched.db import engines

BACKENDS = ('sqlite', 'postgresql', 'mysql')
SERVER_BACKENDS = ('postgresql', 'mysql')

ADMIN_URLS = {
    'postgresql': ('MINISCHED_TEST_PG_URL', 'postgresql+psycopg2://postgres@127.0.0.1:5432/test'),
    'mysql': ('MINISCHED_TEST_MYSQL_URL', 'mysql+pymysql://root@127.0.0.1:3306/test'),
}
CONNECT_TIMEOUT = 5
PREFIX = 'minisched_t_'


def admin_url(backend):
    variable, default = ADMIN_URLS[backend]
    return os.environ.get(variable) or default


def _unavailable(backend, error):
    variable = ADMIN_URLS[backend][0]
    url = sa.engine.make_url(admin_url(backend)).render_as_string(hide_password=True)
    message = ('*** %s server NOT AVAILABLE at %s (set %s): %s ***'
               % (backend, url, variable, str(error).strip().splitlines()[0]))
    if os.environ.get('CI', '').lower() == 'true':
        pytest.fail(message)
    pytest.skip(message)


def _sqlite_db():
    directory = tempfile.mkdtemp(prefix=PREFIX)
    url = 'sqlite:///%s' % os.path.join(directory, 'db.sqlite')

    def cleanup():
        engines.dispose_all()
        shutil.rmtree(directory, ignore_errors=True)
    return url, cleanup


def _create_statement(backend, name):
    if backend == 'mysql':
        return 'CREATE DATABASE `%s` CHARACTER SET utf8mb4' % name
    return 'CREATE DATABASE "%s"' % name


def _drop(conn, backend, name):
    if backend == 'postgresql':
        conn.execute(sa.text('SELECT pg_terminate_backend(pid) FROM pg_stat_activity '
                             'WHERE datname = :name AND pid <> pg_backend_pid()'),
                     {'name': name})
        conn.execute(sa.text('DROP DATABASE IF EXISTS "%s"' % name))
    else:
        conn.execute(sa.text('DROP DATABASE IF EXISTS `%s`' % name))


def _server_db(backend):
    name = PREFIX + uuid.uuid4().hex[:16]
    admin = sa.create_engine(admin_url(backend), isolation_level='AUTOCOMMIT',
                             poolclass=pool.NullPool,
                             connect_args={'connect_timeout': CONNECT_TIMEOUT})
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(_create_statement(backend, name)))
    except sa.exc.OperationalError as error:
        admin.dispose()
        _unavailable(backend, error)
    url = admin.url.set(database=name).render_as_string(hide_password=False)

    def cleanup():
        engines.dispose_all()
        with admin.connect() as conn:
            _drop(conn, backend, name)
    return url, cleanup


def make_db(backend):
    """Create a throwaway database on ``backend``; returns ``(url, cleanup)``."""
    if backend not in BACKENDS:
        raise ValueError('backend must be one of %s, not %r' % (BACKENDS, backend))
    return _sqlite_db() if backend == 'sqlite' else _server_db(backend)


@pytest.fixture
def throwaway_db(request):
    """URL of a fresh database on ``request.param`` (default SQLite), dropped afterwards."""
    url, cleanup = make_db(getattr(request, 'param', 'sqlite'))
    request.addfinalizer(cleanup)
    return url
