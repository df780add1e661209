"""pytest fixtures of the functional tests (made available by ``conftest.py``).

``transport_url`` (session)
    ``MINISCHED_TEST_TRANSPORT_URL`` with a vhost of this test session's own (see
    ``base.make_vhost``), deleted at the end. An unreachable broker skips the test, or fails it
    under ``CI=true``.
``database``
    URL of a throwaway database (``db_fixtures.make_db``), dropped after the test. The backend
    is ``MINISCHED_TEST_DB_URL``'s (SQLite by default); choose one per test by indirect
    parametrization: ``@pytest.mark.parametrize('database', BACKENDS, indirect=True)``.
``cluster``
    A ``base.Cluster`` in the test's ``tmp_path`` with both schemas created and no service
    started yet. Whatever the outcome, every process it started is killed
    (``Cluster.kill_all``) and its exchange and queues are deleted when the test ends; a failed
    test's report shows the tail of each log.
"""
import pytest
import sqlalchemy as sa

from tests.functional import base
from tests.functional import db_fixtures

BACKENDS = db_fixtures.BACKENDS
SERVER_BACKENDS = db_fixtures.SERVER_BACKENDS


def default_backend(monkeypatch):
    """The backend of ``MINISCHED_TEST_DB_URL``; db_fixtures is pointed at that server."""
    if base.DB_URL == 'sqlite':
        return 'sqlite'
    backend = sa.engine.make_url(base.DB_URL).get_backend_name()
    backend = 'mysql' if backend == 'mariadb' else backend
    if backend in db_fixtures.ADMIN_URLS:
        monkeypatch.setenv(db_fixtures.ADMIN_URLS[backend][0], base.DB_URL)
    return backend


@pytest.fixture(scope='session')
def transport_url():
    base.check_rabbit(base.TRANSPORT_URL)
    url, delete_vhost = base.make_vhost(base.TRANSPORT_URL)
    yield url
    delete_vhost()


@pytest.fixture
def database(request, monkeypatch):
    backend = getattr(request, 'param', None) or default_backend(monkeypatch)
    url, cleanup = db_fixtures.make_db(backend)
    request.addfinalizer(cleanup)
    return url


@pytest.fixture
def cluster(request, tmp_path, transport_url, database):
    cluster = base.Cluster(tmp_path, transport_url, database,
                           own_vhost=transport_url != base.TRANSPORT_URL)
    # Read by conftest's report hook, also when a later part of the setup fails.
    request.node.minisched_clusters = getattr(request.node, 'minisched_clusters', []) + [cluster]
    request.addfinalizer(cluster.cleanup_broker)
    request.addfinalizer(cluster.kill_all)  # finalizers run last-in first-out
    cluster.sync_db()
    return cluster
