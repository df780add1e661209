"""A real Placement for functional tests, and minisched clusters that use it.

``placement_server`` (fixture)
    A :class:`minisched.localcluster.placement.PlacementServer` on SQLite in the test's
    ``tmp_path``, started, stopped after the test.
``placement_cluster`` (fixture)
    The ``cluster`` fixture's ``base.Cluster`` with ``[placement]`` pointing at that server
    (``enabled = true``, ``auth_type = admin_token``), no service started yet.
``report_client(tmp_path, url)``
    minisched's report client on a config file of those ``[placement]`` settings.
``providers(client)``
    ``{name: {'uuid', 'generation', 'inventory', 'traits', 'aggregates'}}`` as Placement
    has them.
"""
import configparser

import pytest
from oslo_config import cfg

from minisched.conf import placement as placement_conf
from minisched import context as ms_context
from minisched.localcluster import placement
from minisched.scheduler.client import report
from tests.functional import base


def client_conf(url):
    return dict(placement.client_options(url), enabled='true')


def report_client(tmp_path, url):
    """A report client on a ConfigOpts parsed from a file, as a service reads its own."""
    parser = configparser.ConfigParser()
    parser['placement'] = client_conf(url)
    path = tmp_path / 'report-client.conf'
    with open(path, 'w') as handle:
        parser.write(handle)
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    conf(['--config-file', str(path)], project='minisched', default_config_files=[],
         default_config_dirs=[])
    return report.SchedulerReportClient(conf)


def providers(client):
    ctx = ms_context.get_admin_context()
    found = {}
    for rp in client.get_providers(ctx):
        _gen, inventory = client.get_inventory(ctx, rp['uuid'])
        _gen, traits = client.get_traits(ctx, rp['uuid'])
        generation, aggregates = client.get_aggregates(ctx, rp['uuid'])
        found[rp['name']] = {'uuid': rp['uuid'], 'generation': generation,
                             'inventory': inventory, 'traits': set(traits),
                             'aggregates': set(aggregates)}
    return found


@pytest.fixture
def placement_server(request, tmp_path):
    server = placement.PlacementServer(tmp_path / 'placement')
    server.write_config()
    server.db_sync()
    request.addfinalizer(server.stop)
    server.start()
    return server


@pytest.fixture
def placement_cluster(request, tmp_path, transport_url, database, placement_server):
    cluster = base.Cluster(tmp_path, transport_url, database,
                           conf={'placement': client_conf(placement_server.url)},
                           own_vhost=transport_url != base.TRANSPORT_URL)
    cluster.placement_server = placement_server
    request.node.minisched_clusters = getattr(request.node, 'minisched_clusters', []) + [cluster]
    request.addfinalizer(cluster.cleanup_broker)
    request.addfinalizer(cluster.kill_all)
    cluster.sync_db()
    return cluster
