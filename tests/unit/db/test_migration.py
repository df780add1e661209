"""migration: db_sync/db_version on SQLite, and migrations matching the models."""
import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from minisched.db import engines, migration, revisions, utils
from minisched.db.api import models as api_models
from minisched.db.main import models as main_models
from tests.unit.db.conftest import make_conf

MODELS = {'main': main_models.metadata, 'api': api_models.metadata}


def _head(database):
    return ScriptDirectory.from_config(migration.alembic_config(database)).get_current_head()


def schema_diff(url, database):
    """Differences between the models and what the migrations built at ``url``."""
    options = {'version_table': migration.DATABASES[database]['version_table'],
               'include_object': lambda obj, name, type_, reflected, other: (
                   type_ != 'table' or name in MODELS[database].tables)}
    with engines.engine_for_url(url).connect() as conn:
        return compare_metadata(MigrationContext.configure(conn, opts=options), MODELS[database])


@pytest.mark.parametrize('database', ['main', 'api'])
def test_db_sync_is_idempotent(tmp_path, database):
    url = 'sqlite:///%s/%s.sqlite' % (tmp_path, database)
    assert migration.db_version(url, database) is None
    migration.db_sync(url, database)
    assert migration.db_version(url, database) == _head(database)
    migration.db_sync(url, database)
    assert migration.db_version(url, database) == _head(database)
    tables = set(sa.inspect(engines.engine_for_url(url)).get_table_names())
    assert set(MODELS[database].tables) <= tables


@pytest.mark.parametrize('database', ['main', 'api'])
def test_revisions_read_without_alembic_agree_with_alembic(tmp_path, database):
    scripts = ScriptDirectory.from_config(migration.alembic_config(database))
    assert revisions.known(database) == (
        _head(database), {script.revision for script in scripts.walk_revisions()})
    url = 'sqlite:///%s/%s.sqlite' % (tmp_path, database)
    engine = engines.engine_for_url(url)
    head = _head(database)
    assert revisions.status(engine, database) == (None, head, True)
    first = list(scripts.walk_revisions())[-1].revision  # walked newest first
    migration.db_sync(url, database, version=first)
    assert revisions.status(engine, database) == (first, head, True)
    migration.db_sync(url, database)
    assert revisions.status(engine, database) == (head, head, True)
    assert migration.db_version(url, database) == head
    table = migration.DATABASES[database]['version_table']
    with engine.begin() as conn:
        conn.execute(sa.text('UPDATE %s SET version_num = :v' % table), {'v': 'f' * 12})
    assert revisions.status(engine, database) == ('f' * 12, head, False)


def test_revisions_refuse_scripts_that_are_not_one_line(tmp_path, monkeypatch):
    versions = tmp_path / 'versions'
    versions.mkdir()
    (versions / '0001_a.py').write_text("revision = 'a'\ndown_revision = None\n")
    (versions / '0002_b.py').write_text("revision = 'b'\ndown_revision = 'a'\n")
    monkeypatch.setitem(revisions.DATABASES, 'test', {'location': str(tmp_path),
                                                      'version_table': 'v'})
    revisions.known.cache_clear()
    assert revisions.known('test') == ('b', {'a', 'b'})
    (versions / '0003_c.py').write_text("revision = 'c'\ndown_revision = 'a'\n")  # a branch
    revisions.known.cache_clear()
    with pytest.raises(RuntimeError, match='not one line'):
        revisions.known('test')
    revisions.known.cache_clear()


@pytest.mark.parametrize('database', ['main', 'api'])
def test_migrations_match_models(tmp_path, database):
    url = 'sqlite:///%s/%s.sqlite' % (tmp_path, database)
    migration.db_sync(url, database)
    assert schema_diff(url, database) == []


def test_db_sync_uses_configured_urls(tmp_path):
    engines.configure(make_conf(tmp_path))
    migration.db_sync()
    migration.db_sync(database='api')
    assert migration.db_version() == _head('main')
    assert migration.db_version(database='api') == _head('api')
    assert (tmp_path / 'minisched.sqlite').exists()
    assert (tmp_path / 'minisched_api.sqlite').exists()


def test_both_schemas_can_share_one_database(tmp_path):
    url = 'sqlite:///%s/shared.sqlite' % tmp_path
    migration.db_sync(url, 'main')
    assert migration.db_version(url, 'api') is None
    migration.db_sync(url, 'api')
    assert (migration.db_version(url, 'main'), migration.db_version(url, 'api')) == (
        _head('main'), _head('api'))


def test_unknown_database(tmp_path):
    with pytest.raises(ValueError):
        migration.db_sync('sqlite:///%s/x.sqlite' % tmp_path, 'cell0')


def test_unique_constraints_follow_oslo_naming():
    for metadata in MODELS.values():
        for table in metadata.tables.values():
            for constraint in table.constraints:
                if isinstance(constraint, sa.UniqueConstraint):
                    columns = [column.name for column in constraint.columns]
                    assert constraint.name == utils.unique_name(table.name, *columns)
