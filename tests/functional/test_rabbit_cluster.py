"""A 3-node RabbitMQ cluster with quorum queues loses a node under load: nothing accepted is
lost or doubled, and every service carries on without a restart.

The cluster is ``minisched.localcluster.rabbit_cluster.Cluster`` (3 nodes of our own on
loopback, joined with ``rabbitmqctl join_cluster``); the services get a transport URL naming the
three nodes and Nova's recent RabbitMQ options: ``rabbit_quorum_queue`` (topic queues
replicated on every node), ``rabbit_transient_quorum_queue`` (reply and fanout queues too) and
``rabbit_stream_fanout`` (one stream per fanout topic; it needs a consumer prefetch). During a
bounded stream of creates the node leading the ``conductor`` queue is killed (SIGKILL of its
Erlang VM) and started again. Checked, in the terms of doc/source/admin/delivery.rst:

* every accepted build ends ACTIVE or ERROR, once: one instance row, spawned at most once
  (ACTIVE ones exactly once), no build request left; a create the bus did not take is refused
  (BuildNotAccepted) and leaves nothing;
* the services (same processes) reconnect to the surviving nodes: they report again and new
  builds go ACTIVE while the node is down; the test prints that time to healthy;
* ``minisched-manage rpc tap``'s library, connected to the node that dies, moves to another one
  and keeps seeing the traffic of quorum queues and fanout streams.
"""
import datetime
import re
import subprocess
import threading
import time

import pytest

from minisched import exception
from minisched import localcluster
from minisched.localcluster import rabbit_cluster
from minisched.messaging import tap as tap_lib
from tests.functional import base
from tests.functional import build_helpers
from tests.functional import resilience

pytestmark = [pytest.mark.functional, pytest.mark.timeout(420)]

#: Nova's quorum-queue settings, and quick reconnection (1-2 s between attempts).
CONF = {'DEFAULT': {'rpc_response_timeout': 10},
        'oslo_messaging_rabbit': base.QUORUM_RABBIT}
#: The stream: CREATES creates, one every CREATE_INTERVAL s (4/s), for at most STREAM_SECONDS.
CREATES = 72
CREATE_INTERVAL = 0.25
STREAM_SECONDS = 90
#: The node dies before create KILL_AT and is started again RESTART_AFTER s later.
KILL_AT = 20
RESTART_AFTER = 10
#: Longer than the node's absence, so that no compute looks down meanwhile.
SERVICE_DOWN_TIME = 30
FLAVOR = {'vcpus': 1, 'memory_mb': 128, 'root_gb': 1}
SIZES = {'vcpus': 64, 'memory_mb': 64 * 128 + 512, 'local_gb': 200}
COMPUTES = ('c1', 'c2', 'c3')
COMPUTE_CONF = {'fake_driver': {'spawn_delay_seconds': 1}}


@pytest.fixture(scope='module')
def rabbit(tmp_path_factory):
    """A started 3-node cluster for the module (skipped, or failed under CI, when RabbitMQ
    cannot be started here)."""
    cluster = rabbit_cluster.Cluster(str(tmp_path_factory.mktemp('rabbit') / 'nodes'))
    try:
        cluster.start()
    except (rabbit_cluster.BrokerError, OSError) as exc:
        tails = cluster.log_tails()
        cluster.close()
        base.unavailable('no local 3-node RabbitMQ cluster: %s\n%s' % (exc, tails))
    yield cluster
    cluster.close()


@pytest.fixture
def cluster(request, tmp_path, rabbit, database):
    cluster = resilience.make_cluster(request, tmp_path, rabbit.transport_url, database,
                                      conf=CONF, service_down_time=SERVICE_DOWN_TIME)
    # conftest's report hook shows the tails of the nodes' logs too when the test fails.
    request.node.minisched_clusters.append(rabbit)
    return cluster


def test_node_killed_under_load_loses_and_doubles_no_build(rabbit, cluster, request):
    build_helpers.start(cluster, {host: SIZES for host in COMPUTES},
                        compute_conf=COMPUTE_CONF)
    client = build_helpers.Client(cluster)
    request.addfinalizer(client.close)
    flavor = client.flavor('unit', **FLAVOR)
    pids = resilience.process_tree(cluster)
    queues = rabbit.queues()
    assert {name: queues[name]['type'] for name in ('conductor', 'compute.c1',
                                                    'scheduler_fanout')} == {
        'conductor': 'quorum', 'compute.c1': 'quorum', 'scheduler_fanout': 'stream'}
    assert all(row['type'] == 'quorum' for name, row in queues.items()
               if name.startswith('reply_')), queues
    victim = rabbit.index_of(queues['conductor']['leader'])
    watcher = TapWatcher(rabbit, victim, cluster.control_exchange)
    request.addfinalizer(watcher.stop)
    health = HealthMonitor(cluster)
    request.addfinalizer(health.stop)

    accepted, refused = [], 0
    restarter = None
    stream = resilience.Stopwatch()
    for index in range(CREATES):
        if stream.elapsed > STREAM_SECONDS:
            break
        if index == KILL_AT:
            health.arm()
            rabbit.kill(victim)
            killed = resilience.Stopwatch()
        if restarter is None and index > KILL_AT and killed.elapsed >= RESTART_AFTER:
            restarter = threading.Thread(target=rabbit.restart, args=(victim,))
            restarter.start()
        try:
            accepted.append(client.boot(flavor)[0])
        except exception.BuildNotAccepted:
            refused += 1
        time.sleep(max(0.0, (index + 1) * CREATE_INTERVAL - stream.elapsed))
    sent = index + 1
    assert restarter is not None, 'the stream ended before the node was started again'
    restarter.join(120)
    assert len(rabbit.running_nodes()) == 3, rabbit.running_nodes()

    # Every accepted build ends ACTIVE or ERROR, once.
    built = client.wait_built(accepted, timeout=180)
    states = {uuid: instance.vm_state for uuid, instance in built.items()}
    for uuid in accepted:
        rows = cluster.query('SELECT vm_state FROM instances WHERE uuid = :uuid', uuid=uuid)
        assert len(rows) == 1, (uuid, rows)
    # One spawn for each ACTIVE instance, none for an ERROR one.
    activated = [uuid for uuid in accepted if states[uuid] == 'active']
    assert build_helpers.wait_spawns(cluster, COMPUTES, activated) == dict.fromkeys(activated, 1)
    assert set(build_helpers.spawns(cluster, COMPUTES)) & set(accepted) == set(activated)
    assert cluster.query('SELECT instance_uuid FROM build_requests') == []
    nodes = client.nodes()
    assert sum(node['vcpus_used'] for node in nodes.values()) == len(activated)
    assert len(activated) >= len(accepted) - 2, states  # the odd ERROR, never a wholesale loss

    # Same processes, reporting again; new builds went ACTIVE while the node was down.
    assert resilience.process_tree(cluster) == pids, 'a service was restarted'
    reports = health.wait_healthy(timeout=60)
    first_build = _first_launch_after(cluster, health.armed_at)
    assert first_build is not None, 'no build accepted after the kill went ACTIVE'
    healthy = max(reports, (first_build - health.armed_at).total_seconds())
    watcher.stop()
    assert watcher.failed_over, watcher.notes
    assert watcher.kinds_after_kill >= {'cast', 'fanout'}, watcher.kinds_after_kill
    duplicates = _count(cluster.log('conductor'), r'is gone \(taken by another delivery|'
                        r'already exists in its cell')
    print('\nnode %s (leader of the conductor queue) killed at create %d, restarted %d s '
          'later: %d sent, %d accepted (%d ACTIVE, %d ERROR), %d refused, 0 lost, 0 doubled; '
          'duplicate deliveries dropped by the conductor: %d; time to healthy: %.1f s '
          '(every service reported again after %.1f s, first new build ACTIVE after %.1f s); '
          'tap: %s' % (
              rabbit.nodes[victim].nodename, KILL_AT, RESTART_AFTER, sent, len(accepted),
              len(activated), len(accepted) - len(activated), refused, duplicates, healthy, reports,
              (first_build - health.armed_at).total_seconds(), watcher.notes[-1]))


def test_cluster_command_brings_its_own_three_rabbit_nodes(tmp_path):
    """``minisched-cluster --rabbit-nodes 3 up --detach``, ``status``, ``down``: the
    services run on the three nodes with quorum queues; nothing is left afterwards."""
    state = tmp_path / 'cluster'
    command = [base.script('minisched-cluster'), '--state-dir', str(state), '--computes', '1',
               '--rabbit-nodes', '3']
    run = lambda *args: subprocess.run(command + list(args), capture_output=True, text=True,
                                       timeout=240)
    try:
        up = run('up', '--detach')
        assert up.returncode == 0, up.stdout + up.stderr
        record = rabbit_cluster.load_record(str(state / 'rabbit'))
        conf = (state / 'minisched.conf').read_text()
        url = re.search(r'^transport_url = (\S+)$', conf, re.MULTILINE).group(1)
        assert ['127.0.0.1:%d' % node['port'] for node in record['nodes']] == re.findall(
            r'@(127\.0\.0\.1:\d+)', url)
        for option, value in localcluster.QUORUM_OPTIONS:
            assert '%s = %s' % (option, value) in conf
        status = run('status')
        assert status.returncode == 0, status.stdout + status.stderr
        assert re.search(r'\| minisched-compute +\| compute1 +\| enabled \| up ', status.stdout)
        assert len(re.findall(r'^  rabbit\d@localhost +127\.0\.0\.1:\d+ +running$',
                              status.stdout, re.MULTILINE)) == 3, status.stdout
        assert status.stdout.count('| running (pid ') == 3, status.stdout  # the services
        assert 'running cluster members: rabbit1@localhost, rabbit2@localhost, ' \
            'rabbit3@localhost' in status.stdout
        again = run('up', '--detach')
        assert again.returncode == 1 and 'stop it first' in again.stderr, again.stderr
    finally:
        down = run('down')
    assert down.returncode == 0, down.stdout + down.stderr
    assert 'Stopped 3 RabbitMQ node(s) and removed their data.' in down.stdout, down.stdout
    assert not (state / 'rabbit').exists()
    pids = [node['pid'] for node in record['nodes']] + [record['epmd_pid']]
    base.wait_for(lambda: not any(resilience.alive(pid) for pid in pids), 10,
                  message='the nodes and their epmd to be gone')


# -- helpers ---------------------------------------------------------------------------------

class HealthMonitor:
    """Polls the service records from ``arm()`` on: when has every service reported twice
    since (one whole report after the kill, whatever was in flight at it)?"""

    def __init__(self, cluster, interval=0.5):
        self.cluster = cluster
        self.interval = interval
        self.armed_at = None
        self.healthy_after = None
        self._baseline = None
        self._start = None
        self._stop = threading.Event()
        self._thread = None

    def arm(self):
        self._baseline = self._counts()
        self.armed_at = _utcnow()
        self._start = time.monotonic()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def wait_healthy(self, timeout):
        base.wait_for(lambda: self.healthy_after is not None, timeout,
                      message='every service to report again: %s against %s' % (
                          self._counts(), self._baseline))
        return self.healthy_after

    def stop(self):
        self._stop.set()

    def _counts(self):
        return {(row['binary'], row['host']): row['report_count'] for row in self.cluster.query(
            'SELECT "binary", host, report_count FROM services WHERE deleted = 0')}

    def _poll(self):
        while not self._stop.wait(self.interval):
            try:
                counts = self._counts()
            except Exception:  # a busy SQLite file: next turn
                continue
            if all(counts.get(key, 0) >= count + 2 for key, count in self._baseline.items()):
                self.healthy_after = time.monotonic() - self._start
                return


class TapWatcher:
    """The rpc tap, connected to node ``victim`` first, in a thread: what it saw after the
    kill and its notes (the failover)."""

    def __init__(self, rabbit, victim, exchange):
        nodes = [victim] + [i for i in range(len(rabbit.nodes)) if i != victim]
        url = 'rabbit://%s/' % ','.join('%s:%s@127.0.0.1:%d' % (
            rabbit.user, rabbit.password, rabbit.nodes[i].port) for i in nodes)
        self.notes = []
        self.kinds_after_kill = set()
        self.tap = tap_lib.Tap(url, exchange, firehose=False, note=self.notes.append)
        self.tap.open()
        self._kill_seen = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @property
    def failed_over(self):
        return any('tapping through' in note for note in self.notes)

    def _run(self):
        try:
            self.tap.run(self._emit, timeout=STREAM_SECONDS + 120)
        except tap_lib.TapError as exc:
            self.notes.append('TapError: %s' % exc)
        finally:
            self.tap.close()

    def _emit(self, event):
        if self.failed_over:
            self.kinds_after_kill.add(event['kind'])

    def stop(self):
        self.tap.stop()
        self._thread.join(10)


def _count(text, pattern):
    return len(re.findall(pattern, text))


def _utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _when(value):
    """A DB timestamp as a naive UTC datetime (SQLite hands text back to a raw query)."""
    if isinstance(value, str):
        return datetime.datetime.fromisoformat(value)
    return value


def _first_launch_after(cluster, moment):
    rows = cluster.query("SELECT created_at, launched_at FROM instances "
                         "WHERE vm_state = 'active'")
    launched = [_when(row['launched_at']) for row in rows
                if _when(row['created_at']) >= moment and row['launched_at'] is not None]
    return min(launched) if launched else None

