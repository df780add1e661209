"""minisched across hosts: 2 controllers and 6 computes, each in a network namespace of its own.

The layout (``tests/functional/netns.py``; every address in ``10.234.0.0/24`` on a bridge in
a switch namespace of the test's own, nothing in the machine's namespace)::

    mq    10.234.0.2   3 RabbitMQ nodes joined in one cluster (AMQP 5672-5674), quorum queues
    db    10.234.0.3   PostgreSQL of the machine, through a proxy listening in this namespace
    ctl1  10.234.0.11  conductor, scheduler, the API (a client process), minisched-manage
    ctl2  10.234.0.12  conductor, scheduler, the API (a client process)
    cmp1-cmp3  10.234.0.33-35   computes of rack A (10.234.0.32/27)
    cmp4-cmp6  10.234.0.65-67   computes of rack B (10.234.0.64/27)

Every service has ``host`` and ``my_ip`` set to its host's name and address and reaches the
broker cluster and the database over the bridge, as on separate machines. Why PostgreSQL and
not SQLite: SQLite is a file, which processes on separate machines cannot share; the point
of the layout is that nothing is shared but the network.

One test goes through the phases in order (each needs the one before), and prints what it
measured:

1. ``minisched-manage cell simple_cell_setup`` and ``discover_hosts`` on ctl1 map the six
   computes; one API fills rack A with ``build_near_host_ip``/``cidr`` hints, one build at a
   time: every instance lands in rack A, on the host whose namespace spawned it (the cast
   went to that host's own ``compute.<host>`` queue);
2. both APIs at the same instant ask for one instance each in rack A, where each host has a
   single free slot: the two schedulers, which see the same hosts, both pick the same one;
   its claim refuses the second instance, which is rescheduled to an alternate and ends
   ACTIVE (the reschedules are counted and printed);
3. both APIs create instances concurrently without hints: every instance ACTIVE, no host
   over its memory;
4. cmp6's veth goes down: ``service list`` shows it down within ``service_down_time``, and
   new builds aimed at rack B land on cmp4 and cmp5 only.
"""
import datetime
import json
import os
import subprocess
import sys
import time

import pytest
import sqlalchemy as sa

from minisched.localcluster import rabbit_cluster
from tests.functional import base
from tests.functional import build_helpers
from tests.functional import db_fixtures
from tests.functional import netns

pytestmark = [pytest.mark.functional, pytest.mark.both_backends, pytest.mark.timeout(480)]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ADDRESSES = {'mq': '10.234.0.2', 'db': '10.234.0.3', 'ctl1': '10.234.0.11',
             'ctl2': '10.234.0.12', 'cmp1': '10.234.0.33', 'cmp2': '10.234.0.34',
             'cmp3': '10.234.0.35', 'cmp4': '10.234.0.65', 'cmp5': '10.234.0.66',
             'cmp6': '10.234.0.67'}
CONTROLLERS = ('ctl1', 'ctl2')
RACK_A = ('cmp1', 'cmp2', 'cmp3')
RACK_B = ('cmp4', 'cmp5', 'cmp6')
RACK_HINTS = {'A': ['build_near_host_ip=10.234.0.33', 'cidr=/27'],
              'B': ['build_near_host_ip=10.234.0.65', 'cidr=/27']}
MQ_PORTS = (5672, 5673, 5674)
PG_PORT = 5432
#: Each compute holds SLOTS instances of the flavor (memory is what runs out: ratio 1.0).
SLOTS = 4
UNIT_MB = 512
RESERVED_MB = 512
REPORT_INTERVAL = 1
SERVICE_DOWN_TIME = 8
FILTERS = ('RetryFilter,AvailabilityZoneFilter,RamFilter,DiskFilter,ComputeFilter,'
           'ComputeCapabilitiesFilter,ImagePropertiesFilter,ServerGroupAntiAffinityFilter,'
           'ServerGroupAffinityFilter,SimpleCIDRAffinityFilter')
CONF = {'DEFAULT': {'rpc_response_timeout': 20, 'ram_allocation_ratio': 1.0,
                    'reserved_host_memory_mb': RESERVED_MB},
        'filter_scheduler': {'enabled_filters': FILTERS},
        'scheduler': {'discover_hosts_in_cells_interval': -1},
        'oslo_messaging_rabbit': base.QUORUM_RABBIT}
#: A client's interval meaning "each create once the previous instance is built".
ONE_BY_ONE = -1
#: Phase 3: concurrent creates per API, without hints.
CONCURRENT = 3


@pytest.fixture
def lab(request):
    reason = netns.unavailable_reason()
    if reason:
        base.unavailable('no multi-host layout: %s' % reason)
    lab = netns.Lab()
    request.addfinalizer(lab.close)
    for host, address in ADDRESSES.items():
        lab.add_host(host, address)
    return lab


@pytest.fixture
def pg(request, lab):
    """(root URL, namespace URL) of a cell1 database and of a cell0 one, on PostgreSQL seen
    at 10.234.0.3 from the hosts."""
    target = sa.engine.make_url(db_fixtures.admin_url('postgresql'))
    proxy = netns.NetnsProxy(lab, 'db', ADDRESSES['db'], PG_PORT,
                             (target.host or '127.0.0.1', target.port or 5432))
    request.addfinalizer(proxy.close)
    urls = {}
    for cell in ('cell1', 'cell0'):
        url, cleanup = db_fixtures.make_db('postgresql')
        request.addfinalizer(cleanup)
        urls[cell] = (url, sa.engine.make_url(url).set(host=ADDRESSES['db'], port=PG_PORT)
                      .render_as_string(hide_password=False))
    return urls


@pytest.fixture
def rabbit(request, lab, tmp_path):
    cluster = rabbit_cluster.Cluster(str(tmp_path / 'rabbit'), listen=ADDRESSES['mq'],
                                     netns=lab.ns('mq'), ports=MQ_PORTS)
    request.addfinalizer(cluster.close)
    try:
        cluster.start()
    except (rabbit_cluster.BrokerError, OSError) as exc:
        base.unavailable('no RabbitMQ cluster in a namespace: %s\n%s'
                         % (exc, cluster.log_tails()))
    return cluster


@pytest.fixture
def cluster(request, tmp_path, lab, pg, rabbit):
    (root_url, ns_url), (_root0, ns_url0) = pg['cell1'], pg['cell0']
    cluster = netns.NetnsCluster(tmp_path, lab, rabbit.transport_url, ns_url,
                                 root_url, manage_host='ctl1', conf=CONF,
                                 report_interval=REPORT_INTERVAL,
                                 service_down_time=SERVICE_DOWN_TIME)
    request.node.minisched_clusters = [cluster, rabbit]  # logs in a failure's report
    request.addfinalizer(cluster.kill_all)
    cluster.sync_db()
    cluster.run_manage('cell', 'map_cell0', '--database_connection', ns_url0)
    cluster.run_manage('cell', 'simple_cell_setup')
    return cluster


def test_two_controllers_six_computes_on_separate_hosts(lab, rabbit, cluster):
    _start_services(cluster)
    out = cluster.run_manage('cell', 'discover_hosts', '--verbose').stdout
    assert sorted(line.split("'")[1] for line in out.splitlines()
                  if line.startswith('Creating host mapping')) == sorted(RACK_A + RACK_B)
    cluster.run_manage('flavor', 'create', 'unit', '--ram', UNIT_MB, '--vcpus', 1, '--disk', 1)
    nodes = {row['host']: row['host_ip'] for row in cluster.query(
        'SELECT host, host_ip FROM compute_nodes WHERE deleted = 0')}
    assert nodes == {host: ADDRESSES[host] for host in RACK_A + RACK_B}
    queues = rabbit.queue_types()
    assert all(queues.get('compute.%s' % host) == 'quorum' for host in nodes), queues

    # 1. Rack A filled by one API, one build at a time: each host keeps one free slot.
    fill = _clients(cluster, [('ctl1', (SLOTS - 1) * len(RACK_A), ONE_BY_ONE, 'A')])
    placed = _settled(cluster, fill)
    assert {host for _state, host in placed.values()} <= set(RACK_A), placed
    assert _per_host(placed) == {host: SLOTS - 1 for host in RACK_A}, placed

    # 2. Both APIs at once, one instance each, into rack A's last free slots.
    race = _clients(cluster, [('ctl1', 1, 0, 'A'), ('ctl2', 1, 0, 'A')])
    raced = _settled(cluster, race)
    assert all(state == 'active' for state, _host in raced.values()), raced
    assert {host for _state, host in raced.values()} <= set(RACK_A), raced
    race_reschedules = _reschedules(cluster, race)

    # 3. Both APIs, concurrently, anywhere.
    spread = _clients(cluster, [('ctl1', CONCURRENT, 0, None), ('ctl2', CONCURRENT, 0, None)])
    spread_placed = _settled(cluster, spread)
    assert all(state == 'active' for state, _host in spread_placed.values()), spread_placed
    spread_reschedules = _reschedules(cluster, spread)
    _assert_no_overcommit(cluster)
    # Each on the host its row names (the line follows the answered ACTIVE save).
    settled = {**placed, **raced, **spread_placed}
    base.wait_for(lambda: all('Instance %s is ACTIVE on %s:' % (uuid, host) in cluster.log(host)
                              for uuid, (_state, host) in settled.items()), 30,
                  message='an ACTIVE line on its host for each instance')

    # 4. cmp6 cut off: down within service_down_time, and avoided.
    lab.cut('cmp6')
    cut, cut_utc = time.monotonic(), _utcnow()
    base.wait_for(lambda: cluster.services()[('minisched-compute', 'cmp6')]['state'] == 'down',
                  timeout=SERVICE_DOWN_TIME + 20, interval=0.5,
                  message='cmp6 to be down in service list')
    down_after = time.monotonic() - cut
    # Down from its last report + service_down_time on, so within service_down_time of the
    # cut: no report got out after it. (When service list shows it depends on how long each
    # run of the command takes on a busy machine: printed, not asserted beyond wait_for.)
    last_report = cluster.query("SELECT updated_at FROM services WHERE host = 'cmp6' AND "
                                "deleted = 0")[0]['updated_at']
    silent = (cut_utc - last_report).total_seconds()
    assert -0.5 < silent <= REPORT_INTERVAL + 1, silent
    states = {key[1]: row['state'] for key, row in cluster.services().items()}
    assert states == {**{host: 'up' for host in nodes if host != 'cmp6'}, 'cmp6': 'down',
                      'ctl1': 'up', 'ctl2': 'up'}, states
    avoid = _clients(cluster, [('ctl1', 1, 0, 'B'), ('ctl2', 1, 0, 'B')])
    avoided = _settled(cluster, avoid)
    assert all(state == 'active' for state, _host in avoided.values()), avoided
    assert {host for _state, host in avoided.values()} <= {'cmp4', 'cmp5'}, avoided
    _assert_no_overcommit(cluster)

    print('\n%d hosts in namespaces (2 controllers, 6 computes, RabbitMQ x3, PostgreSQL): '
          'rack A filled with %d instances by hint, all in 10.234.0.32/27; race of 2 APIs '
          'for its last slots: %d claim(s) refused and rescheduled, both ACTIVE; %d '
          'concurrent creates from 2 APIs: all ACTIVE, %d rescheduled, no overcommit '
          '(instances per host: %s); cmp6 cut off %.1f s after its last report: down '
          'from %.1f s after the cut (service_down_time %d s), shown down by service list '
          'after %.1f s; %d new builds for rack B on %s' % (
              len(ADDRESSES), len(placed), race_reschedules, len(spread_placed),
              spread_reschedules, _used(cluster), silent, SERVICE_DOWN_TIME - silent,
              SERVICE_DOWN_TIME, down_after, len(avoided),
              sorted({host for _state, host in avoided.values()})))


# -- helpers ---------------------------------------------------------------------------------

def _start_services(cluster):
    """Conductors first (a compute waits for one), then the schedulers and the computes."""
    for host in CONTROLLERS:
        own = {'DEFAULT': {'host': host, 'my_ip': ADDRESSES[host]}}
        cluster.start_service('conductor-' + host, host, 'minisched-conductor', 'conductor',
                              build_helpers.merge_conf(own, {'conductor': {'workers': 1}}))
    cluster.wait_ready(*('conductor-' + host for host in CONTROLLERS))
    for host in CONTROLLERS:
        own = {'DEFAULT': {'host': host, 'my_ip': ADDRESSES[host]}}
        cluster.start_service('scheduler-' + host, host, 'minisched-scheduler', 'scheduler',
                              build_helpers.merge_conf(own, {'scheduler': {'workers': 1}}))
    memory_mb = RESERVED_MB + SLOTS * UNIT_MB
    for host in RACK_A + RACK_B:
        cluster.start_service(host, host, 'minisched-compute', 'compute', {
            'DEFAULT': {'host': host, 'my_ip': ADDRESSES[host]},
            'fake_driver': {'vcpus': 16, 'memory_mb': memory_mb, 'local_gb': 100}})
    cluster.wait_ready(*('scheduler-' + host for host in CONTROLLERS), *RACK_A, *RACK_B,
                       timeout=90)
    base.wait_for(lambda: len(cluster.query(
        'SELECT id FROM compute_nodes WHERE deleted = 0 AND free_disk_gb IS NOT NULL')) == 6,
        timeout=60, message='the six compute node records')


def _clients(cluster, specs, timeout=120):
    """Run one API client per ``(host, count, interval or ONE_BY_ONE, rack)``, all starting
    at the same instant once every one is set up; the uuids they created (none refused)."""
    processes = []
    try:
        for host, count, interval, rack in specs:
            argv = [sys.executable, '-m', 'tests.functional.multihost_client',
                    '--config-file', cluster.conf_file, '--flavor', 'unit', '--count',
                    str(count)]
            argv += ['--one-by-one'] if interval == ONE_BY_ONE else ['--interval',
                                                                      str(interval)]
            for hint in RACK_HINTS.get(rack, []):
                argv += ['--hint', hint]
            processes.append(subprocess.Popen(
                cluster.lab.command(host, argv), cwd=REPO, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for process in processes:
            ready = process.stdout.readline()  # bounded by the test's timeout
            assert ready.strip() == '{"ready": true}', (ready, process.stderr.read()[-3000:])
        for process in processes:
            process.stdin.write('go\n')
            process.stdin.flush()
        uuids = []
        for process in processes:
            stdout, stderr = process.communicate(timeout=timeout)
            records = [json.loads(line) for line in stdout.splitlines()
                       if line.startswith('{')]
            assert process.returncode == 0 and records and records[-1] == {'done': True}, (
                process.returncode, stdout, stderr[-3000:])
            assert not [r for r in records if 'refused' in r], records
            uuids += [r['uuid'] for r in records if 'uuid' in r]
        return uuids
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()


def _settled(cluster, uuids, timeout=90):
    """``{uuid: (vm_state, host)}`` once every instance is ACTIVE or ERROR (cell1 or, never
    scheduled, cell0's database, which holds nothing here unless a build failed)."""
    found = {}

    def settled():
        rows = cluster.query('SELECT uuid, vm_state, task_state, host FROM instances')
        for row in rows:
            if row['uuid'] in uuids and row['vm_state'] in ('active', 'error') \
                    and row['task_state'] is None:
                found[row['uuid']] = (row['vm_state'], row['host'])
        return len(found) == len(uuids)
    base.wait_for(settled, timeout, interval=0.5,
                  message='instances to settle: %s' % sorted(set(uuids) - set(found)))
    return {uuid: found[uuid] for uuid in uuids}


def _utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _per_host(placed):
    counts = {}
    for _state, host in placed.values():
        counts[host] = counts.get(host, 0) + 1
    return counts


def _reschedules(cluster, uuids):
    """How many times a compute refused and rescheduled one of ``uuids``."""
    return sum(cluster.log(host).count('Rescheduling build of %s from' % uuid)
               for host in RACK_A + RACK_B for uuid in uuids)


def _used(cluster):
    return {row['host']: (row['memory_mb_used'] - RESERVED_MB) // UNIT_MB
            for row in cluster.query('SELECT host, memory_mb_used FROM compute_nodes '
                                     'WHERE deleted = 0 ORDER BY host')}


def _assert_no_overcommit(cluster):
    """No compute node record, nor the instances placed on each host, over its memory."""
    rows = cluster.query('SELECT host, memory_mb, memory_mb_used FROM compute_nodes '
                         'WHERE deleted = 0')
    for row in rows:
        assert row['memory_mb_used'] <= row['memory_mb'], row
    placed = cluster.query("SELECT host, count(*) AS n FROM instances WHERE vm_state = "
                           "'active' AND deleted = 0 GROUP BY host")
    assert all(row['n'] <= SLOTS for row in placed), placed
