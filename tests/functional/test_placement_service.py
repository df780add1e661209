"""The real Placement service as minisched runs it: its own database (SQLite, PostgreSQL,
MariaDB), ``placement-manage db sync``, uWSGI on a free loopback port, ``noauth2``; reached
with minisched's report client configured as its services are (``[placement]`` with
``auth_type = admin_token``)."""
import pytest
from oslo_utils import uuidutils

from minisched import context as ms_context
from minisched.localcluster import placement
from tests.functional import db_fixtures
from tests.functional.placement_helpers import report_client

pytestmark = pytest.mark.functional


@pytest.fixture
def placement_db(request):
    """The URL of Placement's database: None for its SQLite default, else a throwaway one."""
    if request.param == 'sqlite':
        return None
    url, cleanup = db_fixtures.make_db(request.param)
    request.addfinalizer(cleanup)
    return url


@pytest.mark.parametrize('placement_db', db_fixtures.BACKENDS, indirect=True)
def test_placement_serves_providers_from_its_database(tmp_path, placement_db):
    server = placement.PlacementServer(tmp_path / 'placement', database_url=placement_db)
    server.write_config()
    server.db_sync()
    server.start()
    try:
        client = report_client(tmp_path, server.url)
        versions = client.get_versions()['versions'][0]
        assert versions['status'] == 'CURRENT'
        # Placement 16.0.0's newest microversion: newer than any Nova 34 asks for.
        assert versions['max_version'] == '1.39'

        ctx = ms_context.get_admin_context()
        rp_uuid = uuidutils.generate_uuid()
        created = client.create_provider(ctx, rp_uuid, 'node1')
        assert (created['uuid'], created['name'], created['generation']) == (rp_uuid, 'node1', 0)
        # Created again under the same uuid: the record that exists (a concurrent creation).
        assert client.create_provider(ctx, rp_uuid, 'other')['name'] == 'node1'
        listed = client.get_providers(ctx)
        assert [(rp['uuid'], rp['name'], rp['root_provider_uuid']) for rp in listed] == [
            (rp_uuid, 'node1', rp_uuid)]
        assert client.get_providers(ctx, name='node2') == []
    finally:
        status = server.stop()
    assert status == 0, server.log_file
    assert not server.answers()


def test_placement_refuses_a_client_without_the_admin_token(tmp_path):
    server = placement.PlacementServer(tmp_path / 'placement')
    server.write_config()
    server.db_sync()
    server.start()
    try:
        client = report_client(tmp_path, server.url)
        resp = client.get('/resource_providers', version='1.14')
        assert resp.status_code == 200
        client._client.session.auth.token = 'someone'  # noauth2: a user without a role
        resp = client.post('/resource_providers', {'name': 'node1'}, version='1.20')
        assert resp.status_code == 403, resp.text
    finally:
        server.stop()
