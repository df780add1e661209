"""``minisched-manage placement sync_aggregates`` on the real Placement, as nova-manage's:
host aggregates made while Placement was off reach the providers' aggregates, nothing is
removed, and the exit codes and messages of a missing provider (2), an unmapped host (4)
and a host with two compute nodes (1) are Nova's."""
import pytest

from minisched import context as ms_context
from minisched import objects
from minisched.objects import aggregate as aggregate_obj
from tests.functional import base
from tests.functional import scheduler_helpers
from tests.functional.placement_helpers import providers
from tests.functional.placement_helpers import report_client

pytestmark = pytest.mark.functional

SIZES = {'vcpus': 4, 'memory_mb': 8192, 'local_gb': 100}


def aggregates_of(client):
    return {name: rp['aggregates'] for name, rp in providers(client).items()}


def set_members(cluster, members):
    """Host aggregates as an operator made them before turning Placement on: written to the
    database only (``{name: [hosts]}``, created if new), never mirrored. Their uuids."""
    objects.register_all()
    with scheduler_helpers.cluster_database(cluster) as ctxt:
        found = {agg.name: agg for agg in aggregate_obj.AggregateList.get_all(ctxt)}
        for name, hosts in members.items():
            if name not in found:
                found[name] = aggregate_obj.Aggregate(ctxt, name=name)
                found[name].create()
            for host in set(found[name].hosts or ()) - set(hosts):
                found[name].delete_host(host)
            for host in sorted(set(hosts) - set(found[name].hosts or ())):
                found[name].add_host(host)
        return {name: agg.uuid for name, agg in found.items()}


def test_sync_aggregates_mirrors_host_aggregates(placement_cluster, tmp_path):
    cluster = placement_cluster
    cluster.start_conductor()
    for host in ('compute1', 'compute2'):
        cluster.start_compute(host, **SIZES)
    client = report_client(tmp_path, cluster.placement_server.url)
    base.wait_for(lambda: len(providers(client)) == 2, timeout=60,
                  message='both computes reported to Placement')
    uuids = set_members(cluster, {'agg1': ['compute1'], 'agg2': ['compute2'],
                                  'shared': ['compute1', 'compute2']})
    rps = {name: rp['uuid'] for name, rp in providers(client).items()}
    assert aggregates_of(client) == {'compute1': set(), 'compute2': set()}

    synced = cluster.run_manage('placement', 'sync_aggregates', '--verbose')
    assert aggregates_of(client) == {'compute1': {uuids['agg1'], uuids['shared']},
                                     'compute2': {uuids['agg2'], uuids['shared']}}
    assert synced.stdout.splitlines()[:3] == [
        'Filling in missing placement aggregates', 'Processing aggregate: agg1',
        'Processing host: compute1']
    for host in ('compute1', 'compute2'):
        assert ('Successfully added host (%s) and provider (%s) to aggregate (%s).'
                % (host, rps[host], uuids['shared'])) in synced.stdout
    assert cluster.run_manage('placement', 'sync_aggregates').stdout == ''

    # A host removed from an aggregate stays in the Placement aggregate (Nova adds only).
    set_members(cluster, {'shared': ['compute2']})
    cluster.run_manage('placement', 'sync_aggregates')
    assert aggregates_of(client)['compute1'] == {uuids['agg1'], uuids['shared']}

    # compute2's provider is gone from Placement: exit 2, Nova's message.
    cluster.stop('compute2')
    del cluster.processes['compute2']
    assert client.delete_provider(ms_context.get_admin_context(), rps['compute2'])
    missing = cluster.run_manage('placement', 'sync_aggregates', check=False)
    assert (missing.returncode, missing.stdout) == (
        2, 'Failed to get aggregates for resource provider with UUID %s\n' % rps['compute2'])
    # Its compute starts again, makes the same provider, and the next run puts it back.
    cluster.start_compute('compute2', **SIZES)
    base.wait_for(lambda: 'compute2' in providers(client), timeout=60,
                  message='compute2 reported again')
    cluster.run_manage('placement', 'sync_aggregates')
    assert aggregates_of(client)['compute2'] == {uuids['agg2'], uuids['shared']}

    # With cells, a host is found through its host mapping: an unmapped one is listed
    # (exit 4) while the others are synced.
    cluster.run_manage('cell', 'create', '--name', 'cell1')
    cluster.run_manage('cell', 'discover_hosts')
    cluster.start_compute('compute3', **SIZES)
    late = set_members(cluster, {'late': ['compute3', 'compute1']})['late']
    unmapped = cluster.run_manage('placement', 'sync_aggregates', check=False)
    assert unmapped.returncode == 4, unmapped.stdout
    assert unmapped.stdout == (
        'The following hosts were found in host aggregates but no host mappings were found '
        'in the API database. Run "minisched-manage cell discover_hosts" and then retry. '
        'Missing: compute3\n')
    assert late in aggregates_of(client)['compute1']
    assert aggregates_of(client)['compute3'] == set()
    cluster.run_manage('cell', 'discover_hosts')
    cluster.run_manage('placement', 'sync_aggregates')
    assert aggregates_of(client)['compute3'] == {late}


def test_sync_aggregates_stops_at_a_host_with_two_compute_nodes(placement_cluster, tmp_path):
    cluster = placement_cluster
    cluster.start_conductor()
    cluster.start_compute('ironic1', conf={'fake_driver': {'nodes': 'node-a,node-b'}}, **SIZES)
    client = report_client(tmp_path, cluster.placement_server.url)
    base.wait_for(lambda: len(providers(client)) == 2, timeout=60,
                  message='both nodes of ironic1 reported to Placement')
    cluster.run_manage('aggregate', 'create', 'agg1')
    cluster.run_manage('aggregate', 'add-host', 'agg1', 'ironic1')
    result = cluster.run_manage('placement', 'sync_aggregates', check=False)
    assert (result.returncode, result.stdout) == (
        1, 'Unexpected number of compute node records (2) found for host ironic1. There '
           'should only be a one-to-one mapping.\n')
