"""Faults: the broker or the database goes away, processes are killed; nothing is lost.

"The broker" is taken away from ONE cluster with a ``TcpProxy`` between its services and
RabbitMQ (``cut()`` drops every connection and refuses new ones); the shared RabbitMQ keeps
running for every other test. The test's own RPC client talks to RabbitMQ directly, as a
caller whose broker connection is fine while the scheduler's is gone. The database outage
works the same way, with a proxy in front of PostgreSQL.
"""
import os
import signal
import time

import oslo_messaging as messaging
import pytest
import sqlalchemy as sa

from minisched import context as ms_context
from minisched import exception
from minisched import objects
from minisched.objects import base as objects_base
from tests.functional import base
from tests.functional import fuzz_strategies as fs
from tests.functional import resilience
from tests.functional import tcp_proxy

pytestmark = [pytest.mark.functional, pytest.mark.timeout(240)]

#: How long the broker is away (a real outage would be longer; the behaviour is the same).
OUTAGE_SECONDS = 9
#: The test client's rpc_response_timeout: calls during an outage must fail within it.
CALL_TIMEOUT = 5
#: Slack on top of CALL_TIMEOUT for a call to come back with its MessagingTimeout.
TIMEOUT_SLACK = 2
#: Reconnection: oslo.messaging retries every 1, 3, 5... s up to ``rabbit_interval_max``;
#: capped at 2 s here so that recovery is measured in seconds, not half-minutes.
RABBIT = {'oslo_messaging_rabbit': {'rabbit_retry_interval': 1, 'rabbit_retry_backoff': 1,
                                    'rabbit_interval_max': 2}}
RECOVERY_TIMEOUT = 45


def report_counts(cluster, engine_url=None):
    rows = _query(engine_url or cluster.db_url,
                  'SELECT topic, host, report_count FROM services WHERE deleted = 0')
    return {(row['topic'], row['host']): row['report_count'] for row in rows}


def _query(url, sql):
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            return [dict(row) for row in conn.execute(sa.text(sql)).mappings()]
    finally:
        engine.dispose()


def select(client, num_instances=1):
    spec = fs.request_spec(num_instances=num_instances)
    return client.call(resilience.admin_context(), 'select_destinations',
                       spec_obj=spec.obj_to_primitive(), instance_uuids=None,
                       return_objects=False, return_alternates=False)


def wait_selectable(client, hosts, timeout=RECOVERY_TIMEOUT):
    """Wait until select_destinations answers with one of ``hosts``; returns the seconds."""
    watch = resilience.Stopwatch()

    def answered():
        try:
            return select(client)[0]['host'] in hosts
        except (messaging.MessagingTimeout, messaging.RemoteError):
            return False
        except Exception as exc:  # NoValidHost while computes look down, rebuilt remotely
            return False if type(exc).__name__.endswith('_Remote') else _reraise(exc)
    base.wait_for(answered, timeout, interval=0.5, message='select_destinations to answer')
    return watch.elapsed


def _reraise(exc):
    raise exc


def start_conductor_first(cluster, computes, scheduler_workers=2, compute_conf=None):
    """Start a scheduler and a conductor at once, then ``computes`` once the conductor is
    ready; returns when all are. A compute pings the conductor at start-up, and a ping sent
    before the conductor's queue exists is lost: the compute would wait out a 10 s timeout."""
    cluster.start_scheduler(workers=scheduler_workers, wait=False)
    cluster.start_conductor()
    for host in computes:
        cluster.start_compute(host, wait=False, **(compute_conf or {}).get(host, {}))
    cluster.wait_ready('scheduler', *computes)


@pytest.fixture
def clients(request):
    """``clients(cluster, url=None)``: RawClients on the cluster (or ``url``), closed after."""
    made = []

    def make(cluster, url=None, timeout=CALL_TIMEOUT):
        made.append(resilience.RawClients(cluster, transport_url=url, timeout=timeout))
        return made[-1]
    yield make
    for raw in made:
        raw.close()


@pytest.fixture
def proxied(request, tmp_path, database):
    """A cluster on a vhost of its own whose services reach RabbitMQ through a TcpProxy.

    Returns ``(cluster, proxy, direct_url)``; ``direct_url`` reaches the same vhost directly.
    """
    direct_url = resilience.own_vhost(request)
    proxy = tcp_proxy.TcpProxy(resilience.rabbit_port(direct_url))
    request.addfinalizer(proxy.close)
    cluster = resilience.make_cluster(request, tmp_path,
                                      resilience.with_port(direct_url, proxy.port), database,
                                      conf=RABBIT)
    return cluster, proxy, direct_url


def test_broker_outage_calls_time_out_fast_and_every_service_reconnects(proxied, clients):
    cluster, proxy, direct_url = proxied
    start_conductor_first(cluster, ['c1', 'c2'])
    client = clients(cluster, direct_url).client('scheduler', '4.5')
    wait_selectable(client, {'c1', 'c2'})
    pids = resilience.process_tree(cluster)
    connections_before = proxy.connections_made

    proxy.cut()
    outage = resilience.Stopwatch()
    counts_at_cut = report_counts(cluster)
    timed_out = []
    while outage.elapsed < OUTAGE_SECONDS:
        call = resilience.Stopwatch()
        with pytest.raises(messaging.MessagingTimeout):
            select(client)
        timed_out.append(call.elapsed)
        # never a hang: each call comes back with its timeout, within rpc_response_timeout
        assert call.elapsed < CALL_TIMEOUT + TIMEOUT_SLACK, timed_out
    counts_before_restore = report_counts(cluster)
    proxy.restore()
    recovery = wait_selectable(client, {'c1', 'c2'})

    # Computes report through the conductor: nothing (but a report in flight) while cut off.
    for host in ('c1', 'c2'):
        key = ('compute', host)
        assert counts_before_restore[key] <= counts_at_cut[key] + 1
    # ...and their reports resume by themselves, as do the conductor's and the scheduler's.
    base.wait_for(lambda: all(count >= counts_before_restore[key] + 2
                              for key, count in report_counts(cluster).items()),
                  RECOVERY_TIMEOUT, message='every report_count to grow after the outage')
    assert resilience.process_tree(cluster) == pids, 'no service restarted'
    assert proxy.connections_made > connections_before, 'services reconnected through it'
    print('\nbroker outage %.0fs: %d calls failed with MessagingTimeout after %s s; calls '
          'answered again %.1fs after restore' % (
              OUTAGE_SECONDS, len(timed_out), ', '.join('%.1f' % t for t in timed_out),
              recovery))


def test_killed_scheduler_worker_is_respawned_while_the_other_answers(cluster, clients):
    start_conductor_first(cluster, ['c1'])
    launcher = cluster.processes['scheduler'].pid
    client = clients(cluster, timeout=10).client('scheduler', '4.5')
    wait_selectable(client, {'c1'})
    workers = resilience.children(launcher)
    assert len(workers) == 2, workers

    victim, survivor = workers
    os.kill(victim, signal.SIGKILL)
    watch = resilience.Stopwatch()
    answered = 0
    # Until the launcher's new worker is ready, every call is answered (by the survivor,
    # or by the new worker once it consumes).
    while cluster.log('scheduler').count('minisched-scheduler ready') < 3 or answered < 10:
        assert watch.elapsed < 30, 'no new worker ready 30 s after the kill'
        assert select(client)[0]['host'] == 'c1'
        answered += 1
    respawned = watch.elapsed
    base.wait_for(lambda: victim not in resilience.children(launcher), 10,
                  message='the killed worker to be reaped')
    new_workers = resilience.children(launcher)
    assert survivor in new_workers and victim not in new_workers and len(new_workers) == 2
    for _ in range(6):  # spread over both workers
        assert select(client)[0]['host'] == 'c1'
    assert resilience.alive(launcher)
    print('\nscheduler worker %d killed: %d calls answered meanwhile; new worker %s ready '
          'after %.1fs' % (victim, answered, sorted(set(new_workers) - {survivor}), respawned))


def test_conductor_restart_leaves_computes_running_and_reports_resume(cluster):
    cluster.start_conductor()
    for host in ('c1', 'c2'):
        cluster.start_compute(host, wait=False)
    cluster.wait_ready('c1', 'c2')
    computes = {('compute', 'c1'), ('compute', 'c2')}
    base.wait_for(lambda: all(report_counts(cluster).get(k, 0) >= 1 for k in computes), 20,
                  message='first reports of both computes')
    rows_before = _service_rows(cluster)
    nodes_before = _query(cluster.db_url, 'SELECT id, uuid, host FROM compute_nodes')
    pids = {host: cluster.processes[host].pid for host in ('c1', 'c2')}

    cluster.kill('conductor', signal.SIGKILL)
    counts_at_kill = report_counts(cluster)
    time.sleep(2 * cluster.report_interval + 2)
    stalled = report_counts(cluster)
    for key in computes:
        assert stalled[key] <= counts_at_kill[key] + 1, 'reports went on without a conductor'
    assert all(cluster.processes[h].popen.poll() is None for h in ('c1', 'c2'))

    resilience.restart(cluster, 'conductor', cluster.start_conductor)
    base.wait_for(lambda: all(count >= stalled[k] + 2
                              for k, count in report_counts(cluster).items()),
                  30, message='compute (and conductor) reports to resume')
    assert {h: cluster.processes[h].pid for h in ('c1', 'c2')} == pids
    assert all(cluster.processes[h].popen.poll() is None for h in ('c1', 'c2'))
    # No corrupted state: the same service rows (no duplicate, none deleted), same nodes.
    assert _service_rows(cluster) == rows_before
    assert _query(cluster.db_url, 'SELECT id, uuid, host FROM compute_nodes') == nodes_before
    states = {key: row['state'] for key, row in cluster.services().items()}
    assert set(states.values()) == {'up'}, states


def _service_rows(cluster):
    return sorted((r['id'], r['host'], r['binary'], r['topic'], r['deleted'], r['disabled'])
                  for r in _query(cluster.db_url, 'SELECT id, host, binary, topic, deleted, '
                                                  'disabled FROM services'))


#: ``_check_instance_build_time`` has Nova's default spacing (60 s, no option), so the first
#: check comes about a minute after the compute starts.
BUILD_CHECK_SPACING = 60


def test_compute_killed_mid_build_leaves_no_instance_building_forever(cluster):
    """A build whose compute dies is ERROR once that compute is back; a build stuck on a
    live compute is timed out by ``instance_build_timeout`` with a fault saying so."""
    # Both computes from the start: the minute before big's first build check runs while
    # the rest is set up. Big's builds take longer than its instance_build_timeout; its
    # memory (ratio 1.0) holds one "large" instance and nothing beside it.
    start_conductor_first(cluster, ['small', 'big'], scheduler_workers=1, compute_conf={
        'small': {'memory_mb': 2048, 'conf': {'fake_driver': {'spawn_delay_seconds': 30}}},
        'big': {'memory_mb': 4096 + 512, 'conf': {
            'DEFAULT': {'instance_build_timeout': 5, 'ram_allocation_ratio': 1.0},
            'fake_driver': {'spawn_delay_seconds': 3 * BUILD_CHECK_SPACING}}}})
    cluster.run_manage('flavor', 'create', 'tiny', '--ram', 512, '--vcpus', 1, '--disk', 1)
    cluster.run_manage('flavor', 'create', 'large', '--ram', 4096, '--vcpus', 1, '--disk', 1)
    _wait_nodes(cluster, 2)
    slow = _boot(cluster, 'large')    # 4096 MB fits "big" only (small: 2048 x 1.5 - 512)
    _wait_state(cluster, slow, lambda i: i['host'] == 'big' and i['task_state'] == 'spawning',
                'building on big')
    killed = _boot(cluster, 'tiny')   # big is full: it lands on small
    _wait_state(cluster, killed, lambda i: i['host'] == 'small' and
                i['task_state'] == 'spawning', 'building on small')

    cluster.kill('small', signal.SIGKILL)
    assert _instance(cluster, killed)['vm_state'] == 'building'
    resilience.restart(cluster, 'small', cluster.start_compute, host='small', memory_mb=2048,
                       conf={'DEFAULT': {'instance_build_timeout': 5}})

    deadline = BUILD_CHECK_SPACING + 30
    for uuid in (killed, slow):
        _wait_state(cluster, uuid, lambda i: i['vm_state'] == 'error', 'ERROR',
                    timeout=deadline)
    faults = {uuid: [f['message'] for f in cluster.query(
        'SELECT message FROM instance_faults WHERE instance_uuid = :uuid', uuid=uuid)]
        for uuid in (killed, slow)}
    assert faults[slow] == ['Instance build timed out. Set to error state.'], faults
    # The killed compute's build: set to ERROR by the compute when it started again (Nova's
    # _init_instance), with a fault saying why and its build event finished as Error.
    assert faults[killed] == [exception.InstanceBuildInterrupted().format_message()], faults
    assert _instance(cluster, killed)['task_state'] is None
    assert cluster.query(
        'SELECT e.host, e.result FROM instance_actions_events e JOIN instance_actions a ON '
        'e.action_id = a.id WHERE a.instance_uuid = :uuid AND e.event = :event',
        uuid=killed, event='compute_build_and_run_instance') == [
            {'host': 'small', 'result': 'Error'}]
    print('\nkilled mid-build: ERROR with a fault when its compute started again '
          '(_init_instance); slow build on a live compute: ERROR by the build timeout')


def _wait_nodes(cluster, count):
    base.wait_for(lambda: len(cluster.query('SELECT id FROM compute_nodes WHERE deleted = 0'))
                  == count, 30, message='%d compute node records' % count)
    # The scheduler sees a compute as up after its first report (5 s after it starts).
    time.sleep(1)


def _boot(cluster, flavor):
    return cluster.run_manage('server', 'create', '--flavor', flavor).stdout.split()[0]


def _instance(cluster, uuid):
    rows = cluster.query('SELECT uuid, host, vm_state, task_state FROM instances '
                         'WHERE uuid = :uuid', uuid=uuid)
    return rows[0] if rows else None


def _wait_state(cluster, uuid, predicate, what, timeout=60):
    def reached():
        instance = _instance(cluster, uuid)
        return instance is not None and predicate(instance) and instance
    return base.wait_for(reached, timeout, interval=0.5,
                         message='instance %s to be %s' % (uuid, what))


@pytest.mark.parametrize('database', ['postgresql'], indirect=True)
def test_database_outage_gets_clear_errors_and_the_conductor_recovers(request, tmp_path,
                                                                      transport_url, database,
                                                                      clients):
    url = sa.engine.make_url(database)
    db_proxy = tcp_proxy.TcpProxy(url.port or 5432)
    request.addfinalizer(db_proxy.close)
    proxied_db = url.set(host='127.0.0.1', port=db_proxy.port).render_as_string(
        hide_password=False)
    cluster = resilience.make_cluster(request, tmp_path, transport_url, proxied_db,
                                      shared_vhost=True)
    cluster.start_conductor()
    cluster.start_compute('c1')
    conductor_pid = cluster.processes['conductor'].pid
    client = clients(cluster, timeout=30).object_client('conductor', '3.0')

    def lookup():
        return client.call(ms_context.get_admin_context(), 'object_class_action_versions',
                           objname='Service', objmethod='get_by_host_and_binary',
                           object_versions=objects_base.obj_tree_get_versions('Service'),
                           args=('c1', 'minisched-compute'), kwargs={})
    assert isinstance(lookup(), objects.Service)

    db_proxy.cut()
    errors = []
    outage = resilience.Stopwatch()
    while outage.elapsed < OUTAGE_SECONDS:
        call = resilience.Stopwatch()
        # a precise error the caller can retry on, quickly: not a hang, not a timeout, not
        # a RemoteError of a driver class
        with pytest.raises(exception.DBTransientError) as caught:
            lookup()
        assert 'connection' in caught.value.format_message().lower(), caught.value
        assert call.elapsed < CALL_TIMEOUT, call.elapsed
        errors.append((type(caught.value).__name__, round(call.elapsed, 2)))
        time.sleep(0.5)
    counts = report_counts(cluster, database)

    db_proxy.restore()
    recovery = resilience.Stopwatch()
    base.wait_for(lambda: _answers(lookup), RECOVERY_TIMEOUT, interval=0.5,
                  message='the conductor to answer again')
    recovered = recovery.elapsed
    base.wait_for(lambda: all(count >= counts[key] + 2 for key, count in
                              report_counts(cluster, database).items()), 30,
                  message='reports to resume after the database came back')
    assert cluster.processes['conductor'].pid == conductor_pid
    assert cluster.processes['conductor'].popen.poll() is None
    assert cluster.processes['c1'].popen.poll() is None
    print('\ndatabase outage %.0fs: %d calls answered with %s; answering again %.1fs after '
          'restore' % (OUTAGE_SECONDS, len(errors), sorted({e[0] for e in errors}), recovered))


def _answers(lookup):
    try:
        return isinstance(lookup(), objects.Service)
    except (messaging.RemoteError, exception.DBTransientError):
        return False
