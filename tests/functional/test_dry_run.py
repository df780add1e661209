"""``minisched-manage scheduler select`` is a dry run: it leaves no consumption behind.

A conductor, a scheduler with two workers and two fake computes run as processes on the real
RabbitMQ (a vhost of the test session's own). Each compute has room for two instances of the
flavor, so one request of four fills the cluster. Dry runs of that size, enough for each
worker to answer twice, all succeed and leave room: a real build of four instances then
lands all four.
"""
import pytest

from tests.functional import build_helpers

pytestmark = [pytest.mark.functional, pytest.mark.timeout(240)]

RATIOS = {'ram_allocation_ratio': 1.0, 'cpu_allocation_ratio': 1.0,
          'disk_allocation_ratio': 1.0, 'reserved_host_memory_mb': 0}
COMPUTES = {'c1': {'vcpus': 4, 'memory_mb': 2048, 'local_gb': 20},
            'c2': {'vcpus': 4, 'memory_mb': 2048, 'local_gb': 20}}
#: Instances of the flavor (1024 MB) the cluster holds, by RAM.
CAPACITY = 4
SELECT = ('scheduler', 'select', '--ram', 1024, '--vcpus', 1, '--disk', 1)


@pytest.fixture
def client(request, cluster):
    build_helpers.start(cluster, COMPUTES, compute_conf={'DEFAULT': RATIOS})
    client = build_helpers.Client(cluster)
    request.addfinalizer(client.close)
    return client


def _selected_hosts(output):
    """The Host column of ``scheduler select``'s table (one row per instance)."""
    rows = [line.strip('|').split('|') for line in output.splitlines()
            if line.startswith('|')]
    column = [cell.strip() for cell in rows[0]].index('Host')
    return [row[column].strip() for row in rows[1:]]


def test_dry_runs_that_fill_the_cluster_leave_room_for_the_build(cluster, client):
    for _ in range(4):  # two workers: each answers at least once, likely twice
        result = cluster.run_manage(*SELECT, '--num-instances', CAPACITY)
        assert sorted(_selected_hosts(result.stdout)) == ['c1', 'c1', 'c2', 'c2']
    # The cluster is full at this size: one more does not fit, even as a dry run.
    result = cluster.run_manage(*SELECT, '--num-instances', CAPACITY + 1, check=False)
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'RamFilter' in result.stderr

    flavor = client.flavor('m1.half', vcpus=1, memory_mb=1024, root_gb=1)
    uuids = client.boot(flavor, num_instances=CAPACITY)
    built = client.wait_built(uuids, timeout=90)
    assert [instance.vm_state for instance in built.values()] == ['active'] * CAPACITY
    assert sorted(instance.host for instance in built.values()) == ['c1', 'c1', 'c2', 'c2']
