"""The scheduler's Nova 34 path on the real Placement: allocation candidates, filters and
weighers on the candidates' hosts, the claim of the chosen one; after every scenario the
allocations in Placement are exactly the live instances' flavors on their hosts."""
import os_traits
import pika
import pytest

from minisched import context as ms_context
from tests.functional import base
from tests.functional import build_helpers
from tests.functional.placement_helpers import providers
from tests.functional.placement_helpers import report_client

pytestmark = pytest.mark.functional

#: Nova 34's default filters (Placement does the resource filters' work).
SCHEDULER_CONF = {'filter_scheduler': {'enabled_filters': ','.join([
    'ComputeFilter', 'ComputeCapabilitiesFilter', 'ImagePropertiesFilter',
    'ServerGroupAntiAffinityFilter', 'ServerGroupAffinityFilter'])}}
COMPUTE_CONF = {'DEFAULT': {'update_resources_interval': 1}}
#: compute2's CPUs 0-3 are shared (VCPU), 4-7 dedicated (PCPU), in one NUMA cell (a pinned
#: instance needs a host NUMA topology).
COMPUTES = {'compute1': {'vcpus': 4, 'memory_mb': 8192, 'local_gb': 100},
            'compute2': {'vcpus': 8, 'memory_mb': 8192, 'local_gb': 100,
                         'conf': {'compute': {'cpu_shared_set': '0-3',
                                              'cpu_dedicated_set': '4-7'},
                                  'fake_driver': {'numa_nodes': 1}}}}


def allocations(client):
    """``{consumer: (provider name, resources)}`` of every allocation in Placement."""
    ctx = ms_context.get_admin_context()
    found = {}
    for rp in client.get_providers(ctx):
        for consumer, alloc in client.get_allocations_for_resource_provider(
                ctx, rp['uuid']).items():
            assert consumer not in found, 'an instance allocated on two providers'
            found[consumer] = (rp['name'], alloc['resources'])
    return found


def expected_allocations(builder, flavors):
    """What the live instances should hold: their flavor's resources on their host."""
    rows = builder.cluster.query(
        "SELECT uuid, host, instance_type_id FROM instances WHERE deleted = 0 AND "
        "vm_state = 'active'")
    by_id = {flavor.id: resources for flavor, resources in flavors}
    return {row['uuid']: (row['host'], by_id[row['instance_type_id']]) for row in rows}


def audit(client, builder, flavors):
    """After each scenario: the allocations equal the instances (none leaked or missing)."""
    expected = expected_allocations(builder, flavors)
    base.wait_for(lambda: allocations(client) == expected, timeout=30,
                  message='allocations %s to equal the instances %s' % (
                      allocations(client), expected))


@pytest.fixture
def placement_builds(placement_cluster, tmp_path):
    cluster = placement_cluster
    build_helpers.start(cluster, COMPUTES, scheduler_conf=SCHEDULER_CONF,
                        compute_conf=COMPUTE_CONF)
    client = report_client(tmp_path, cluster.placement_server.url)
    base.wait_for(lambda: len([rp for rp in providers(client).values() if rp['inventory']])
                  == 2, timeout=60, message='both computes reported to Placement')
    builder = build_helpers.Client(cluster)
    yield cluster, client, builder
    builder.close()


def test_builds_claim_and_deletes_give_back(placement_builds):
    cluster, client, builder = placement_builds
    small = builder.flavor('small', vcpus=1, memory_mb=1024, root_gb=10)
    flavors = [(small, {'VCPU': 1, 'MEMORY_MB': 1024, 'DISK_GB': 10})]

    first = builder.boot(small)
    assert builder.wait_built(first)[first[0]].vm_state == 'active'
    audit(client, builder, flavors)

    several = builder.boot(small, num_instances=3)
    built = builder.wait_built(several)
    assert {i.vm_state for i in built.values()} == {'active'}
    audit(client, builder, flavors)

    heal_and_audit(cluster, client, builder, flavors, first[0])

    builder.delete(several[0])
    builder.wait_deleted(several[:1])
    audit(client, builder, flavors)
    for uuid in first + several[1:]:
        builder.delete(uuid)
    builder.wait_deleted(first + several)
    audit(client, builder, flavors)
    assert allocations(client) == {}


def heal_and_audit(cluster, client, builder, flavors, instance_uuid):
    """minisched-manage placement heal_allocations recreates a lost allocation, audit finds
    and deletes an orphaned one; the exit codes are nova-manage's."""
    ctx = ms_context.get_admin_context()
    assert cluster.run_manage('placement', 'audit').returncode == 0
    assert cluster.run_manage('placement', 'heal_allocations', check=False).returncode == 4
    client.delete_allocation_for_instance(ctx, instance_uuid, force=True)
    dry = cluster.run_manage('placement', 'heal_allocations', '--dry-run')
    assert instance_uuid in dry.stdout and instance_uuid not in allocations(client)
    healed = cluster.run_manage('placement', 'heal_allocations', '--verbose')
    assert 'Created allocations for instance %s' % instance_uuid in healed.stdout
    audit(client, builder, flavors)

    orphan = '00000000-0000-0000-0000-000000000001'
    rp_uuid = providers(client)['compute1']['uuid']
    assert client.put_allocations(ctx, orphan, {
        'allocations': {rp_uuid: {'resources': {'VCPU': 1}}}, 'project_id': 'p',
        'user_id': 'u', 'consumer_generation': None})
    found = cluster.run_manage('placement', 'audit', check=False)
    assert found.returncode == 3 and orphan in found.stdout, found.stdout
    assert cluster.run_manage('placement', 'audit', '--delete', check=False).returncode == 4
    assert cluster.run_manage('placement', 'audit').returncode == 0
    audit(client, builder, flavors)


def test_disabled_compute_traits_resources_and_dedicated_cpus(placement_builds):
    cluster, client, builder = placement_builds
    ctx = ms_context.get_admin_context()
    small = builder.flavor('small', vcpus=1, memory_mb=1024, root_gb=10)
    fast = builder.flavor('fast', vcpus=1, memory_mb=1024, root_gb=10,
                          extra_specs={'trait:CUSTOM_FAST': 'required',
                                       'resources:DISK_GB': '5'})
    pinned = builder.flavor('pinned', vcpus=2, memory_mb=1024, root_gb=10,
                            extra_specs={'hw:cpu_policy': 'dedicated'})
    flavors = [(small, {'VCPU': 1, 'MEMORY_MB': 1024, 'DISK_GB': 10}),
               (fast, {'VCPU': 1, 'MEMORY_MB': 1024, 'DISK_GB': 5}),
               (pinned, {'PCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 10})]

    # A disabled compute is skipped through its trait (Placement does not offer it).
    cluster.run_manage('service', 'disable', 'compute1', 'minisched-compute')
    base.wait_for(lambda: os_traits.COMPUTE_STATUS_DISABLED in
                  providers(client)['compute1']['traits'], timeout=30,
                  message='compute1 disabled in Placement')
    built = builder.wait_built(builder.boot(small, num_instances=2))
    assert {i.host for i in built.values()} == {'compute2'}
    audit(client, builder, flavors)
    cluster.run_manage('service', 'enable', 'compute1', 'minisched-compute')

    # trait: and resources: extra specs: only a provider with the trait, the disk overridden.
    fast_build = builder.wait_built(builder.boot(fast))
    assert [i.vm_state for i in fast_build.values()] == ['error']
    audit(client, builder, flavors)
    rp = providers(client)['compute1']
    client.set_traits(ctx, rp['uuid'], rp['generation'], rp['traits'] | {'CUSTOM_FAST'})
    fast_build = builder.wait_built(builder.boot(fast))
    assert [(i.vm_state, i.host) for i in fast_build.values()] == [('active', 'compute1')]
    audit(client, builder, flavors)

    # hw:cpu_policy=dedicated asks for PCPU: only compute2 has them.
    pinned_build = builder.wait_built(builder.boot(pinned))
    assert [(i.vm_state, i.host) for i in pinned_build.values()] == [('active', 'compute2')]
    audit(client, builder, flavors)


def test_a_refused_claim_moves_to_the_alternate_and_failures_give_back(placement_cluster,
                                                                       tmp_path):
    """compute1 (the most free RAM, so the first choice) refuses every spawn: the compute
    gives back the allocation, the conductor claims the alternate's allocation request and
    the instance is built on compute2; with compute2 full too the build fails with nothing
    left allocated."""
    cluster = placement_cluster
    refusing = {'fake_driver': {'spawn_failure': 'reschedule'}}
    build_helpers.start(cluster, {'compute1': {'vcpus': 4, 'memory_mb': 16384, 'local_gb': 100,
                                               'conf': refusing},
                                  'compute2': {'vcpus': 4, 'memory_mb': 4096,
                                               'local_gb': 100}},
                        scheduler_conf=SCHEDULER_CONF, compute_conf=COMPUTE_CONF)
    client = report_client(tmp_path, cluster.placement_server.url)
    base.wait_for(lambda: len([rp for rp in providers(client).values() if rp['inventory']])
                  == 2, timeout=60, message='both computes reported to Placement')
    builder = build_helpers.Client(cluster)
    try:
        small = builder.flavor('small', vcpus=1, memory_mb=2048, root_gb=10)
        flavors = [(small, {'VCPU': 1, 'MEMORY_MB': 2048, 'DISK_GB': 10})]
        uuid = builder.boot(small)[0]
        built = builder.wait_built([uuid])[uuid]
        assert (built.vm_state, built.host) == ('active', 'compute2')
        assert [(e.event, e.host, e.result) for e in builder.events(uuid)
                if e.event == 'compute_build_and_run_instance'] == [
            ('compute_build_and_run_instance', 'compute1', 'Error'),
            ('compute_build_and_run_instance', 'compute2', 'Success')]
        audit(client, builder, flavors)

        # compute2 has 4096 - 512 reserved: no room for a second; compute1 refuses it.
        failed = builder.wait_built(builder.boot(small))
        assert [i.vm_state for i in failed.values()] == ['error']
        audit(client, builder, flavors)
    finally:
        builder.close()


def test_placement_down_gives_no_valid_host_and_the_computes_report_again(placement_builds):
    """With Placement stopped a build ends in ERROR with the reason (no stuck build, nothing
    allocated) and a compute's report fails; started again on its port, the compute's next
    refresh makes that report and builds claim again."""
    cluster, client, builder = placement_builds
    small = builder.flavor('small', vcpus=1, memory_mb=1024, root_gb=10)
    flavors = [(small, {'VCPU': 1, 'MEMORY_MB': 1024, 'DISK_GB': 10})]
    server = cluster.placement_server
    server.stop()

    uuid = builder.boot(small)[0]
    assert builder.wait_built([uuid])[uuid].vm_state == 'error'
    assert any('Placement service could not be reached' in fault
               for fault in builder.faults(uuid)), builder.faults(uuid)

    # A change to report while Placement is down: the compute's write fails, and is made
    # again by a refresh once Placement is back.
    # The compute is told at once (set_host_enabled) and cannot write either: a warning,
    # and the command succeeds.
    cluster.run_manage('service', 'disable', 'compute1', 'minisched-compute')
    assert 'An error occurred while updating COMPUTE_STATUS_DISABLED trait' in cluster.log(
        'compute1')
    base.wait_for(lambda: 'next refresh tries again' in cluster.log('compute1'), timeout=30,
                  message='compute1 to have failed a refresh while Placement was down')
    server.start()
    base.wait_for(lambda: os_traits.COMPUTE_STATUS_DISABLED in
                  providers(client)['compute1']['traits'], timeout=30,
                  message='compute1 disabled in Placement once it is back')
    built = builder.wait_built(builder.boot(small))
    assert [(i.vm_state, i.host) for i in built.values()] == [('active', 'compute2')]
    audit(client, builder, flavors)


@pytest.mark.parametrize('cast', ['queued', 'lost'])
def test_a_delete_its_compute_missed_is_finished_when_the_compute_starts(placement_builds,
                                                                         cast):
    """Deleted while its compute is down: the instance stays DELETING. The compute, started
    again, finishes the deletion from its start-up (Nova's _init_instance) and gives the
    allocation back: whether the API's terminate cast still waits in its queue (it then
    finds the instance gone, without an error) or was lost (a compute SIGKILLed after it
    took the message: left DELETING for ever before)."""
    cluster, client, builder = placement_builds
    small = builder.flavor('small', vcpus=1, memory_mb=1024, root_gb=10)
    flavors = [(small, {'VCPU': 1, 'MEMORY_MB': 1024, 'DISK_GB': 10})]
    uuids = builder.boot(small, num_instances=2)
    built = builder.wait_built(uuids)
    audit(client, builder, flavors)
    gone, kept = uuids
    host = built[gone].host

    build_helpers.retire(cluster, host)
    builder.delete(gone)
    assert builder.get(gone).task_state == 'deleting'
    if cast == 'lost':
        connection = pika.BlockingConnection(base.pika_parameters(cluster.transport_url))
        try:
            assert connection.channel().queue_purge('compute.%s' % host).method.message_count == 1
        finally:
            connection.close()
    sizes = {k: v for k, v in COMPUTES[host].items() if k != 'conf'}
    cluster.start_compute(host, conf=build_helpers.merge_conf(
        COMPUTE_CONF, COMPUTES[host].get('conf')), **sizes)

    builder.wait_deleted([gone])
    assert builder.get(kept).vm_state == 'active'
    assert 'Service started deleting instance %s during the previous run' % gone in \
        cluster.log(host)
    if cast == 'queued':
        base.wait_for(lambda: 'Instance %s disappeared during terminate' % gone in
                      cluster.log(host), timeout=30, message='the queued terminate of %s' % gone)
        events = {e.event: e.result for e in builder.events(gone)}
        assert events['compute_terminate_instance'] == 'Success', events
    audit(client, builder, flavors)
    assert 'Traceback' not in cluster.log(host)
