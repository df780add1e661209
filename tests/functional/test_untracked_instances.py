"""Affinity and Same/DifferentHost decisions with and without ``track_instance_changes``.

With ``[filter_scheduler] track_instance_changes = False`` the computes send the schedulers
no instance lists, and each request reads its candidates' instances from the database (as
Nova does). A conductor, a scheduler with two workers and three fake computes of distinct
sizes run as processes on the real RabbitMQ (a vhost of the test session's own); the same
sequence of builds, each waited for, must land on the same hosts either way.
"""
import pytest

from tests.functional import build_helpers

pytestmark = [pytest.mark.functional, pytest.mark.timeout(300)]

RATIOS = {'ram_allocation_ratio': 1.0, 'cpu_allocation_ratio': 4.0,
          'disk_allocation_ratio': 1.0, 'reserved_host_memory_mb': 0}
#: RAMWeigher (the only weigher) prefers big, then mid, then small, whatever this test
#: places.
COMPUTES = {'big': {'vcpus': 8, 'memory_mb': 16384, 'local_gb': 50},
            'mid': {'vcpus': 8, 'memory_mb': 8192, 'local_gb': 50},
            'small': {'vcpus': 8, 'memory_mb': 4096, 'local_gb': 50}}
FILTERS = ('ComputeFilter,RamFilter,SameHostFilter,DifferentHostFilter,'
           'ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter')
#: Where each build lands, tracked or not.
EXPECTED = {'a': 'big', 'with-a': 'big', 'apart-from-a': 'mid', 'anti-1': 'big',
            'anti-2': 'mid', 'anti-3': 'small', 'affine-1': 'big', 'affine-2': 'big'}


@pytest.fixture(params=[True, False], ids=['tracked', 'untracked'])
def client(request, cluster):
    tracked = {'filter_scheduler': {'track_instance_changes': request.param}}
    build_helpers.start(cluster, COMPUTES, compute_conf=dict(tracked, DEFAULT=RATIOS),
                        conductor_conf=tracked,
                        scheduler_conf={'filter_scheduler': dict(
                            tracked['filter_scheduler'], enabled_filters=FILTERS,
                            weight_classes='RAMWeigher')})
    client = build_helpers.Client(cluster)
    request.addfinalizer(client.close)
    return client


def test_affinity_and_same_different_host_land_alike(client):
    flavor = client.flavor('m1.small', vcpus=1, memory_mb=512, root_gb=1)
    landed, uuids = {}, {}

    def build(name, **kwargs):
        uuid, = client.boot(flavor, **kwargs)
        instance = client.wait_built([uuid], timeout=90)[uuid]
        assert instance.vm_state == 'active', (name, client.faults(uuid))
        landed[name], uuids[name] = instance.host, uuid

    build('a')
    build('with-a', scheduler_hints={'same_host': [uuids['a']]})
    build('apart-from-a', scheduler_hints={'different_host': [uuids['a']]})
    anti = client.group('anti', 'anti-affinity')
    for name in ('anti-1', 'anti-2', 'anti-3'):
        build(name, group=anti)
    affine = client.group('affine', 'affinity')
    for name in ('affine-1', 'affine-2'):
        build(name, group=affine)
    assert landed == EXPECTED
