"""engines: URL resolution, lazy cached engines, block_db_access, dispose_all."""
import logging
import os

from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa
from sqlalchemy.dialects.sqlite import pysqlite

from minisched import context as ms_context
from minisched import exception
from minisched.db import engines
from tests.unit.db.conftest import make_conf


def test_configure_defaults_to_sqlite_files_under_state_path(tmp_path):
    state_path = tmp_path / 'state' / 'deeper'
    engines.configure(make_conf(state_path))
    assert state_path.is_dir()
    assert engines.configured_url('main') == 'sqlite:///%s' % (state_path / 'minisched.sqlite')
    assert engines.configured_url('api') == 'sqlite:///%s' % (
        state_path / 'minisched_api.sqlite')
    assert engines._engines == {}  # nothing created, no connection opened


def test_configure_takes_explicit_urls(tmp_path):
    conf = make_conf(tmp_path / 'unused', connection='sqlite:///%s/cell.db' % tmp_path)
    # [api_database] is a module-level OptGroup: its overrides are seen by every ConfigOpts.
    conf.set_override('connection', 'sqlite:///%s/api.db' % tmp_path, group='api_database')
    try:
        engines.configure(conf)
    finally:
        conf.clear_override('connection', group='api_database')
    assert engines.configured_url('main') == 'sqlite:///%s/cell.db' % tmp_path
    assert engines.configured_url('api') == 'sqlite:///%s/api.db' % tmp_path
    assert not (tmp_path / 'unused').exists()


def test_unconfigured_raises():
    with pytest.raises(exception.ConfigInvalid):
        engines.api_engine()
    with pytest.raises(exception.ConfigInvalid):
        engines.main_engine(ms_context.get_admin_context())


def test_engines_are_cached_per_url_and_follow_target_cell(tmp_path):
    engines.configure(make_conf(tmp_path))
    ctx = ms_context.get_admin_context()
    main = engines.main_engine(ctx)
    assert engines.main_engine(ctx) is main
    assert engines.api_engine() is not main
    ctx.db_connection = 'sqlite:///%s/cell2.sqlite' % tmp_path
    cell2 = engines.main_engine(ctx)
    assert cell2 is not main and str(cell2.url).endswith('cell2.sqlite')
    assert engines.engine_for_url(ctx.db_connection) is cell2


def test_sqlite_enforces_foreign_keys(tmp_path):
    engine = engines.engine_for_url('sqlite:///%s/fk.sqlite' % tmp_path)
    with engine.begin() as conn:
        conn.execute(sa.text('CREATE TABLE parent (id INTEGER PRIMARY KEY)'))
        conn.execute(sa.text('CREATE TABLE child (id INTEGER PRIMARY KEY, '
                             'parent_id INTEGER REFERENCES parent(id))'))
    with pytest.raises(Exception, match='FOREIGN KEY'):
        with engine.begin() as conn:
            conn.execute(sa.text('INSERT INTO child (parent_id) VALUES (42)'))


def test_block_db_access(tmp_path, caplog):
    engines.configure(make_conf(tmp_path))
    engines.api_engine()
    engines.block_db_access('minisched-compute')
    assert engines._engines == {}
    with caplog.at_level(logging.ERROR, logger=engines.__name__):
        for _ in range(2):
            with pytest.raises(exception.DBNotAllowed, match='minisched-compute'):
                engines.main_engine(ms_context.get_admin_context())
        with pytest.raises(exception.DBNotAllowed):
            engines.api_engine()
    assert len(caplog.records) == 1
    assert 'test_block_db_access' in caplog.records[0].getMessage()  # the caller's stack
    assert engines._engines == {}
    engines.unblock_db_access()
    assert engines.api_engine() is not None


def test_dispose_all_forgets_engines(tmp_path):
    engines.configure(make_conf(tmp_path))
    first = engines.api_engine()
    engines.dispose_all()
    assert engines._engines == {}
    assert engines.api_engine() is not first


def test_dispose_all_in_forked_child_keeps_parent_connections(tmp_path, monkeypatch):
    engines.configure(make_conf(tmp_path))
    engine = engines.api_engine()
    calls = []
    monkeypatch.setattr(type(engine), 'dispose', lambda self, close=True: calls.append(close))
    monkeypatch.setattr(os, 'getpid', lambda: -1)
    engines.dispose_all()
    assert calls == [False]


def _value(engine):
    with engine.connect() as conn:
        return conn.execute(sa.text('SELECT v FROM t')).scalar()


def _make_file(path, value):
    with sa.create_engine('sqlite:///%s' % path, poolclass=sa.pool.NullPool).begin() as conn:
        conn.execute(sa.text('CREATE TABLE t (v INTEGER)'))
        conn.execute(sa.text('INSERT INTO t VALUES (%d)' % value))


def test_sqlite_file_connections_are_reused(tmp_path):
    _make_file(tmp_path / 'cell.db', 1)
    engine = engines.engine_for_url('sqlite:///%s' % (tmp_path / 'cell.db'))
    seen = set()
    for _ in range(3):
        with engine.connect() as conn:
            seen.add(id(conn.connection.dbapi_connection))
            assert conn.execute(sa.text('SELECT v FROM t')).scalar() == 1
    assert len(seen) == 1
    assert isinstance(engine.pool, sa.pool.QueuePool)


def test_sqlite_file_moved_or_replaced_is_reopened(tmp_path):
    path = tmp_path / 'cell.db'
    _make_file(path, 1)
    engine = engines.engine_for_url('sqlite:///%s' % path)
    assert _value(engine) == 1
    os.rename(path, tmp_path / 'moved.db')
    _make_file(path, 2)
    assert _value(engine) == 2  # a pooled connection would still read the moved file
    os.remove(path)
    with pytest.raises(db_exc.DBNonExistentTable):
        _value(engine)  # as a fresh connection sees a missing file: an empty database


class _DialectWithoutDriver(pysqlite.SQLiteDialect_pysqlite):
    """A dialect whose driver module is not installed (as mysql+mysqldb without
    mysqlclient): registered below as ``sqlite+nodriver``."""

    @classmethod
    def import_dbapi(cls):
        import minisched_no_such_driver  # noqa: F401
        return minisched_no_such_driver


sa.dialects.registry.register('sqlite.nodriver', __name__, '_DialectWithoutDriver')


@pytest.mark.parametrize('url, problem', [
    ('sqlite:////tmp/x.sqlite', None),
    ('postgresql+psycopg2://u:secret@host/db', None),
    ('mysql+pymysql://u:secret@host/db', None),
    ('nosuchdb://u:secret@host/db', "Can't load plugin: sqlalchemy.dialects:nosuchdb"),
    ('mysql+nosuchdriver://u:secret@host/db',
     "Can't load plugin: sqlalchemy.dialects:mysql.nosuchdriver"),
    ('sqlite+nodriver://u:secret@host/db', "No module named 'minisched_no_such_driver'"),
    ('postgresql://u:secret@host:fivefour/db', "invalid literal for int() with base 10: "
                                               "'fivefour'"),
    ('not a url', 'Could not parse SQLAlchemy URL from given URL string'),
])
def test_url_problem_says_why_without_the_url(url, problem):
    assert engines.url_problem(url) == problem
    assert 'secret' not in (problem or '')


def test_configured_url_problems_name_the_option(tmp_path):
    conf = make_conf(tmp_path)
    conf.set_override('connection', 'nosuchdb://host/db', group='api_database')
    try:
        engines.configure(conf)
        assert engines.configured_url_problems() == [
            "invalid value for [api_database] connection: Can't load plugin: "
            "sqlalchemy.dialects:nosuchdb"]
    finally:
        conf.clear_override('connection', group='api_database')


def test_startup_engine_is_not_cached_and_skips_oslo_db_connection_test(tmp_path, monkeypatch):
    engines.configure(make_conf(tmp_path))
    url = engines.configured_url('main')
    seen = {}
    real = engines.oslo_engines.create_engine

    def create_engine(sql_connection, **options):
        seen.update(options)
        return real(sql_connection, **options)
    monkeypatch.setattr(engines.oslo_engines, 'create_engine', create_engine)
    engine = engines.startup_engine(url)
    try:
        assert seen['max_retries'] == 0  # no oslo.db retries, nor its lines: the caller waits
        assert engines._engines == {}
        with engine.connect() as conn:
            assert conn.execute(sa.text('SELECT 1')).scalar() == 1
    finally:
        engine.dispose()
