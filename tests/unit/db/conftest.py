"""Fixtures of the DB unit tests: SQLite files in a temp dir, no server, no network.

Both databases are migrated once per session into template files; each test gets fresh copies
under its own ``state_path``, found there by ``engines.configure`` (no URL configured).
"""
import shutil

import pytest
from oslo_config import cfg

from minisched import context
from minisched.conf import database, default
from minisched.db import engines, migration


def make_conf(state_path, **database_overrides):
    conf = cfg.ConfigOpts()
    database.register_opts(conf)
    default.register_opts(conf)
    conf([], project='minisched-test', default_config_files=[], default_config_dirs=[])
    conf.set_override('state_path', str(state_path))
    for name, value in database_overrides.items():
        conf.set_override(name, value, group='database')
    return conf


@pytest.fixture(autouse=True)
def isolated_engines(monkeypatch):
    """Give each test its own engine registry; dispose what it created."""
    monkeypatch.setattr(engines, '_urls', {engines.MAIN: None, engines.API: None})
    monkeypatch.setattr(engines, '_options', {name: dict(engines._DEFAULT_OPTIONS)
                                              for name in (engines.MAIN, engines.API)})
    monkeypatch.setattr(engines, '_engines', {})
    monkeypatch.setattr(engines, '_blocked', {'binary': None, 'logged': False})
    yield
    engines.dispose_all()


@pytest.fixture(scope='session')
def migrated_templates(tmp_path_factory):
    root = tmp_path_factory.mktemp('db_templates')
    files = {'main': root / database.MAIN_SQLITE, 'api': root / database.API_SQLITE}
    for name, path in files.items():
        migration.db_sync('sqlite:///%s' % path, name)
    engines.dispose_all()
    return files


@pytest.fixture
def db(tmp_path, migrated_templates):
    """Both databases migrated and configured; returns the ConfigOpts."""
    for path in migrated_templates.values():
        shutil.copy(path, tmp_path / path.name)
    conf = make_conf(tmp_path)
    engines.configure(conf)
    return conf


@pytest.fixture
def ctx(db):
    return context.get_admin_context()
