"""Real, throwaway SQLite cell and API databases for unit tests that read or write rows.

Both schemas are migrated once per process into template files; each test gets fresh copies
and an engine registry of its own, so nothing leaks between tests.
"""
import atexit
import os
import shutil
import tempfile
from unittest import mock

import sqlalchemy as sa

from minisched import context
from minisched.db import engines
from minisched.db import migration

_TEMPLATES = {}


def _templates():
    """``{'main': path, 'api': path}`` of the migrated template files (made on first use)."""
    if not _TEMPLATES:
        root = tempfile.mkdtemp(prefix='minisched-db-templates-')
        atexit.register(shutil.rmtree, root, True)
        for name in ('main', 'api'):
            path = os.path.join(root, '%s.sqlite' % name)
            migration.db_sync('sqlite:///%s' % path, name)
            _TEMPLATES[name] = path
        engines.dispose_all()  # closed, the files hold everything (no WAL left): copyable
    return _TEMPLATES


class SqliteDatabases:
    """Mixin for a ``tests.unit.base.TestCase``: call ``use_databases()`` in ``setUp``.

    It sets ``self.main_url`` and ``self.api_url`` (configured as ``[database]`` and
    ``[api_database]``), ``self.ctxt`` (an admin context) and ``self.statements`` (filled once
    :meth:`count_statements` is called); :meth:`new_cell_database` makes more cells.
    """

    def use_databases(self):
        # This test's own engine registry; cleanups run in reverse, so engines are disposed
        # before the module state is restored.
        for name, value in (('_urls', {engines.MAIN: None, engines.API: None}),
                            ('_options', {engines.MAIN: dict(engines._DEFAULT_OPTIONS),
                                          engines.API: dict(engines._DEFAULT_OPTIONS)}),
                            ('_engines', {}), ('_blocked', {'binary': None, 'logged': False})):
            patcher = mock.patch.object(engines, name, value)
            patcher.start()
            self.addCleanup(patcher.stop)
        self.addCleanup(engines.dispose_all)
        self._db_dir = tempfile.mkdtemp(prefix='minisched-unit-db-')
        self.addCleanup(shutil.rmtree, self._db_dir, ignore_errors=True)
        self.main_url = self._copy('main', 'main.sqlite')
        self.api_url = self._copy('api', 'api.sqlite')
        self.flags(group='database', connection=self.main_url)
        self.flags(group='api_database', connection=self.api_url)
        engines.configure(self.conf)
        self.ctxt = context.get_admin_context()
        self.statements = []

    def _copy(self, template, filename):
        path = os.path.join(self._db_dir, filename)
        shutil.copy(_templates()[template], path)
        return 'sqlite:///%s' % path

    def new_cell_database(self, name):
        """URL of a fresh cell database ``name`` besides ``[database]``."""
        return self._copy('main', '%s.sqlite' % name)

    def count_statements(self):
        """Record in ``self.statements`` every statement run on any database from now on."""
        def record(conn, cursor, statement, *args):
            self.statements.append(statement)
        sa.event.listen(sa.engine.Engine, 'before_cursor_execute', record)
        self.addCleanup(sa.event.remove, sa.engine.Engine, 'before_cursor_execute', record)
