"""Disabling or enabling a compute service reaches Placement at once, as in Nova 34:
``minisched-manage service disable/enable`` calls the compute's ``set_host_enabled`` (compute
RPC), which adds or removes ``COMPUTE_STATUS_DISABLED`` on its providers before the command
returns; the periodic resource update (an hour apart here) plays no part. A compute that is
down is not called: a warning, the command succeeds, and the compute sets the trait when it
starts again."""
import os_traits
import pytest

from minisched import context as ms_context
from tests.functional import base
from tests.functional.placement_helpers import providers
from tests.functional.placement_helpers import report_client

pytestmark = pytest.mark.functional

#: The periodic resource update runs at start-up and then not within the test.
HOURLY = {'DEFAULT': {'update_resources_interval': 3600}}
SIZES = {'vcpus': 4, 'memory_mb': 8192, 'local_gb': 100}
DISABLED = os_traits.COMPUTE_STATUS_DISABLED


def traits_of(client, host):
    return providers(client)[host]['traits']


def test_disable_and_enable_set_the_trait_at_once(placement_cluster, tmp_path):
    cluster = placement_cluster
    cluster.start_conductor()
    cluster.start_compute('compute1', conf=HOURLY, **SIZES)
    cluster.start_compute('compute2', conf=HOURLY, **SIZES)
    client = report_client(tmp_path, cluster.placement_server.url)
    base.wait_for(lambda: (lambda rps: len(rps) == 2 and all(
        rp['inventory'] for rp in rps.values()))(providers(client)), timeout=60,
        message='both computes reported to Placement')
    assert DISABLED not in traits_of(client, 'compute1')

    # An operator's trait set meanwhile (the provider's generation moves on) is kept: the
    # compute reads the provider afresh before it writes.
    ctx = ms_context.get_admin_context()
    uuid = providers(client)['compute1']['uuid']
    generation, traits = client.get_traits(ctx, uuid)
    client.set_traits(ctx, uuid, generation, set(traits) | {'CUSTOM_OPERATOR'})

    disabled = cluster.run_manage('service', 'disable', 'compute1', 'minisched-compute',
                                  '--reason', 'maintenance')
    assert disabled.stderr == ''
    found = providers(client)
    assert DISABLED in found['compute1']['traits']
    assert 'CUSTOM_OPERATOR' in found['compute1']['traits']
    assert DISABLED not in found['compute2']['traits']

    cluster.run_manage('service', 'enable', 'compute1', 'minisched-compute')
    assert traits_of(client, 'compute1') == set(traits) | {'CUSTOM_OPERATOR'}
    # Said by the compute, not by its periodic update (which has not run again).
    assert cluster.log('compute1').count('Traits of resource provider') == 1


def test_a_compute_that_is_down_gets_the_trait_when_it_starts(placement_cluster, tmp_path):
    cluster = placement_cluster
    cluster.start_conductor()
    cluster.start_compute('compute1', conf=HOURLY, **SIZES)
    client = report_client(tmp_path, cluster.placement_server.url)
    base.wait_for(lambda: providers(client).get('compute1', {}).get('inventory'), timeout=60,
                  message='compute1 reported to Placement')

    cluster.stop('compute1')
    del cluster.processes['compute1']
    reports = int(cluster.services()[('minisched-compute', 'compute1')]['reports'])
    cluster.run_manage('service', 'force-down', 'compute1', 'minisched-compute')
    result = cluster.run_manage('service', 'disable', 'compute1', 'minisched-compute')
    assert result.returncode == 0
    assert 'Compute service on host compute1 is down. The COMPUTE_STATUS_DISABLED trait ' \
           'will be synchronized when the service is restarted.' in result.stderr
    assert 'Service minisched-compute on host compute1 disabled.' in result.stdout
    assert DISABLED not in traits_of(client, 'compute1')

    cluster.run_manage('service', 'force-down', '--unset', 'compute1', 'minisched-compute')
    cluster.start_compute('compute1', conf=HOURLY, **SIZES)
    base.wait_for(lambda: DISABLED in traits_of(client, 'compute1'), timeout=60,
                  message='COMPUTE_STATUS_DISABLED set by the restarted compute1')
    # Up again once the new process's first state report is in (Nova's servicegroup reads the
    # report's last_seen_up, not the process): the enable then goes through the compute at
    # once. The stopped process's last report alone can read "up" for service_down_time after
    # --unset and be stale by the time the enable runs, so wait for a report of the new one.
    def reported_again():
        row = cluster.services()[('minisched-compute', 'compute1')]
        return row['state'] == 'up' and int(row['reports']) > reports
    base.wait_for(reported_again, timeout=60, message='a state report from the new compute1')
    enabled = cluster.run_manage('service', 'enable', 'compute1', 'minisched-compute')
    assert enabled.stderr == ''
    assert DISABLED not in traits_of(client, 'compute1')
