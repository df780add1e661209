"""Every accepted build ends ACTIVE or ERROR, with a fault, whatever fails under it.

* The database goes away for 20 s (a ``TcpProxy`` in front of PostgreSQL, cut) during a
  bounded stream of creates: the API's creates fail while it is away (not accepted), the
  conductor answers the computes DBTransientError and runs its build tasks again, the
  computes retry their writes; once it is back every accepted build ends ACTIVE or ERROR with
  a fault, no claim is left behind (each node's usage is what its ACTIVE instances hold) and
  the API records are as Nova leaves them.
* A compute is killed (SIGKILL) in the middle of a build and does not come back in time: the
  conductor's stuck-build check ends the build in ERROR with a fault, finishes its action and
  releases the host; the compute, started again, counts nothing for it.

Short bounds come from the configuration (``[conductor] stuck_build_timeout_seconds``,
``[DEFAULT] long_rpc_timeout``), so that nothing waits for the defaults.
"""
import collections
import re
import signal
import time

import pytest
import sqlalchemy as sa

from minisched import exception
from tests.functional import base
from tests.functional import build_helpers
from tests.functional import db_fixtures
from tests.functional import resilience
from tests.functional import tcp_proxy

pytestmark = [pytest.mark.functional, pytest.mark.both_backends, pytest.mark.timeout(240)]

BUILD_EVENT = 'compute_build_and_run_instance'
#: The outage, and when it starts after the first create.
OUTAGE_SECONDS = 20
OUTAGE_AFTER = 8
#: Creates: one every CREATE_INTERVAL s (the operator's 1.7/s) for CREATE_SECONDS.
CREATE_INTERVAL = 0.6
CREATE_SECONDS = 36
#: A compute retries a write for up to LONG_RPC_TIMEOUT s: through the whole outage.
LONG_RPC_TIMEOUT = 60
#: The stuck-build bound: above the longest silence of a build the outage delays (~31 s of
#: backoff, then its spawn), below the test's patience.
STUCK_BUILD_TIMEOUT = 45
#: Each spawn takes this long, so that several builds are spawning when the outage starts.
SPAWN_SECONDS = 3
#: Each compute reserves this much RAM; the flavor of every build.
RESERVED_MB = 512
FLAVOR = {'vcpus': 1, 'memory_mb': 256, 'root_gb': 1}
COMPUTES = ('c1', 'c2', 'c3')


def _direct(url):
    """A query function on the database at ``url`` (bypassing the cluster's proxy)."""
    def query(sql, **params):
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        try:
            with engine.connect() as conn:
                statement = sa.text(sql)
                if 'uuids' in params:
                    statement = statement.bindparams(sa.bindparam('uuids', expanding=True))
                return [dict(row) for row in conn.execute(statement, params).mappings()]
        finally:
            engine.dispose()
    return query


def _proxied(url, proxy):
    return sa.engine.make_url(url).set(host='127.0.0.1', port=proxy.port).render_as_string(
        hide_password=False)


class Accounting:
    """What became of accepted builds, read from the API and cell databases directly."""

    def __init__(self, api, cells):
        self.api = api        # query function of the API database
        self.cells = cells    # {cell name: query function}

    def instances(self, uuids):
        """{uuid: [(cell, row), ...]} of the live instance rows of ``uuids``."""
        found = collections.defaultdict(list)
        for cell, query in self.cells.items():
            for row in query('SELECT uuid, host, node, vm_state, task_state FROM instances '
                             'WHERE deleted = 0 AND uuid IN :uuids', uuids=list(uuids)):
                found[row['uuid']].append((cell, row))
        return found

    def settled(self, uuids):
        found = self.instances(uuids)
        return all(len(rows) == 1 and rows[0][1]['vm_state'] in ('active', 'error') and
                   rows[0][1]['task_state'] is None for rows in
                   (found.get(uuid, []) for uuid in uuids))

    def faults(self, cell, uuids):
        """{uuid: newest fault message}."""
        rows = self.cells[cell]('SELECT instance_uuid, message FROM instance_faults WHERE '
                                'instance_uuid IN :uuids ORDER BY id', uuids=list(uuids))
        return {row['instance_uuid']: row['message'] for row in rows}

    def open_events(self, cell, uuids):
        return self.cells[cell](
            'SELECT a.instance_uuid, e.event, e.host FROM instance_actions_events e JOIN '
            'instance_actions a ON e.action_id = a.id WHERE e.finish_time IS NULL AND '
            'a.instance_uuid IN :uuids', uuids=list(uuids))

    def successful_builds(self, cell, uuids):
        rows = self.cells[cell](
            "SELECT a.instance_uuid, COUNT(*) AS n FROM instance_actions_events e JOIN "
            "instance_actions a ON e.action_id = a.id WHERE e.event = :event AND "
            "e.result = 'Success' AND a.instance_uuid IN :uuids GROUP BY a.instance_uuid",
            event=BUILD_EVENT, uuids=list(uuids))
        return {row['instance_uuid']: row['n'] for row in rows}

    def report(self, sent, accepted):
        """(summary dict, problems list) for the builds ``accepted`` of ``sent`` creates."""
        found = self.instances(accepted)
        counts = collections.Counter()
        problems = []
        reasons = collections.Counter()
        for uuid in accepted:
            rows = found.get(uuid, [])
            states = [row['vm_state'] for _cell, row in rows]
            if len(rows) > 1:
                problems.append('%s has %d live rows: %s' % (uuid, len(rows), rows))
                counts['duplicated'] += 1
            elif not rows or states[0] not in ('active', 'error'):
                problems.append('%s lost: %s' % (uuid, rows or 'no instance record'))
                counts['lost'] += 1
            else:
                counts[states[0]] += 1
        for cell in self.cells:
            in_cell = [u for u in accepted if any(c == cell for c, _ in found.get(u, []))]
            if not in_cell:
                continue
            faults = self.faults(cell, in_cell)
            for uuid in in_cell:
                row = dict(found[uuid])[cell]
                if row['vm_state'] == 'error':
                    if uuid not in faults:
                        problems.append('%s is ERROR without a fault' % uuid)
                    reasons[faults.get(uuid, '(no fault)')] += 1
                    if row['host'] is not None:
                        problems.append('%s is ERROR on host %s' % (uuid, row['host']))
            for event in self.open_events(cell, in_cell):
                problems.append('%s: event %s on %s never finished' % (
                    event['instance_uuid'], event['event'], event['host']))
            for uuid, count in self.successful_builds(cell, in_cell).items():
                if count > 1:
                    problems.append('%s was built %d times' % (uuid, count))
                    counts['duplicated'] += 1
        summary = {'sent': sent, 'accepted': len(accepted), 'ACTIVE': counts['active'],
                   'ERROR': counts['error'], 'lost': counts['lost'],
                   'duplicated': counts['duplicated'], 'ERROR reasons': dict(reasons)}
        return summary, problems

    def orphans(self, accepted):
        """API rows that no accepted build explains, and mappings that point elsewhere."""
        problems = []
        requests = self.api('SELECT instance_uuid FROM build_requests')
        if requests:
            problems.append('build requests left: %s' % [r['instance_uuid'] for r in requests])
        cells = {row['id']: row['name'] for row in
                 self.api('SELECT id, name FROM cell_mappings')}
        found = self.instances(accepted)
        for row in self.api('SELECT instance_uuid, cell_id FROM instance_mappings'):
            uuid = row['instance_uuid']
            if uuid not in accepted:
                problems.append('instance mapping of %s, which no create returned' % uuid)
                continue
            where = [cell for cell, _row in found.get(uuid, [])]
            if [cells.get(row['cell_id'])] != where:
                problems.append('%s is in %s, its mapping names %s' % (
                    uuid, where, cells.get(row['cell_id'])))
        specs = {row['instance_uuid'] for row in
                 self.api('SELECT instance_uuid FROM request_specs')}
        missing = set(accepted) - specs
        if missing:
            problems.append('accepted builds without a request spec: %s' % sorted(missing))
        return problems, sorted(specs - set(accepted))

    def claims(self, cell):
        """Nodes whose usage is not what their ACTIVE instances hold: [(host, used, held)]."""
        query = self.cells[cell]
        held = {row['host']: row for row in query(
            "SELECT host, SUM(memory_mb) AS memory_mb, SUM(vcpus) AS vcpus, "
            "SUM(root_gb + ephemeral_gb) AS disk FROM instances WHERE deleted = 0 AND "
            "vm_state = 'active' GROUP BY host")}
        wrong = []
        for node in query('SELECT host, memory_mb_used, vcpus_used, local_gb_used FROM '
                          'compute_nodes WHERE deleted = 0'):
            mine = held.get(node['host'], {})
            expected = (RESERVED_MB + (mine.get('memory_mb') or 0), mine.get('vcpus') or 0,
                        mine.get('disk') or 0)
            used = (node['memory_mb_used'], node['vcpus_used'], node['local_gb_used'])
            if used != expected:
                wrong.append((node['host'], used, expected))
        return wrong


@pytest.mark.parametrize('database', ['postgresql'], indirect=True)
def test_database_outage_during_a_stream_of_creates_loses_no_build(request, tmp_path,
                                                                    transport_url, database):
    proxy = tcp_proxy.TcpProxy(sa.engine.make_url(database).port or 5432)
    request.addfinalizer(proxy.close)
    cell0_url, drop_cell0 = db_fixtures.make_db('postgresql')
    request.addfinalizer(drop_cell0)
    from minisched.db import migration
    migration.db_sync(cell0_url, 'main')
    cluster = resilience.make_cluster(
        request, tmp_path, transport_url, _proxied(database, proxy), shared_vhost=True,
        service_down_time=60, conf={
            'DEFAULT': {'long_rpc_timeout': LONG_RPC_TIMEOUT, 'update_resources_interval': 2,
                        'reserved_host_memory_mb': RESERVED_MB},
            'conductor': {'stuck_build_timeout_seconds': STUCK_BUILD_TIMEOUT},
            'fake_driver': {'spawn_delay_seconds': SPAWN_SECONDS}})
    cluster.start_conductor(wait=False)
    for host in COMPUTES:
        cluster.start_compute(host, vcpus=32, memory_mb=16384, wait=False)
    cluster.wait_ready('conductor', *COMPUTES)
    build_helpers.wait_nodes(cluster, COMPUTES)
    cluster.run_manage('cell', 'map_cell0', '--database_connection',
                       _proxied(cell0_url, proxy))
    cluster.run_manage('cell', 'simple_cell_setup')
    cluster.start_scheduler(workers=1)   # reads the cell mappings at start-up
    client = build_helpers.Client(cluster)
    request.addfinalizer(client.close)
    flavor = client.flavor('tiny', **FLAVOR)
    time.sleep(2)  # the scheduler's first view of the computes
    accounting = Accounting(_direct(database), {'cell1': _direct(database),
                                                'cell0': _direct(cell0_url)})

    sent, accepted, refused = 0, [], collections.Counter()
    started = time.monotonic()
    cut_at = restored_at = None
    while time.monotonic() - started < CREATE_SECONDS:
        elapsed = time.monotonic() - started
        if cut_at is None and elapsed >= OUTAGE_AFTER:
            proxy.cut()
            cut_at = time.monotonic()
        if cut_at and restored_at is None and time.monotonic() - cut_at >= OUTAGE_SECONDS:
            proxy.restore()
            restored_at = time.monotonic()
        sent += 1
        try:
            accepted += client.boot(flavor)
        except Exception as exc:  # the API's own database calls fail while it is away
            refused[type(exc).__name__] += 1
        time.sleep(max(0.0, started + sent * CREATE_INTERVAL - time.monotonic()))
    assert restored_at is not None
    assert len(accepted) >= 15 and refused, (len(accepted), refused)

    base.wait_for(lambda: accounting.settled(accepted), STUCK_BUILD_TIMEOUT + 45, interval=1,
                  message='every accepted build to end ACTIVE or ERROR')
    # A build's event finishes just after its state is written, a fault just after the
    # stuck-build check's ERROR: give the last ones a moment.
    final = []

    def consistent():
        final[:] = accounting.report(sent, accepted)
        return not final[1]
    try:
        base.wait_for(consistent, 10, interval=1)
    except AssertionError:
        pass
    summary, problems = final
    assert not problems, problems
    assert summary['lost'] == summary['duplicated'] == 0
    # Claims: the computes' next refresh (every 2 s) counts only what ACTIVE instances hold.
    base.wait_for(lambda: not accounting.claims('cell1'), 30, interval=1,
                  message='node usage to equal what the ACTIVE instances hold')
    # API records as Nova leaves them, once the stuck-build check removed what a create
    # cut off half-way left (a build request without a mapping).
    orphans = []

    def no_orphans():
        orphans[:] = accounting.orphans(accepted)[0]
        return not orphans
    base.wait_for(no_orphans, STUCK_BUILD_TIMEOUT + 20, interval=1,
                  message='no orphaned API record (last: %s)' % orphans)
    specs_of_refused = accounting.orphans(accepted)[1]
    # The builds that were spawning when the database went away retried their writes.
    caught = {uuid for host in COMPUTES for uuid in re.findall(
        r'The database is unavailable: .* of instance ([0-9a-f-]{36})\); trying again',
        cluster.log(host))}
    assert caught, 'no build was caught by the outage'
    print('\ndatabase outage %ds during %ds of creates: %s; %d builds retried their writes '
          'through it; creates refused while it was away: %s; request specs left by '
          'refused creates: %d' % (OUTAGE_SECONDS, CREATE_SECONDS, summary, len(caught),
                                   dict(refused), len(specs_of_refused)))


def test_compute_killed_mid_build_is_ended_by_the_conductor(cluster):
    timeout = 8
    cluster.start_conductor(wait=False, conf={
        'conductor': {'stuck_build_timeout_seconds': timeout},
        'DEFAULT': {'long_rpc_timeout': 3}})
    cluster.start_scheduler(workers=1, wait=False)
    compute_conf = {'DEFAULT': {'update_resources_interval': 1,
                                'reserved_host_memory_mb': RESERVED_MB}}
    cluster.start_compute('c1', conf=dict(compute_conf,
                                          fake_driver={'spawn_delay_seconds': 60}), wait=False)
    cluster.wait_ready('conductor', 'scheduler', 'c1')
    build_helpers.wait_nodes(cluster, ['c1'])
    client = build_helpers.Client(cluster)
    try:
        flavor = client.flavor('tiny', **FLAVOR)
        time.sleep(1)
        uuid, = client.boot(flavor)
        rows = lambda: cluster.query('SELECT host, vm_state, task_state FROM instances '
                                     'WHERE uuid = :u', u=uuid)
        base.wait_for(lambda: rows() and rows()[0]['task_state'] == 'spawning', 30,
                      message='the build to be spawning on c1')
        cluster.kill('c1', signal.SIGKILL)
        killed = time.monotonic()

        # (The conductor writes ERROR, the winner of its conditional update, then the fault.)
        instance = base.wait_for(lambda: rows()[0]['vm_state'] == 'error' and
                                 client.faults(uuid) and rows()[0], timeout + 20,
                                 interval=0.5, message='the build to be ERROR with a fault')
        waited = time.monotonic() - killed
        assert (instance['host'], instance['task_state']) == (None, None)
        assert client.faults(uuid) == [
            exception.InstanceBuildStuck(seconds=timeout).format_message()]
        events = client.events(uuid)
        assert [(e.event, e.host, e.result) for e in events] == [
            ('schedule', events[0].host, 'Success'), (BUILD_EVENT, 'c1', 'Error')]
        assert cluster.query('SELECT message FROM instance_actions WHERE instance_uuid = :u',
                             u=uuid) == [{'message': 'Error'}]

        # The compute comes back: the instance is no longer its own, nothing is counted.
        resilience.restart(cluster, 'c1', cluster.start_compute, host='c1',
                           conf=compute_conf)
        base.wait_for(lambda: cluster.query(
            'SELECT memory_mb_used FROM compute_nodes WHERE host = :h', h='c1') == [
                {'memory_mb_used': RESERVED_MB}], 30, message='c1 to count no usage')
        assert rows()[0]['vm_state'] == 'error'
        assert len(client.faults(uuid)) == 1
    finally:
        client.close()
    print('\ncompute killed mid-build: ERROR with a fault %.1fs later (bound %ds)'
          % (waited, timeout))
