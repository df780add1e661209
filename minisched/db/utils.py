"""Helpers shared by the cell ("main") and API database layers.

What this module decides, once for both layers:

* rows leave the DB layer as plain dicts (``to_dict`` / ``to_dicts``), or as read-only
  ``FrozenRow``s (``to_frozen``) for reads whose rows are kept for long (the scheduler's);
* soft-deleted rows are hidden or shown according to ``context.read_deleted`` (``visible``) and a
  soft delete sets ``deleted = id`` plus ``deleted_at`` (``soft_delete_values``);
* writes are retried on deadlock (``writer``), upserts also on a racing duplicate (``upserter``),
  and a ``DBDuplicateEntry`` is turned into a named minisched exception (``duplicate_as``);
* unique constraints are named ``uniq_<table>0<col>0<col>``: the oslo.db convention that lets it
  report the violated columns (``DBDuplicateEntry.columns``) on PostgreSQL and MySQL as well;
* the column types whose storage matters on MySQL/MariaDB (``DateTime``, ``MediumText``). These
  are part of the schema history (migrations import them): changing one needs a new migration.
"""
import collections.abc
import contextlib
import sys

import sqlalchemy as sa
from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_utils import timeutils
from sqlalchemy.dialects import mysql

#: Naive UTC timestamps that keep microseconds on MySQL/MariaDB too: a plain DATETIME drops them,
#: and ``updated_at >= since`` would then miss rows changed within the same second.
DateTime = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql', 'mariadb')

#: JSON documents (flavor, request spec, build request) that can outgrow MySQL's 64 KiB TEXT.
MediumText = sa.Text().with_variant(mysql.MEDIUMTEXT(), 'mysql', 'mariadb')

#: Table options of every table (ignored by SQLite and PostgreSQL).
TABLE_KWARGS = {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8'}

READ_DELETED_MODES = ('no', 'yes', 'only')


def now():
    """Naive UTC now. Takes no argument, so SQLAlchemy calls it without an execution context."""
    return timeutils.utcnow()


# -- schema helpers (models) -------------------------------------------------------------------

def unique_name(table_name, *columns):
    return 'uniq_%s0%s' % (table_name, '0'.join(columns))


def unique(table_name, *columns):
    """A UniqueConstraint named so that oslo.db can tell which columns it covers."""
    return sa.UniqueConstraint(*columns, name=unique_name(table_name, *columns))


def id_column():
    return sa.Column('id', sa.Integer, primary_key=True, autoincrement=True)


def timestamp_columns():
    return [sa.Column('created_at', DateTime, default=now),
            sa.Column('updated_at', DateTime, onupdate=now)]


def soft_delete_columns():
    return [sa.Column('deleted_at', DateTime),
            sa.Column('deleted', sa.Integer, default=0)]


def table(metadata, name, *items, soft_delete=False):
    """A table of ``id``, timestamps, the given columns, soft-delete columns, then constraints."""
    columns = [item for item in items if isinstance(item, sa.Column)]
    constraints = [item for item in items if not isinstance(item, sa.Column)]
    if soft_delete:
        columns += soft_delete_columns()
    return sa.Table(name, metadata, id_column(), *timestamp_columns(), *columns, *constraints,
                    **TABLE_KWARGS)


# -- rows and filters ---------------------------------------------------------------------------

def to_dict(row):
    return None if row is None else dict(row._mapping)


def to_dicts(rows):
    return [dict(row._mapping) for row in rows]


class FrozenRow(collections.abc.Mapping):
    """A read-only row: its values in a tuple, its column names in an index shared by rows.

    For rows kept as long as the process (the scheduler's host states: two per host). A dict
    per row took 2 KB a host (a node row has 40 columns), a seventh of a worker at 10,000
    hosts, and reading them all as dicts first left that much again behind after a full read.
    """

    __slots__ = ('_index', '_values')

    def __init__(self, index, values):
        self._index = index  # column name -> position in values
        self._values = values

    @classmethod
    def from_mapping(cls, mapping, shared=()):
        return cls(_index_of(tuple(mapping)), _shared_values(tuple(mapping.values()),
                                                            _positions(mapping, shared)))

    def __getitem__(self, key):
        return self._values[self._index[key]]

    def get(self, key, default=None):
        position = self._index.get(key)
        return default if position is None else self._values[position]

    def __contains__(self, key):
        return key in self._index

    def __iter__(self):
        return iter(self._index)

    def __len__(self):
        return len(self._values)

    def __repr__(self):
        return repr(dict(self.items()))


_indexes = {}  # column names, in order -> {name: position}


def _index_of(names):
    index = _indexes.get(names)
    if index is None:
        index = _indexes.setdefault(names, {name: i for i, name in enumerate(names)})
    return index


def _positions(names, shared):
    return [i for i, name in enumerate(names) if name in shared]


def _shared_values(values, positions):
    """``values`` with the strings at ``positions`` made one object per distinct value (the
    driver returns a new string per row for a value every row repeats)."""
    if not positions:
        return values
    values = list(values)
    for i in positions:
        value = values[i]
        if type(value) is str and len(value) <= 256:
            values[i] = sys.intern(value)
    return tuple(values)


#: Rows fetched from the driver at a time by :func:`to_frozen`: one fetch call per row cost a
#: full read of 10,000 hosts ~15 ms of CPU more on PostgreSQL (of ~135 ms), and a whole result
#: at once would hold every driver row beside the FrozenRows.
FETCH_ROWS = 500


def to_frozen(result, shared=()):
    """The rows of ``result`` as FrozenRows, fetched :data:`FETCH_ROWS` at a time (no list
    of every row or dict first); string values of the ``shared`` columns interned."""
    names = tuple(result.keys())
    index, positions = _index_of(names), _positions(names, shared)
    return [FrozenRow(index, _shared_values(tuple(row), positions))
            for rows in result.partitions(FETCH_ROWS) for row in rows]


def visible(table, context):
    """WHERE clauses hiding or selecting soft-deleted rows of ``table`` per ``read_deleted``."""
    mode = getattr(context, 'read_deleted', 'no') or 'no'
    if mode == 'no':
        return [table.c.deleted == 0]
    if mode == 'only':
        return [table.c.deleted != 0]
    if mode == 'yes':
        return []
    raise ValueError('read_deleted must be one of %s, not %r' % (READ_DELETED_MODES, mode))


def soft_delete_values(table):
    """SET values of a soft delete: ``deleted`` takes the row's own id (frees unique keys)."""
    return {'deleted': table.c.id, 'deleted_at': now()}


def match(column, expected):
    """``column = expected``, or ``IN`` for a list; ``None`` (alone or in a list) means IS NULL."""
    if not isinstance(expected, (list, tuple, set, frozenset)):
        return column.is_(None) if expected is None else column == expected
    values = [value for value in expected if value is not None]
    clauses = [column.in_(values)] if values else []
    if len(values) != len(expected):
        clauses.append(column.is_(None))
    return sa.or_(*clauses) if clauses else sa.false()


# -- transactions and errors --------------------------------------------------------------------

def _is_sqlite_busy(error):
    """SQLite's "database is locked": a concurrent writer won; the transaction can rerun."""
    return 'database is locked' in str(error)


def writer(func):
    """Retry a write function (its whole transaction) when the database reports a deadlock
    or, on SQLite, a lock conflict."""
    return oslo_db_api.wrap_db_retry(max_retries=10, retry_on_deadlock=True,
                                     exception_checker=_is_sqlite_busy)(func)


def _is_duplicate(error):
    return isinstance(error, db_exc.DBDuplicateEntry) or _is_sqlite_busy(error)


def upserter(func):
    """Like ``writer``, and also retry when a concurrent insert of the same key won the race."""
    return oslo_db_api.wrap_db_retry(max_retries=10, retry_on_deadlock=True,
                                     exception_checker=_is_duplicate)(func)


@contextlib.contextmanager
def duplicate_as(make_error):
    """Re-raise ``DBDuplicateEntry`` as ``make_error(error)`` (it may look at ``error.columns``)."""
    try:
        yield
    except db_exc.DBDuplicateEntry as error:
        raise make_error(error) from error


# -- statements on a connection -----------------------------------------------------------------

def fetch(conn, table, *where, order_by=(), for_update=False):
    """The first row of ``table`` matching ``where`` (in ``order_by`` order) as a dict, or None."""
    stmt = sa.select(table).where(*where).order_by(*order_by).limit(1)
    if for_update:
        stmt = stmt.with_for_update()
    return to_dict(conn.execute(stmt).first())


def exists(conn, table, *where):
    """Whether a row of ``table`` matches ``where``: one read of an id, nothing else."""
    return conn.execute(sa.select(table.c.id).where(*where).limit(1)).first() is not None


def fetch_all(conn, table, *where, order_by=None, frozen=None):
    """Every row of ``table`` matching ``where`` as dicts, oldest id first by default; as
    FrozenRows when ``frozen`` gives the columns to share (see ``to_frozen``)."""
    stmt = sa.select(table).where(*where).order_by(*(order_by or (table.c.id,)))
    result = conn.execute(stmt)
    return to_dicts(result) if frozen is None else to_frozen(result, frozen)


def insert(conn, table, values):
    """Insert ``values`` and return the new row as stored (defaults and id filled in).

    One statement where the backend returns what it inserted (PostgreSQL, SQLite 3.35+,
    MariaDB 10.5+: INSERT ... RETURNING), else the INSERT and a SELECT by the new id.
    """
    stmt = sa.insert(table).values(values)
    if conn.dialect.insert_returning:
        return to_dict(conn.execute(stmt.returning(*table.c)).first())
    result = conn.execute(stmt)
    return fetch(conn, table, table.c.id == result.inserted_primary_key[0])


def update(conn, table, where, values):
    """UPDATE ``table`` SET ``values`` WHERE all of ``where``; returns the matched row count."""
    return conn.execute(sa.update(table).where(*where).values(values)).rowcount


def update_and_fetch(conn, table, where, values, checks=()):
    """UPDATE ``table`` SET ``values`` WHERE all of ``where`` and ``checks``; the updated row
    as a dict, or None when no row matched. ``values`` may be a list of (column, value) pairs,
    set in that order.

    One statement where the backend returns what it updated (PostgreSQL, SQLite 3.35+:
    UPDATE ... RETURNING), else the UPDATE and then a SELECT of the row by ``where`` in the
    same transaction (MySQL and MariaDB have no UPDATE ... RETURNING). ``where`` must match
    one row at most; ``checks`` are the conditions the update itself may make untrue.
    """
    stmt = sa.update(table).where(*where, *checks)
    stmt = stmt.ordered_values(*values) if isinstance(values, list) else stmt.values(values)
    if conn.dialect.update_returning:
        return to_dict(conn.execute(stmt.returning(*table.c)).first())
    if conn.execute(stmt).rowcount != 1:
        return None
    return fetch(conn, table, *where)


def changed_since(table, since):
    """Rows created or updated at or after ``since`` (naive UTC)."""
    return sa.or_(table.c.updated_at >= since, table.c.created_at >= since)


def changed_since_select(table, *where, columns=None):
    """SELECT of ``table``'s rows ``changed_since`` the bind parameter ``since`` (and ``where``);
    of their ``columns`` only when given.

    Build it once and run it with ``fetch_changed_since``: the scheduler runs these on every
    request, and building the expression each time cost more than the query.
    """
    return sa.select(*(columns or (table,))).where(changed_since(table, sa.bindparam('since')),
                                                   *where)


def fetch_changed_since(conn, stmt, frozen=None, **params):
    """Rows of a ``changed_since_select`` statement as dicts (FrozenRows: see ``fetch_all``),
    oldest id first.

    Sorted here rather than by an ORDER BY: given one, SQLite walks the whole table in id order
    instead of answering the OR from the ``updated_at`` and ``created_at`` indexes, which
    turned a refresh that finds a handful of rows into a full scan.
    """
    result = conn.execute(stmt, params)
    rows = to_dicts(result) if frozen is None else to_frozen(result, frozen)
    return sorted(rows, key=lambda row: row['id'])


#: Ids per ``IN`` list of :func:`fetch_by_ids` (far below every backend's parameter limit).
IDS_PER_QUERY = 500


def fetch_by_ids(conn, table, ids, frozen=None):
    """The rows of ``table`` with these ``ids`` (soft-deleted ones too), oldest id first, as
    dicts (FrozenRows: see ``fetch_all``); one query per :data:`IDS_PER_QUERY` ids."""
    ids = sorted(ids)
    rows = []
    for start in range(0, len(ids), IDS_PER_QUERY):
        rows += fetch_all(conn, table, table.c.id.in_(ids[start:start + IDS_PER_QUERY]),
                          frozen=frozen)
    return rows
