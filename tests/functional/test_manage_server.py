"""``minisched-manage`` flavor, server, scheduler and aggregate against a real deployment.

A conductor, a scheduler (two workers) and two computes of different sizes run as processes
on the real RabbitMQ and SQLite; the commands run as an operator runs them, in subprocesses.
Each test's cluster gets a vhost of its own, made and deleted with rabbitmqctl
(``base.make_vhost``; ``MINISCHED_TEST_RABBITMQCTL`` says how to reach it): topic queues such
as ``conductor`` are named by topic alone, so clusters sharing a vhost would take each other's
messages. Without a broker, or without a vhost of its own, a test skips (fails under
``CI=true``).
"""
import json

import pytest

from tests.functional import base
from tests.functional import resilience

pytestmark = [pytest.mark.functional, pytest.mark.timeout(240)]

COMPUTES = {
    'small': {'vcpus': 2, 'memory_mb': 2048, 'local_gb': 20},
    'big': {'vcpus': 8, 'memory_mb': 8192, 'local_gb': 80},
}
TIMEOUT = 120


def manage(cluster, *args, expect=0):
    """``(stdout, stderr)`` of ``minisched-manage *args``; its exit code must be ``expect``."""
    result = cluster.run_manage(*args, check=False, timeout=TIMEOUT)
    assert result.returncode == expect, 'minisched-manage %s exited %d:\n%s%s' % (
        ' '.join(map(str, args)), result.returncode, result.stdout, result.stderr)
    return result.stdout, result.stderr


@pytest.fixture
def cluster(request, tmp_path, database):
    """A ``base.Cluster`` with synced databases on a vhost made for it, deleted after."""
    url = resilience.own_vhost(request)
    cluster = base.Cluster(tmp_path, url, database, own_vhost=True)
    # Read by conftest's report hook: a failed test shows the tail of each service log.
    request.node.minisched_clusters = getattr(request.node, 'minisched_clusters', []) + [cluster]
    request.addfinalizer(cluster.kill_all)  # finalizers run last-in first-out
    cluster.sync_db()
    return cluster


def table(text):
    """Rows of the first table in ``text`` as dicts keyed by snake_case headers."""
    lines = [line for line in text.splitlines() if line.startswith('|')]
    split = lambda line: [cell.strip() for cell in line.strip('|').split('|')]
    headers = [h.lower().replace(' ', '_') for h in split(lines[0])] if lines else []
    return [dict(zip(headers, split(line))) for line in lines[1:]]


def start(cluster):
    cluster.start_conductor()
    cluster.start_scheduler(workers=2)
    for host, sizes in COMPUTES.items():
        cluster.start_compute(host, wait=False, **sizes)
    cluster.wait_ready(*COMPUTES)
    base.wait_for(lambda: len(cluster.query('SELECT id FROM compute_nodes WHERE deleted = 0'))
                  == len(COMPUTES), 30, message='both compute nodes to be recorded')


def test_servers_are_built_shown_and_deleted_through_manage(cluster):
    start(cluster)
    manage(cluster, 'flavor', 'create', 'm1.test', '--ram', 512, '--vcpus', 1, '--disk', 5)

    out, _ = manage(cluster, 'server', 'create', '--flavor', 'm1.test', '--num-instances', 4,
                    '--name', 'web', '--wait', '--timeout', 90)
    uuids = out.splitlines()[:4]
    built = table(out)
    assert sorted(row['id'] for row in built) == sorted(uuids)
    assert {row['status'] for row in built} == {'ACTIVE'}
    assert {row['power_state'] for row in built} == {'Running'}
    assert {row['host'] for row in built} <= set(COMPUTES)

    listed = json.loads(manage(cluster, 'server', 'list', '-f', 'json')[0])
    assert sorted(row['ID'] for row in listed) == sorted(uuids)
    assert sorted(row['Name'] for row in listed) == ['web-1', 'web-2', 'web-3', 'web-4']
    assert {row['Status'] for row in listed} == {'ACTIVE'}
    listed = table(manage(cluster, 'server', 'list')[0])
    assert sorted(row['name'] for row in listed) == ['web-1', 'web-2', 'web-3', 'web-4']
    assert {row['flavor'] for row in listed} == {'m1.test'}
    on_big = table(manage(cluster, 'server', 'list', '--host', 'big')[0])
    assert {row['host'] for row in on_big} <= {'big'}
    assert table(manage(cluster, 'server', 'list', '--project', 'other')[0]) == []

    name = next(row['name'] for row in listed if row['id'] == uuids[0])
    out, _ = manage(cluster, 'server', 'show', name)
    shown = {row['field']: row['value'] for row in table(out)}
    assert shown['id'] == uuids[0]
    assert (shown['status'], shown['vm_state']) == ('ACTIVE', 'active')
    assert shown['host'] in COMPUTES
    assert 'Faults:' not in out
    events = table(out.split('Events:\n')[1])
    assert {(row['action'], row['event'], row['result']) for row in events} == {
        ('create', 'schedule', 'Success'),
        ('create', 'compute_build_and_run_instance', 'Success')}
    assert [row['host'] for row in events if row['event'] == 'compute_build_and_run_instance'] \
        == [shown['host']]

    # Anti-affinity: one member per host; the group knows its members and their hosts.
    manage(cluster, 'group', 'create', 'spread', '--policy', 'anti-affinity')
    out, _ = manage(cluster, 'server', 'create', '--flavor', 'm1.test', '--num-instances', 2,
                    '--group', 'spread', '--wait', '--timeout', 90)
    members = out.splitlines()[:2]
    assert sorted(row['host'] for row in table(out)) == sorted(COMPUTES)
    group = {row['field']: row['value'] for row in table(manage(cluster, 'group', 'show',
                                                                 'spread')[0])}
    assert sorted(group['members'].split(', ')) == sorted(members)
    assert group['member_hosts'] == ', '.join(sorted(COMPUTES))

    out, _ = manage(cluster, 'server', 'delete', *uuids + members, '--wait', '--timeout', 90)
    assert 'Deleted 6 server(s).' in out
    assert manage(cluster, 'server', 'list', '--all-projects', '-f', 'value')[0] == ''


def test_scheduler_select_and_a_build_that_no_host_fits(cluster):
    start(cluster)
    out, _ = manage(cluster, 'scheduler', 'select', '--ram', 512, '--vcpus', 1, '--disk', 1,
                    '--num-instances', 2, '--alternates')
    rows = table(out)
    assert [(row['instance_#'], row['choice']) for row in rows] == [
        ('1', 'selected'), ('1', 'alternate 1'), ('2', 'selected'), ('2', 'alternate 1')]
    assert {row['host'] for row in rows} == set(COMPUTES)
    assert {row['cell'] for row in rows} == {'local'}
    assert all('memory_mb=' in row['limits'] for row in rows)

    out, _ = manage(cluster, 'scheduler', 'select', '--ram', 512, '--vcpus', 1, '--disk', 1,
                    '--ignore-host', 'big', '--json')
    assert json.loads(out)[0]['host'] == 'small'

    out, err = manage(cluster, 'scheduler', 'select', '--ram', 100000, '--vcpus', 1, '--disk',
                      1, expect=1)
    assert out == ''
    assert err.count('\n') == 1, err  # one line: no remote traceback
    assert err.startswith('No valid host was found. ')
    assert 'RamFilter rejected 2 of 2' in err

    # The same request as a build: buried in ERROR with the explanation as its fault.
    manage(cluster, 'flavor', 'create', 'm1.huge', '--ram', 100000, '--vcpus', 1, '--disk', 1)
    out, err = manage(cluster, 'server', 'create', '--flavor', 'm1.huge', '--wait',
                      '--timeout', 60, expect=1)
    uuid = out.splitlines()[0]
    assert table(out)[0]['status'] == 'ERROR'
    assert err == '1 of 1 instance(s) went to ERROR (see server show %s)\n' % uuid
    # ERROR shows as the conductor creates the instance; its fault and events follow.
    out = base.wait_for(lambda: _with_fault(manage(cluster, 'server', 'show', uuid)[0]), 30,
                        message='the fault of %s' % uuid)
    fault = table(out.split('Faults:\n')[1].split('Actions:\n')[0])[0]
    assert fault['message'].startswith('No valid host was found.')
    assert 'RamFilter rejected 2 of 2' in fault['message']
    events = table(out.split('Events:\n')[1])
    assert [(row['event'], row['result']) for row in events] == [('schedule', 'Error')]
    manage(cluster, 'server', 'delete', uuid, '--wait', '--timeout', 60)


def _with_fault(show_output):
    return show_output if 'Faults:' in show_output and 'schedule' in show_output else None


def test_aggregate_zone_reaches_the_running_schedulers(cluster):
    start(cluster)
    manage(cluster, 'aggregate', 'create', 'rack1', '--zone', 'az1')
    manage(cluster, 'aggregate', 'add-host', 'rack1', 'small')

    # The schedulers read aggregates once at start-up: only the cast can tell them. Two
    # workers, each with its own fanout queue: ask a few times to reach both.
    def select_in(zone, expect):
        return manage(cluster, 'scheduler', 'select', '--ram', 64, '--vcpus', 1, '--disk', 0,
                      '--availability-zone', zone, '--json', expect=expect)
    for _ in range(3):
        assert [sel['host'] for sel in json.loads(select_in('az1', 0)[0])] == ['small']
    _out, err = select_in('az2', 1)
    assert 'AvailabilityZoneFilter rejected 2 of 2' in err

    manage(cluster, 'aggregate', 'remove-host', 'rack1', 'small')
    manage(cluster, 'aggregate', 'delete', 'rack1')
    for _ in range(3):
        _out, err = select_in('az1', 1)
        assert 'AvailabilityZoneFilter rejected 2 of 2' in err


def test_builds_not_placed_yet_are_shown_and_listed(cluster):
    """No conductor runs: the builds stay build requests, shown and listed as such (a read
    of what only a cell knows used to look the instance up in a cell: "not found")."""
    manage(cluster, 'flavor', 'create', 'm1.test', '--ram', 512, '--vcpus', 1, '--disk', 5)
    out, _ = manage(cluster, 'server', 'create', '--flavor', 'm1.test', '--num-instances', 2,
                    '--name', 'queued')
    uuids = out.splitlines()[:2]
    shown = {row['field']: row['value']
             for row in table(manage(cluster, 'server', 'show', uuids[0])[0])}
    assert (shown['id'], shown['name'], shown['vm_state'], shown['task_state']) == (
        uuids[0], 'queued-1', 'building', 'scheduling')
    assert shown['host'] in ('', 'None', '-') and shown['created'] not in ('', 'None', '-')
    for args in (('--all-projects',), ()):
        listed = table(manage(cluster, 'server', 'list', *args)[0])
        assert sorted(row['id'] for row in listed) == sorted(uuids)
        assert {row['status'] for row in listed} == {'BUILD'}  # the compute API's status


def test_absurd_counts_are_refused_at_once(cluster):
    """Refused before anything is written, and at once (the CLI used to build every
    instance of a count of 2**40 first: ``manage`` times out after TIMEOUT s); nothing is
    left in the API database."""
    manage(cluster, 'flavor', 'create', 'm1.test', '--ram', 512, '--vcpus', 1, '--disk', 5)
    for count in (5000, 1099511627776):
        out, err = manage(cluster, 'server', 'create', '--flavor', 'm1.test',
                          '--num-instances', count, expect=1)
        assert 'Requested %d instances, but at most 1000 can be created by one request' % (
            count) in out + err
    assert cluster.query('SELECT COUNT(*) AS n FROM build_requests') == [{'n': 0}]
