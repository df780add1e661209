"""Service processes: registration, reports, up/down, signals, no DB in compute, bad config."""
import signal
import time

import pytest
import sqlalchemy as sa

from tests.functional import base
from tests.functional.fixtures import BACKENDS

pytestmark = [pytest.mark.functional, pytest.mark.timeout(120)]

COMPUTES = {
    'c1': {'vcpus': 4, 'memory_mb': 4096, 'local_gb': 40},
    'c2': {'vcpus': 8, 'memory_mb': 8192, 'local_gb': 80},
    'c3': {'vcpus': 16, 'memory_mb': 16384, 'local_gb': 160},
}
#: First state report after 5 s (servicegroup INITIAL_REPORTING_DELAY), then each interval.
FIRST_REPORT_TIMEOUT = 15


def start_cluster(cluster, hosts=tuple(COMPUTES)):
    cluster.start_conductor()
    for host in hosts:
        cluster.start_compute(host, wait=False, **COMPUTES[host])
    cluster.wait_ready(*hosts)


def compute_state(cluster, host):
    return cluster.services()[('minisched-compute', host)]['state']


@pytest.mark.parametrize('database', BACKENDS, indirect=True)
def test_services_report_up_with_growing_counts(cluster):
    start_cluster(cluster)
    services = cluster.services()
    binaries = sorted(binary for binary, host in services)
    assert binaries == ['minisched-compute'] * len(COMPUTES) + ['minisched-conductor']
    assert sorted(host for binary, host in services if binary == 'minisched-compute') == \
        sorted(COMPUTES)
    assert {key: row['state'] for key, row in services.items()} == \
        {key: 'up' for key in services}

    before = cluster.report_counts()
    base.wait_for(lambda: all(count >= before[key] + 2
                              for key, count in cluster.report_counts().items()),
                  FIRST_REPORT_TIMEOUT, message='every report_count to grow by 2')
    # Only a growing report_count sets last_seen_up, which keeps services up from now on.
    assert all(row['last_seen_up'] for row in cluster.query(
        'SELECT last_seen_up FROM services WHERE deleted = 0'))

    nodes = cluster.query('SELECT host, hypervisor_hostname, vcpus, memory_mb, local_gb '
                          'FROM compute_nodes WHERE deleted = 0')
    assert {node.pop('host'): node for node in nodes} == {
        host: dict(sizes, hypervisor_hostname=host) for host, sizes in COMPUTES.items()}


def test_killed_compute_is_reported_down_after_service_down_time(cluster):
    start_cluster(cluster, hosts=('c1', 'c2'))
    # Killed once it has reported (before its first report, its registration's time counts).
    base.wait_for(lambda: cluster.report_counts()[('compute', 'c1')] >= 1,
                  FIRST_REPORT_TIMEOUT, message='a first state report of c1')
    cluster.kill('c1', signal.SIGKILL)
    killed = time.monotonic()
    # Only missing reports tell: c1 stays up until service_down_time has passed. The manage
    # call that says so can itself take seconds on a loaded machine: its answer is checked
    # when it came within that time.
    state = compute_state(cluster, 'c1')
    if time.monotonic() - killed < cluster.service_down_time - cluster.report_interval:
        assert state == 'up'

    base.wait_for(lambda: compute_state(cluster, 'c1') == 'down',
                  cluster.service_down_time + 5, message='c1 to be reported down')
    states = {key: row['state'] for key, row in cluster.services().items()}
    assert states.pop(('minisched-compute', 'c1')) == 'down'
    assert set(states.values()) == {'up'}


def test_sigterm_stops_compute_cleanly(cluster):
    start_cluster(cluster, hosts=('c1',))

    assert cluster.stop('c1') == 0  # SIGKILL after STOP_TIMEOUT would give -9
    log = cluster.log('c1')
    assert 'Stopping minisched-compute on c1' in log
    assert 'Traceback' not in log
    assert ' ERROR ' not in log


@pytest.mark.parametrize('database', ['postgresql'], indirect=True)
def test_compute_never_opens_a_database_connection(cluster):
    # The compute reads the same [database] connection as the conductor, so the proof must not
    # rely on a config difference. It rests on oslo.db's pool instead: on a database server,
    # each connection an engine opens stays open in its QueuePool (for
    # connection_recycle_time, an hour), so any DB access by the compute would leave it
    # holding a TCP connection to the server port. The conductor, which did the compute's
    # DB work, is the positive control that the check sees such connections.
    start_cluster(cluster, hosts=('c1',))
    base.wait_for(lambda: cluster.report_counts()[('compute', 'c1')] >= 1,
                  FIRST_REPORT_TIMEOUT, message='a first state report of c1')
    url = sa.engine.make_url(cluster.db_url)
    db_port = url.port or {'postgresql': 5432, 'mysql': 3306}[url.get_backend_name()]

    assert db_port in base.tcp_peer_ports(cluster.processes['conductor'].pid)
    assert db_port not in base.tcp_peer_ports(cluster.processes['c1'].pid)
    assert 'DBNotAllowed' not in cluster.log('c1')
    assert 'No DB access allowed' not in cluster.log('c1')


def test_bad_config_values_exit_with_one_line_naming_the_option(tmp_path, transport_url):
    # No database or broker is reached: parsing fails first. The five start in parallel.
    cluster = base.Cluster(tmp_path, transport_url, 'sqlite:///%s/unused.sqlite' % tmp_path)
    try:
        cases = {
            '[conductor] workers': cluster.start_conductor(conf={'conductor': {'workers': 0}},
                                                           wait=False),
            '[fake_driver] vcpus': cluster.start_compute(
                'c1', conf={'fake_driver': {'vcpus': 'lots'}}, wait=False),
            '[DEFAULT] report_interval': cluster.start_compute(
                'c2', conf={'DEFAULT': {'report_interval': 'soon'}}, wait=False),
            # oslo.messaging cannot load a driver for it (stevedore's own warning is hushed).
            '[DEFAULT] transport_url': cluster.start_compute(
                'c3', conf={'DEFAULT': {'transport_url': 'nosuchbus://host/'}}, wait=False),
            # SQLAlchemy has no such dialect: checked before any worker starts.
            '[database] connection': cluster.start_scheduler(
                conf={'database': {'connection': 'nosuchdb://host/db'}}, wait=False),
        }
        for option, process in cases.items():
            assert process.popen.wait(timeout=30) != 0, option
            lines = process.log().strip().splitlines()
            assert len(lines) == 1 and option in lines[0], (option, lines)
    finally:
        cluster.stop_all()


def test_a_database_without_or_behind_its_schema_stops_the_service_in_one_line(
        tmp_path, transport_url):
    """Without the check, each worker would fail at start and be started again, forever."""
    from minisched.db import migration
    cluster = base.Cluster(tmp_path, transport_url, 'sqlite:///%s/db.sqlite' % tmp_path)
    try:
        for expected in ("has no minisched schema: run 'minisched-manage db sync' first",
                         "is at schema revision 8c1f4a2d9e01 and this minisched needs "):
            started = [cluster.start_conductor(workers=2, wait=False),
                       cluster.start_scheduler(wait=False)]
            for process in started:
                assert process.popen.wait(timeout=30) == 1
                lines = process.log().strip().splitlines()
                assert len(lines) == 1 and expected in lines[0], lines
                assert '[database] connection sqlite:///' in lines[0], lines
                del cluster.processes[process.name]  # exited: its name may start again
            migration.db_sync(cluster.db_url, 'main', version='8c1f4a2d9e01')  # one behind
        cluster.sync_db()  # at head: it starts
        cluster.start_conductor()
        assert 'schema' not in cluster.log('conductor')
    finally:
        cluster.stop_all()
