"""Throwaway databases for the benches: an SQLite file, or a PostgreSQL or MySQL/MariaDB
database when its server is reachable.

Both schemas (cell and API) go into the one database. A server is reached through an admin URL
(PostgreSQL: ``MINISCHED_BENCH_PG_URL``, else ``MINISCHED_TEST_PG_URL``, else
``postgresql+psycopg2://postgres@127.0.0.1:5432/test``; MySQL: ``MINISCHED_BENCH_MYSQL_URL``,
else ``MINISCHED_TEST_MYSQL_URL``, else ``mysql+pymysql://root@127.0.0.1:3306/test``); the
bench database is dropped after.
"""
import contextlib
import os
import shutil
import tempfile
import uuid

from benchmarks import common

#: backend -> (environment variables, in order, then the default admin URL).
ADMIN_URLS = {
    'postgresql': (('MINISCHED_BENCH_PG_URL', 'MINISCHED_TEST_PG_URL'),
                   'postgresql+psycopg2://postgres@127.0.0.1:5432/test'),
    'mysql': (('MINISCHED_BENCH_MYSQL_URL', 'MINISCHED_TEST_MYSQL_URL'),
              'mysql+pymysql://root@127.0.0.1:3306/test'),
}
SERVER_BACKENDS = tuple(ADMIN_URLS)


def admin_url(backend):
    variables, default = ADMIN_URLS[backend]
    return next((os.environ[v] for v in variables if os.environ.get(v)), default)


def sync(url):
    """Create both schemas at ``url``."""
    from minisched.db import migration
    migration.db_sync(url, 'api')
    migration.db_sync(url, 'main')


@contextlib.contextmanager
def sqlite_db(directory=None):
    """URL of a new, migrated SQLite file (removed after)."""
    own = directory is None
    directory = directory or tempfile.mkdtemp(prefix='minisched-bench-')
    url = 'sqlite:///%s' % os.path.join(directory, 'bench-%s.sqlite' % uuid.uuid4().hex[:8])
    sync(url)
    try:
        yield url
    finally:
        _dispose()
        if own:
            shutil.rmtree(directory, ignore_errors=True)
        else:
            os.unlink(url[len('sqlite:///'):])


def reachable(backend):
    """``(True, '')`` when ``backend``'s admin URL accepts a connection, else (False, why)."""
    import sqlalchemy as sa
    from sqlalchemy import pool
    try:
        engine = sa.create_engine(admin_url(backend), poolclass=pool.NullPool,
                                  connect_args={'connect_timeout': 3})
        with engine.connect():
            pass
        engine.dispose()
        return True, ''
    except Exception as exc:  # driver missing, refused, auth...
        return False, str(exc).strip().splitlines()[0]


@contextlib.contextmanager
def server_db(backend):
    """URL of a new, migrated database on ``backend``'s server (dropped after)."""
    import sqlalchemy as sa
    from sqlalchemy import pool
    admin = sa.engine.make_url(admin_url(backend))
    name = 'minisched_bench_%d_%s' % (os.getpid(), uuid.uuid4().hex[:8])
    engine = sa.create_engine(admin, poolclass=pool.NullPool, isolation_level='AUTOCOMMIT')
    quoted = engine.dialect.identifier_preparer.quote_identifier(name)
    create, drop = 'CREATE DATABASE %s' % quoted, 'DROP DATABASE IF EXISTS %s' % quoted
    if backend == 'mysql':
        create += ' CHARACTER SET utf8mb4'
    else:
        drop += ' WITH (FORCE)'
    with engine.connect() as conn:
        conn.execute(sa.text(create))
    url = admin.set(database=name).render_as_string(hide_password=False)
    try:
        sync(url)
        yield url
    finally:
        _dispose()
        with engine.connect() as conn:
            conn.execute(sa.text(drop))
        engine.dispose()


@contextlib.contextmanager
def in_use(conf, url, overrides=None):
    """This process's engines on ``url`` (cell and API database both) for the block, with
    ``overrides`` (``{group or None: {option: value}}``) on ``conf`` too; disposed after."""
    from minisched.db import engines
    values = {'database': {'connection': url}, 'api_database': {'connection': url}}
    for group, options in (overrides or {}).items():
        values.setdefault(group, {}).update(options)
    with common.overrides(conf, values):
        engines.dispose_all()
        engines.configure(conf)
        try:
            yield conf
        finally:
            engines.dispose_all()


def _dispose():
    from minisched.db import engines
    engines.dispose_all()
