"""Throwaway databases for the benches: an SQLite file, or a PostgreSQL database when reachable.

Both schemas (cell and API) go into the one database. PostgreSQL is reached through an admin
URL (``MINISCHED_BENCH_PG_URL``, else ``MINISCHED_TEST_PG_URL``, else
``postgresql+psycopg2://postgres@127.0.0.1:5432/test``); the bench database is dropped after.
"""
import contextlib
import os
import shutil
import tempfile
import uuid

from benchmarks import common

PG_DEFAULT = 'postgresql+psycopg2://postgres@127.0.0.1:5432/test'


def pg_admin_url():
    return (os.environ.get('MINISCHED_BENCH_PG_URL') or os.environ.get('MINISCHED_TEST_PG_URL')
            or PG_DEFAULT)


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


def pg_reachable():
    """``(True, '')`` when the PostgreSQL admin URL accepts a connection, else (False, why)."""
    import sqlalchemy as sa
    from sqlalchemy import pool
    try:
        engine = sa.create_engine(pg_admin_url(), poolclass=pool.NullPool,
                                  connect_args={'connect_timeout': 3})
        with engine.connect():
            pass
        engine.dispose()
        return True, ''
    except Exception as exc:  # driver missing, refused, auth...
        return False, str(exc).strip().splitlines()[0]


@contextlib.contextmanager
def postgres_db():
    """URL of a new, migrated PostgreSQL database (dropped after)."""
    import sqlalchemy as sa
    from sqlalchemy import pool
    admin = sa.engine.make_url(pg_admin_url())
    name = 'minisched_bench_%d_%s' % (os.getpid(), uuid.uuid4().hex[:8])
    engine = sa.create_engine(admin, poolclass=pool.NullPool, isolation_level='AUTOCOMMIT')
    with engine.connect() as conn:
        conn.execute(sa.text('CREATE DATABASE "%s"' % name))
    url = admin.set(database=name).render_as_string(hide_password=False)
    try:
        sync(url)
        yield url
    finally:
        _dispose()
        with engine.connect() as conn:
            conn.execute(sa.text('DROP DATABASE IF EXISTS "%s" WITH (FORCE)' % name))
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
