"""Which schema revision a database is at, and which this code knows, without alembic.

The services check their database's revision before they start their workers
(``minisched.cmd.common.check_database``). Importing alembic for that would cost every worker
about 10 MB of resident memory inherited from its parent, so this module reads the revision
table with SQLAlchemy and this code's revisions from the migration scripts' source (their
``revision`` and ``down_revision`` assignments, parsed, not executed). ``minisched.db.migration``
migrates with alembic itself; its tests check that both agree.
"""
import ast
import functools
import os

import sqlalchemy as sa

_HERE = os.path.dirname(os.path.abspath(__file__))

DATABASES = {
    'main': {'location': os.path.join(_HERE, 'main', 'migrations'),
             'version_table': 'alembic_version'},
    'api': {'location': os.path.join(_HERE, 'api', 'migrations'),
            'version_table': 'alembic_version_api'},
}


def settings(database):
    """``DATABASES[database]``, or ValueError naming the choices."""
    try:
        return DATABASES[database]
    except KeyError:
        raise ValueError('database must be one of %s, not %r' % (sorted(DATABASES), database))


@functools.lru_cache(maxsize=None)
def known(database):
    """``(head, revisions)``: this code's newest revision of ``database`` and all of them.

    Raises RuntimeError when the scripts do not form one line of revisions (a branch, a
    script without a literal ``revision``): alembic would then need to be asked."""
    versions = os.path.join(settings(database)['location'], 'versions')
    down_of = {}
    for name in sorted(os.listdir(versions)):
        if name.endswith('.py') and not name.startswith('__'):
            with open(os.path.join(versions, name)) as handle:
                assigned = _assignments(handle.read(), ('revision', 'down_revision'))
            if not isinstance(assigned.get('revision'), str):
                raise RuntimeError('%s: no literal revision' % name)
            down_of[assigned['revision']] = assigned.get('down_revision')
    heads = set(down_of) - set(down_of.values())
    if len(heads) != 1 or not all(isinstance(down, (str, type(None)))
                                  for down in down_of.values()):
        raise RuntimeError('the %s migrations are not one line of revisions' % database)
    return heads.pop(), frozenset(down_of)


def _assignments(source, names):
    """The literal values assigned to ``names`` at the top level of a module's ``source``."""
    values = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name) and node.targets[0].id in names:
            values[node.targets[0].id] = ast.literal_eval(node.value)
    return values


def current(connection, database):
    """The revision the database behind ``connection`` is at; None before its first sync.
    Several rows (alembic branches) come back as a tuple, sorted."""
    table = settings(database)['version_table']
    if not sa.inspect(connection).has_table(table):
        return None
    versions = sa.table(table, sa.column('version_num'))
    found = sorted(connection.execute(sa.select(versions.c.version_num)).scalars())
    if not found:
        return None
    return found[0] if len(found) == 1 else tuple(found)


def status(engine, database):
    """``(current, head, known)``: the revision of ``database`` behind ``engine`` (None before
    the first sync), this code's newest, and whether ``current`` is one of this code's
    (False for a schema a newer release migrated)."""
    head, ours = known(database)
    with engine.connect() as connection:
        revision = current(connection, database)
    return revision, head, revision is None or revision in ours
