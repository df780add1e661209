"""Schema migrations of both databases, driven through alembic's API (no alembic.ini needed).

``db_sync(url=None, database='main', version=None)`` upgrades a database to ``version`` (head by
default); running it again is a no-op. ``db_version(url=None, database='main')`` reports the
current revision (None for an empty database). ``url=None`` means the URL given to
``engines.configure()``.

Each database keeps its scripts in ``minisched/db/<database>/migrations`` (``env.py``,
``script.py.mako``, ``versions/``) and its revision in its own version table, so both schemas
may even share one database without mistaking each other's revision for their own (both are
listed in ``minisched.db.revisions``, which reads revisions without alembic). To write a
new revision: ``alembic.command.revision(migration.alembic_config('main'), message='...')``.

alembic is imported by the functions that use it: ``minisched-manage`` imports this module
for every command, and most of them never migrate (alembic and mako cost a tenth of a second
of CPU at each start).
"""
from minisched.db import engines
from minisched.db import revisions

DATABASES = revisions.DATABASES
_database = revisions.settings


def alembic_config(database, connection=None):
    """An alembic Config for ``database`` ('main' or 'api'), optionally bound to a connection."""
    settings = _database(database)
    from alembic import config as alembic_config_module  # see the module docstring
    config = alembic_config_module.Config()
    config.set_main_option('script_location', settings['location'])
    config.attributes['version_table'] = settings['version_table']
    config.attributes['connection'] = connection
    return config


def _engine(url, database):
    _database(database)
    return engines.engine_for_url(url or engines.configured_url(database), database)


def db_sync(url=None, database='main', version=None):
    """Upgrade ``database`` at ``url`` to ``version`` (default: the newest revision)."""
    from alembic import command as alembic_command  # see the module docstring
    with _engine(url, database).begin() as connection:
        alembic_command.upgrade(alembic_config(database, connection), version or 'head')


def db_version(url=None, database='main'):
    """The revision ``database`` at ``url`` is at, or None before the first ``db_sync``."""
    from alembic.runtime import migration as alembic_migration  # see the module docstring
    options = {'version_table': _database(database)['version_table']}
    with _engine(url, database).connect() as connection:
        context = alembic_migration.MigrationContext.configure(connection, opts=options)
        return context.get_current_revision()


def run_migrations(alembic_context, metadata):
    """Body of both ``env.py`` files: migrate on the connection ``db_sync`` handed over."""
    config = alembic_context.config
    version_table = config.attributes.get('version_table', 'alembic_version')
    options = {'target_metadata': metadata, 'version_table': version_table,
               'render_as_batch': True, 'include_object': _own_tables(metadata)}
    if alembic_context.is_offline_mode():
        alembic_context.configure(url=config.get_main_option('sqlalchemy.url'),
                                  literal_binds=True, **options)
        with alembic_context.begin_transaction():
            alembic_context.run_migrations()
        return
    connection = config.attributes.get('connection')
    if connection is None:
        url = config.get_main_option('sqlalchemy.url')
        with engines.engine_for_url(url).begin() as connection:
            _run_online(alembic_context, connection, options)
    else:
        _run_online(alembic_context, connection, options)


def _run_online(alembic_context, connection, options):
    alembic_context.configure(connection=connection, **options)
    with alembic_context.begin_transaction():
        alembic_context.run_migrations()


def _own_tables(metadata):
    """Autogenerate filter: ignore tables of the other database sharing the same schema."""
    def include(obj, name, type_, reflected, compare_to):
        return type_ != 'table' or not reflected or name in metadata.tables
    return include
