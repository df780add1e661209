"""utils: value/list/None matching, read_deleted filters, duplicate translation."""
import pytest
import sqlalchemy as sa
from oslo_db import exception as db_exc

from minisched import context as ms_context
from minisched import exception
from minisched.db import utils

TABLE = sa.Table('t', sa.MetaData(), sa.Column('id', sa.Integer), sa.Column('v', sa.String),
                 sa.Column('deleted', sa.Integer))


def _sql(clause):
    return str(clause.compile(compile_kwargs={'literal_binds': True}))


@pytest.mark.parametrize('expected, sql', [
    ('a', "t.v = 'a'"),
    (None, 't.v IS NULL'),
    (['a', 'b'], "t.v IN ('a', 'b')"),
    (['a', None], "t.v IN ('a') OR t.v IS NULL"),
    ([None], 't.v IS NULL'),
    ([], 'false'),
])
def test_match(expected, sql):
    assert _sql(utils.match(TABLE.c.v, expected)) == sql


@pytest.mark.parametrize('mode, sql', [('no', ['t.deleted = 0']), ('only', ['t.deleted != 0']),
                                       ('yes', [])])
def test_visible(mode, sql):
    ctx = ms_context.get_admin_context(read_deleted=mode)
    assert [_sql(clause) for clause in utils.visible(TABLE, ctx)] == sql


def test_duplicate_as_passes_the_error_to_the_factory():
    with pytest.raises(exception.FlavorExists, match="name x"):
        with utils.duplicate_as(lambda error: exception.FlavorExists(name=error.columns[0])):
            raise db_exc.DBDuplicateEntry(columns=['x'])


def test_fetch_changed_since_uses_the_indexes_and_returns_oldest_id_first(tmp_path):
    import datetime

    meta = sa.MetaData()
    table = sa.Table('t', meta, sa.Column('id', sa.Integer, primary_key=True),
                     sa.Column('created_at', sa.DateTime), sa.Column('updated_at', sa.DateTime),
                     sa.Index('t_updated_at_idx', 'updated_at'),
                     sa.Index('t_created_at_idx', 'created_at'))
    engine = sa.create_engine('sqlite:///%s' % (tmp_path / 'x.db'))
    meta.create_all(engine)
    old, new = datetime.datetime(2020, 1, 1), datetime.datetime(2026, 1, 1)
    with engine.begin() as conn:
        conn.execute(table.insert(), [
            {'id': 1, 'created_at': old, 'updated_at': new},
            {'id': 2, 'created_at': old, 'updated_at': None},
            {'id': 3, 'created_at': new, 'updated_at': None},
            {'id': 4, 'created_at': old, 'updated_at': old}])
        rows = utils.fetch_changed_since(conn, utils.changed_since_select(table), since=new)
        stmt = sa.select(table).where(utils.changed_since(table, new))
        plan = conn.exec_driver_sql(
            'EXPLAIN QUERY PLAN ' + str(stmt.compile(compile_kwargs={'literal_binds': True})))
        plan = ' '.join(str(row) for row in plan)
    assert [row['id'] for row in rows] == [1, 3]
    assert 't_updated_at_idx' in plan and 't_created_at_idx' in plan


def test_fetch_by_ids_reads_every_row_asked_in_chunks_oldest_id_first(tmp_path):
    meta = sa.MetaData()
    table = sa.Table('t', meta, sa.Column('id', sa.Integer, primary_key=True),
                     sa.Column('deleted', sa.Integer))
    engine = sa.create_engine('sqlite:///%s' % (tmp_path / 'ids.db'))
    meta.create_all(engine)
    statements = []
    sa.event.listen(engine, 'before_cursor_execute',
                    lambda conn, cursor, statement, *args: statements.append(statement))
    wanted = list(range(2 * utils.IDS_PER_QUERY + 7, 0, -2))  # unsorted, > 2 chunks
    with engine.begin() as conn:
        conn.execute(table.insert(), [{'id': i, 'deleted': i if i % 3 else 0}
                                      for i in range(1, 2 * utils.IDS_PER_QUERY + 10)])
        del statements[:]
        rows = utils.fetch_by_ids(conn, table, wanted)
        assert utils.fetch_by_ids(conn, table, []) == []
    assert [row['id'] for row in rows] == sorted(wanted)  # soft-deleted rows included
    assert len(statements) == 2  # 504 ids: one full chunk and the rest


def _frozen_table(tmp_path):
    meta = sa.MetaData()
    table = sa.Table('t', meta, sa.Column('id', sa.Integer, primary_key=True),
                     sa.Column('host', sa.String(255)), sa.Column('note', sa.String(255)))
    engine = sa.create_engine('sqlite:///%s' % (tmp_path / 'f.db'))
    meta.create_all(engine)
    with engine.begin() as conn:
        conn.execute(table.insert(), [{'id': 1, 'host': 'h1', 'note': 'x' * 20},
                                      {'id': 2, 'host': 'h1', 'note': 'x' * 20}])
    return engine, table


def test_fetch_all_frozen_reads_mappings_that_cannot_change(tmp_path):
    engine, table = _frozen_table(tmp_path)
    with engine.begin() as conn:
        as_dicts = utils.fetch_all(conn, table)
        frozen = utils.fetch_all(conn, table, frozen={'host'})
    assert [type(row) for row in frozen] == [utils.FrozenRow] * 2
    assert [dict(row) for row in frozen] == as_dicts  # same columns, values and order
    one = frozen[0]
    assert (one['host'], one.get('note'), one.get('nope'), one.get('nope', 7)) == \
        ('h1', 'x' * 20, None, 7)
    assert 'host' in one and 'nope' not in one and len(one) == 3
    assert list(one) == ['id', 'host', 'note'] and one == as_dicts[0]
    with pytest.raises(KeyError):
        one['nope']
    with pytest.raises(TypeError):
        one['host'] = 'other'  # read-only by design
    # One index per column set; the shared column's values are one object (whether the
    # others are depends on the driver: see the next test for what FrozenRow does to them).
    assert one._index is frozen[1]._index
    assert frozen[0]['host'] is frozen[1]['host']


def test_frozen_row_from_mapping_matches_a_read_row(tmp_path):
    engine, table = _frozen_table(tmp_path)
    with engine.begin() as conn:
        read = utils.fetch_changed_since(conn, sa.select(table), frozen={'host'})
    host = ''.join(['h', '1'])  # strings of their own, as a driver returns
    note = ''.join(['x'] * 20)
    made = utils.FrozenRow.from_mapping({'id': 1, 'host': host, 'note': note},
                                        shared={'host'})
    assert made == read[0] and made._index is read[0]._index
    # The shared column's value is the one string all rows share; the others are kept as
    # given, not interned.
    assert made['host'] is read[0]['host'] and made['host'] is not host
    assert made['note'] is note
