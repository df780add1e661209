"""The build flow end to end: API -> conductor -> scheduler -> compute, on real processes.

A conductor, a scheduler with two workers and fake computes run as processes on the real
RabbitMQ and database (SQLite unless ``MINISCHED_TEST_DB_URL`` says otherwise); the test
process plays the API service with ``minisched.compute.api`` (see ``build_helpers`` for why
in-process, with a private ConfigOpts). Each test proves one property of Nova's build flow
(nova-reference.md 2.4 and 8): placement follows the weighers, server groups, reschedules,
capacity freed by deletes, instance info re-synced by a restarted compute, and claims holding
under concurrent builds. An unreachable broker skips, or fails under ``CI=true``.

All computes run without reserved memory and with allocation ratios of 1.0, so that a host's
capacity is exactly its fake-driver size and the expected placements can be computed here.
"""
import json

import pytest

from tests.functional import base
from tests.functional import build_helpers

pytestmark = [pytest.mark.functional, pytest.mark.timeout(180)]

RATIOS = {'ram_allocation_ratio': 1.0, 'cpu_allocation_ratio': 1.0,
          'disk_allocation_ratio': 1.0}
COMPUTE_CONF = {'DEFAULT': dict(RATIOS, reserved_host_memory_mb=0)}
#: Nova's Ocata default filters, plus CoreFilter (so claims get a vcpu limit) and the
#: instance-hint filters.
FILTERS = ('RetryFilter,AvailabilityZoneFilter,RamFilter,DiskFilter,CoreFilter,ComputeFilter,'
           'ComputeCapabilitiesFilter,ImagePropertiesFilter,ServerGroupAntiAffinityFilter,'
           'ServerGroupAffinityFilter,SameHostFilter,DifferentHostFilter')
SCHEDULER_CONF = {'filter_scheduler': {'enabled_filters': FILTERS}}
#: The flavor of most builds: one "unit" of every resource.
UNIT = {'vcpus': 1, 'memory_mb': 512, 'root_gb': 1}
BUILD = 'compute_build_and_run_instance'


def units(count, **conf):
    """Fake-driver sizes of a host holding ``count`` unit instances in every resource."""
    sizes = {'vcpus': count, 'memory_mb': count * UNIT['memory_mb'],
             'local_gb': count * UNIT['root_gb']}
    if conf:
        sizes['conf'] = conf
    return sizes


@pytest.fixture
def client(request, cluster):
    client = build_helpers.Client(cluster)
    request.addfinalizer(client.close)
    return client


def start(cluster, computes, max_attempts=None, scheduler_conf=None):
    retries = {'scheduler': {'max_attempts': max_attempts}} if max_attempts else {}
    scheduler_conf = build_helpers.merge_conf(SCHEDULER_CONF, retries, scheduler_conf)
    build_helpers.start(cluster, computes, scheduler_conf=scheduler_conf,
                        conductor_conf=retries, compute_conf=COMPUTE_CONF)


def hosts_of(built, uuids):
    return [built[uuid].host for uuid in uuids]


# -- 1. placement follows the weighers --------------------------------------------------------

def expected_placements(nodes, flavor, count):
    """Hosts that Nova's filter scheduler picks for ``count`` instances of one request.

    Per instance: keep the hosts with room (RamFilter, CoreFilter, DiskFilter at ratio 1.0),
    weigh with the default weighers (RAM, CPU and Disk weighers: free amount / the largest;
    IoOps weigher: -1 x I/O ops / the largest; the others give every host the same value and
    so 0), take the heaviest, then consume from it as the scheduler does (I/O ops + 1). Exact
    ties would make the answer depend on host order: the sizes are chosen so that none occurs.
    """
    free = {}
    for host, node in nodes.items():
        stats = node['stats']
        stats = json.loads(stats) if isinstance(stats, str) else (stats or {})
        free[host] = {'ram': node['free_ram_mb'],
                      'cpu': node['vcpus'] * node['cpu_allocation_ratio'] - node['vcpus_used'],
                      'disk': min(node['free_disk_gb'], node['disk_available_least']) * 1024,
                      'io': int(stats.get('io_workload', 0))}
    chosen = []
    for _ in range(count):
        fits = [h for h, f in free.items() if f['ram'] >= flavor.memory_mb and
                f['cpu'] >= flavor.vcpus and f['disk'] >= flavor.root_gb * 1024]
        assert fits, 'the hosts cannot hold %d instances' % count

        def norm(key, host):
            top = max(max(free[h][key], 0) for h in fits)
            return max(free[host][key], 0) / top if top > 0 else 0.0
        weights = {h: norm('ram', h) + norm('cpu', h) + norm('disk', h) - norm('io', h)
                   for h in fits}
        ranked = sorted(fits, key=weights.get, reverse=True)
        assert len(ranked) == 1 or weights[ranked[0]] - weights[ranked[1]] > 1e-6, \
            'test design: a tie between %s' % ranked[:2]
        host = ranked[0]
        chosen.append(host)
        free[host]['ram'] -= flavor.memory_mb
        free[host]['cpu'] -= flavor.vcpus
        free[host]['disk'] -= flavor.root_gb * 1024
        free[host]['io'] += 1
    return chosen


def test_boot_places_each_instance_where_the_weighers_say(cluster, client):
    start(cluster, {'small': units(7), 'medium': units(12), 'big': units(17)})
    flavor = client.flavor('m1.unit', **UNIT)
    expected = expected_placements(client.nodes(), flavor, 30)

    uuids = client.boot(flavor, num_instances=30, display_name='spread')
    built = client.wait_built(uuids, timeout=120)

    assert {uuid: inst.vm_state for uuid, inst in built.items()} == dict.fromkeys(uuids,
                                                                                  'active')
    # Instance i of the request gets the scheduler's i-th selection.
    assert hosts_of(built, uuids) == expected
    assert {h: expected.count(h) for h in ('small', 'medium', 'big')} == {
        'small': 5, 'medium': 10, 'big': 15}
    for uuid in uuids:
        events = client.events(uuid)
        assert [(e.action, e.event, e.result) for e in events] == [
            ('create', 'schedule', 'Success'), ('create', BUILD, 'Success')]
        assert events[1].host == built[uuid].host
    nodes = client.nodes()
    for host, node in nodes.items():
        assert node['memory_mb_used'] == expected.count(host) * UNIT['memory_mb']


# -- 2. server groups -----------------------------------------------------------------------

def test_server_groups_spread_and_pack(cluster, client):
    hosts = ('h1', 'h2', 'h3')
    start(cluster, {host: units(6) for host in hosts})
    flavor = client.flavor('m1.unit', **UNIT)

    spread = client.group('spread', 'anti-affinity')
    members = client.boot(flavor, num_instances=3, group=spread)
    built = client.wait_built(members)
    assert {inst.vm_state for inst in built.values()} == {'active'}
    assert sorted(hosts_of(built, members)) == list(hosts)

    # A fourth member has no host left: NoValidHost, recorded as the instance's fault.
    extra, = client.boot(flavor, group=spread)
    assert client.wait_built([extra])[extra].vm_state == 'error'
    fault, = client.faults(extra)
    assert fault.startswith('No valid host was found.'), fault
    assert 'ServerGroupAntiAffinityFilter' in fault, fault
    assert [(e.event, e.result) for e in client.events(extra)] == [('schedule', 'Error')]

    # Affinity packs, even onto the host the weighers like least by then.
    pack = client.group('pack', 'affinity')
    packed = client.boot(flavor, num_instances=3, group=pack)
    built = client.wait_built(packed)
    assert {inst.vm_state for inst in built.values()} == {'active'}
    host, = set(hosts_of(built, packed))
    late, = client.boot(flavor, group=pack)
    built = client.wait_built([late])
    assert (built[late].vm_state, built[late].host) == ('active', host)


# -- 3. reschedules ---------------------------------------------------------------------------

def test_failed_spawn_reschedules_to_an_alternate_until_attempts_run_out(cluster, client):
    # With max_attempts = 2 each selection carries one alternate. "flaky" is the biggest
    # host, so it is chosen first; "good" comes second.
    start(cluster, {'flaky': units(16, fake_driver={'spawn_failure': 'reschedule'}),
                    'good': units(8),
                    'broken': units(4, fake_driver={'spawn_failure': 'reschedule'})},
          max_attempts=2)
    flavor = client.flavor('m1.unit', **UNIT)

    moved, = client.boot(flavor)
    built = client.wait_built([moved])
    assert (built[moved].vm_state, built[moved].host) == ('active', 'good')
    events = client.events(moved)
    assert [(e.event, e.host, e.result) for e in events[1:]] == [
        (BUILD, 'flaky', 'Error'), (BUILD, 'good', 'Success')]
    assert events[0][:2] == ('create', 'schedule') and events[0].result == 'Success'
    assert 'fake driver told to fail spawn' in events[1].details
    assert client.faults(moved) == []

    # Away from "good", both candidates fail: the second failure exhausts the attempts.
    doomed, = client.boot(flavor, scheduler_hints={'different_host': [moved]})
    built = client.wait_built([doomed])
    assert (built[doomed].vm_state, built[doomed].host) == ('error', None)
    events = client.events(doomed)
    assert [(e.event, e.result) for e in events] == [
        ('schedule', 'Success'), (BUILD, 'Error'), (BUILD, 'Error')]
    assert sorted(e.host for e in events[1:]) == ['broken', 'flaky']
    fault, = client.faults(doomed)
    assert fault.startswith('Exceeded maximum number of retries. Exceeded max scheduling '
                            'attempts 2 for instance %s.' % doomed), fault
    assert 'fake driver told to fail spawn' in fault, fault
    # Failed claims and spawns give their resources back.
    nodes = client.nodes()
    assert {h: n['memory_mb_used'] for h, n in nodes.items()} == {
        'flaky': 0, 'good': UNIT['memory_mb'], 'broken': 0}


# -- 4. deletes free capacity -----------------------------------------------------------------

def test_delete_frees_capacity_for_the_next_request(cluster, client):
    start(cluster, {'tiny': units(2)})
    flavor = client.flavor('m1.unit', **UNIT)
    first = client.boot(flavor, num_instances=2)
    built = client.wait_built(first)
    assert [(i.vm_state, i.host) for i in built.values()] == [('active', 'tiny')] * 2

    refused, = client.boot(flavor)
    assert client.wait_built([refused])[refused].vm_state == 'error'
    assert client.faults(refused)[0].startswith('No valid host was found.')
    client.delete(refused)  # never reached a host: deleted by the API itself

    # Twice, so that both scheduler workers most likely answer one of the requests.
    running = list(first)
    for _round in range(2):
        client.delete(running.pop(0))
        base.wait_for(lambda: client.nodes()['tiny']['memory_mb_used'] == UNIT['memory_mb'],
                      30, message='the delete to free memory on tiny')
        again, = client.boot(flavor)
        built = client.wait_built([again])
        assert (built[again].vm_state, built[again].host) == ('active', 'tiny')
        running.append(again)
    client.wait_deleted([first[0], first[1]])


# -- 5. a restarted compute re-syncs the schedulers -----------------------------------------

def test_restarted_compute_resyncs_its_instances_to_restarted_schedulers(cluster, client):
    # "big" spawns slowly at first, so that a build can be caught half-way.
    computes = {'big': units(8), 'small': units(3)}
    slow = {'fake_driver': {'spawn_delay_seconds': 2}}
    debug = {'DEFAULT': {'debug': True}}
    start(cluster, dict(computes, big=dict(computes['big'], conf=slow)),
          scheduler_conf=debug)
    flavor = client.flavor('m1.unit', **UNIT)
    anchor, = client.boot(flavor)
    assert client.wait_built([anchor])[anchor].host == 'big'

    # A restarted scheduler reads the instances from the database at start-up...
    build_helpers.retire(cluster, 'scheduler')
    cluster.start_scheduler(workers=2, conf=build_helpers.merge_conf(SCHEDULER_CONF, debug))
    # ...but one that is still spawning when its compute dies never reaches it: the
    # compute tells the schedulers about an instance once it is ACTIVE.
    interrupted, = client.boot(flavor)
    base.wait_for(lambda: cluster.query(
        'SELECT host, task_state FROM instances WHERE uuid = :uuid', uuid=interrupted) ==
        [{'host': 'big', 'task_state': 'spawning'}], 30, message='a build spawning on big')
    cluster.kill('big')

    build_helpers.retire(cluster, 'big')
    reports = cluster.report_counts()[('compute', 'big')]
    cluster.start_compute('big', conf=COMPUTE_CONF, **computes['big'])
    # init_host: the interrupted build goes to ERROR (it keeps its host, as in Nova), then
    # update_instance_info carries the host's instances to each worker's fanout queue.
    assert (client.get(interrupted).vm_state, client.get(interrupted).host) == ('error', 'big')
    synced = 'Successfully updated the cached instance information for host big'
    base.wait_for(lambda: cluster.log('scheduler').count(synced) >= 2, 30,
                  message='both scheduler workers to receive the instances of big')
    # As in Nova, a restarted compute is down (ComputeFilter) until its first state report,
    # INITIAL_REPORTING_DELAY (5 s) after it starts: the killed one's last report is older.
    base.wait_for(lambda: cluster.report_counts()[('compute', 'big')] > reports, 30,
                  message='big to report its state again')

    # "big" has the most free room, yet the hints keep new instances away from the
    # interrupted one, or put them next to the anchor.
    away, = client.boot(flavor, scheduler_hints={'different_host': [interrupted]})
    near, = client.boot(flavor, scheduler_hints={'same_host': [anchor]})
    built = client.wait_built([away, near])
    assert [(built[u].vm_state, built[u].host) for u in (away, near)] == [
        ('active', 'small'), ('active', 'big')]


# -- 6. concurrent builds never overcommit -------------------------------------------------

def test_concurrent_builds_never_overcommit_a_host(cluster, client):
    # Each host runs out of a different resource first: 2 by vcpus, 3 by RAM, 4 by disk.
    computes = {'cpu-bound': {'vcpus': 2, 'memory_mb': 8192, 'local_gb': 100},
                'ram-bound': {'vcpus': 8, 'memory_mb': 3 * 512, 'local_gb': 100},
                'disk-bound': {'vcpus': 8, 'memory_mb': 8192, 'local_gb': 4}}
    slots = {'cpu-bound': 2, 'ram-bound': 3, 'disk-bound': 4}
    delay = {'fake_driver': {'spawn_delay_seconds': 0.3}}
    start(cluster, {host: dict(sizes, conf=delay) for host, sizes in computes.items()})
    flavor = client.flavor('m1.unit', **UNIT)

    uuids = client.boot_concurrently(flavor, threads=4, each=4)

    built = client.wait_built(uuids, timeout=120)
    states = [inst.vm_state for inst in built.values()]
    assert set(states) <= {'active', 'error'}
    active = [inst.host for inst in built.values() if inst.vm_state == 'active']
    assert 0 < len(active) <= sum(slots.values())
    for uuid, inst in built.items():
        if inst.vm_state == 'error':
            fault = client.faults(uuid)
            assert fault and ('No valid host was found.' in fault[0] or
                              'Exceeded maximum number of retries.' in fault[0]), fault

    for host, node in client.nodes().items():
        assert node['memory_mb_used'] <= node['memory_mb'] * node['ram_allocation_ratio']
        assert node['vcpus_used'] <= node['vcpus'] * node['cpu_allocation_ratio']
        assert node['local_gb_used'] <= node['local_gb']
        # The record counts exactly the instances that run there.
        assert active.count(host) <= slots[host]
        assert node['memory_mb_used'] == active.count(host) * UNIT['memory_mb'], host
    assert cluster.query("SELECT uuid FROM instances WHERE deleted = 0 AND "
                         "vm_state = 'building'") == []
