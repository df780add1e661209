"""A create cut by its database leaves nothing behind: no build request, request spec,
instance mapping or group membership that no conductor will ever see.

The API database is reached through a ``TcpProxy``; the proxy is cut right after the
create's INSERT into one of its tables has run (an SQLAlchemy event on the API engine,
so the cut falls at the same point every time), the rest of the create fails with the
lost connection, and the rows are counted through a direct connection once the proxy is
back. Before, each row had its own transaction: a 300-instance create cut 1 s in left 230
of each. No services run: nothing is cast before the rows are written.
"""
import pytest
import sqlalchemy as sa
from oslo_db import exception as db_exc
from sqlalchemy import pool

from minisched.db import engines
from tests.functional import build_helpers
from tests.functional import db_fixtures
from tests.functional import resilience
from tests.functional import tcp_proxy

pytestmark = [pytest.mark.functional, pytest.mark.timeout(180)]

TABLES = ('build_requests', 'request_specs', 'instance_mappings', 'instance_group_member')
DEFAULT_PORTS = {'postgresql': 5432, 'mysql': 3306}


def _counts(url):
    engine = sa.create_engine(url, poolclass=pool.NullPool)
    try:
        with engine.connect() as conn:
            return {name: conn.execute(sa.text('SELECT COUNT(*) FROM %s' % name)).scalar()
                    for name in TABLES}
    finally:
        engine.dispose()


@pytest.fixture
def proxied(request, tmp_path, transport_url, database):
    """``(client, proxy, direct database URL)``: an API client whose database connections
    go through a proxy the test can cut."""
    url = sa.engine.make_url(database)
    proxy = tcp_proxy.TcpProxy(url.port or DEFAULT_PORTS[url.get_backend_name()])
    request.addfinalizer(proxy.close)
    proxied_url = url.set(host='127.0.0.1', port=proxy.port).render_as_string(
        hide_password=False)
    cluster = resilience.make_cluster(request, tmp_path, transport_url, proxied_url,
                                      shared_vhost=True)
    client = build_helpers.Client(cluster)
    request.addfinalizer(client.close)
    return client, proxy, database


def _cut_after_insert_into(proxy, table):
    """Cut ``proxy`` once the first INSERT into ``table`` on the API engine has run."""
    cuts = []

    def after_execute(conn, cursor, statement, parameters, context, executemany):
        words = statement.split(None, 3)
        if not cuts and words[:2] == ['INSERT', 'INTO'] and words[2].strip('`"') == table:
            cuts.append(statement)
            proxy.cut()
    sa.event.listen(engines.api_engine(), 'after_cursor_execute', after_execute)
    return cuts


@pytest.mark.parametrize('database', db_fixtures.SERVER_BACKENDS, indirect=True)
@pytest.mark.parametrize('table, count', [('request_specs', 1), ('build_requests', 300),
                                          ('instance_mappings', 300)])
def test_a_create_cut_by_the_database_leaves_nothing_behind(proxied, table, count):
    client, proxy, direct_url = proxied
    flavor = client.flavor('m1.test', 1, 64, 1)
    group = client.group('spread', 'soft-anti-affinity')
    empty = _counts(direct_url)
    assert set(empty.values()) == {0}

    cuts = _cut_after_insert_into(proxy, table)
    with pytest.raises(db_exc.DBConnectionError):
        client.boot(flavor, num_instances=count, group=group)
    assert cuts, 'the create never inserted into %s' % table
    proxy.restore()
    assert _counts(direct_url) == empty

    # The database is back: the same create writes every row.
    uuids = client.boot(flavor, num_instances=count, group=group)
    assert len(uuids) == count
    assert _counts(direct_url) == dict.fromkeys(TABLES, count)
