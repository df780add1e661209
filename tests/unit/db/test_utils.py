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
