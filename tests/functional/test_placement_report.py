"""Computes report to the real Placement as Nova's do: one root provider per compute node,
its inventory with Nova's ratios and reserved amounts, the traits of the driver's
capabilities (compared with Nova 34's own fake driver and capability map),
``COMPUTE_STATUS_DISABLED`` while disabled; conflicts retried, a restart heals."""
import json
import subprocess
import sys

import os_traits
import pytest

from minisched import context as ms_context
from tests.functional import base
from tests.functional.placement_helpers import providers
from tests.functional.placement_helpers import report_client

pytestmark = pytest.mark.functional

REFRESH = {'DEFAULT': {'update_resources_interval': 1}}
#: compute2 splits its 8 CPUs: 0-3 shared (VCPU), 4-7 dedicated (PCPU), and sets a ratio.
SPLIT = {'compute': {'cpu_shared_set': '0-3', 'cpu_dedicated_set': '4-7'},
         'DEFAULT': {'update_resources_interval': 1, 'cpu_allocation_ratio': 2.0}}


#: Run by Nova 34 in a process of its own (Nova registers its options on the same global
#: config as minisched).
_NOVA_TRAITS = """
import json
from nova.virt import driver, fake
print(json.dumps(sorted(trait for name, trait in driver.CAPABILITY_TRAITS_MAP.items()
                        if fake.FakeDriver.capabilities.get(name))))
"""


def nova_fake_driver_traits():
    """The traits Nova 34's fake driver reports: its capabilities through Nova's map."""
    out = subprocess.run([sys.executable, '-c', _NOVA_TRAITS], capture_output=True,
                         text=True, check=True).stdout
    return set(json.loads(out)) | {os_traits.COMPUTE_NODE, os_traits.OWNER_NOVA}


def inventory(total, ratio, reserved=0):
    return {'total': total, 'reserved': reserved, 'min_unit': 1, 'max_unit': total,
            'step_size': 1, 'allocation_ratio': ratio}


def compute_nodes(cluster):
    return {row['hypervisor_hostname']: row for row in cluster.query(
        'SELECT uuid, hypervisor_hostname, vcpus, memory_mb, local_gb FROM compute_nodes '
        'WHERE deleted = 0')}


def test_computes_report_providers_inventories_and_traits(placement_cluster, tmp_path):
    cluster = placement_cluster
    cluster.start_conductor()
    cluster.start_compute('compute1', vcpus=4, memory_mb=8192, local_gb=100, conf=REFRESH)
    cluster.start_compute('compute2', vcpus=8, memory_mb=16384, local_gb=200, conf=SPLIT)
    client = report_client(tmp_path, cluster.placement_server.url)
    found = base.wait_for(lambda: (lambda rps: rps if len(rps) == 2 and all(
        rp['inventory'] for rp in rps.values()) else None)(providers(client)),
        timeout=60, message='two providers with inventories')

    nodes = compute_nodes(cluster)
    assert {name: rp['uuid'] for name, rp in found.items()} == {
        name: node['uuid'] for name, node in nodes.items()}
    assert found['compute1']['inventory'] == {
        'VCPU': inventory(4, 4.0), 'MEMORY_MB': inventory(8192, 1.0, reserved=512),
        'DISK_GB': inventory(100, 1.0)}
    assert found['compute2']['inventory'] == {
        'VCPU': inventory(4, 2.0), 'PCPU': inventory(4, 1.0),
        'MEMORY_MB': inventory(16384, 1.0, reserved=512), 'DISK_GB': inventory(200, 1.0)}
    expected_traits = nova_fake_driver_traits()
    assert found['compute1']['traits'] == expected_traits
    assert found['compute2']['traits'] == expected_traits

    # Disabled: the trait appears (the compute is told at once: test_placement_service_status).
    cluster.run_manage('service', 'disable', 'compute1', 'minisched-compute')
    assert os_traits.COMPUTE_STATUS_DISABLED in providers(client)['compute1']['traits']
    # Forced down, the compute is not told of the enable: its next refresh removes the
    # trait. Another writer bumps the provider's generation first (a trait of the
    # operator's): the refresh's write conflicts, it reads the provider again and keeps it.
    cluster.run_manage('service', 'force-down', 'compute1', 'minisched-compute')
    ctx = ms_context.get_admin_context()
    uuid = found['compute1']['uuid']
    generation, traits = client.get_traits(ctx, uuid)
    client.set_traits(ctx, uuid, generation, set(traits) | {'CUSTOM_OPERATOR'})
    enabled = cluster.run_manage('service', 'enable', 'compute1', 'minisched-compute')
    assert 'Compute service on host compute1 is down' in enabled.stderr
    base.wait_for(lambda: os_traits.COMPUTE_STATUS_DISABLED not in
                  providers(client)['compute1']['traits'], timeout=30,
                  message='COMPUTE_STATUS_DISABLED gone from compute1')
    assert providers(client)['compute1']['traits'] == expected_traits | {'CUSTOM_OPERATOR'}
    assert 'changed in Placement meanwhile' in cluster.log('compute1')
    cluster.run_manage('service', 'force-down', '--unset', 'compute1', 'minisched-compute')

    # A host aggregate is mirrored: the host's provider joins the aggregate of its uuid.
    cluster.run_manage('aggregate', 'create', 'agg1')
    cluster.run_manage('aggregate', 'add-host', 'agg1', 'compute1')
    agg_uuid = cluster.query("SELECT uuid FROM aggregates WHERE name = 'agg1'")[0]['uuid']
    mirrored = providers(client)
    assert (mirrored['compute1']['aggregates'], mirrored['compute2']['aggregates']) == (
        {agg_uuid}, set())
    cluster.run_manage('aggregate', 'remove-host', 'agg1', 'compute1')
    assert providers(client)['compute1']['aggregates'] == set()


def test_a_restarted_compute_heals_its_provider(placement_cluster, tmp_path):
    cluster = placement_cluster
    cluster.start_conductor()
    cluster.start_compute('compute1', vcpus=4, memory_mb=8192, local_gb=100, conf=REFRESH)
    client = report_client(tmp_path, cluster.placement_server.url)
    before = base.wait_for(lambda: (lambda rps: rps if rps.get('compute1', {}).get(
        'inventory') else None)(providers(client)), timeout=60, message='compute1 reported')
    cluster.stop('compute1')
    del cluster.processes['compute1']

    # Placement changed while the compute was away: a wrong total, a trait removed.
    ctx = ms_context.get_admin_context()
    uuid = before['compute1']['uuid']
    generation, inv = client.get_inventory(ctx, uuid)
    inv['VCPU'] = dict(inv['VCPU'], total=99, max_unit=99)
    generation = client.set_inventory(ctx, uuid, generation, inv)
    client.set_traits(ctx, uuid, generation, before['compute1']['traits'] -
                      {os_traits.COMPUTE_NODE})

    cluster.start_compute('compute1', vcpus=4, memory_mb=8192, local_gb=100, conf=REFRESH)
    healed = base.wait_for(lambda: (lambda rps: rps if rps['compute1']['inventory']['VCPU'][
        'total'] == 4 and os_traits.COMPUTE_NODE in rps['compute1']['traits'] else None)(
        providers(client)), timeout=60, message='compute1 healed')
    assert list(healed) == ['compute1']  # the same provider, not a second one
    assert healed['compute1']['uuid'] == uuid
    assert healed['compute1']['inventory'] == before['compute1']['inventory']
    assert healed['compute1']['traits'] == before['compute1']['traits']
