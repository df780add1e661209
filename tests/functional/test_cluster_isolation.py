"""minisched-cluster clusters side by side on one RabbitMQ, and the state one leaves.

Two demos at once each run on a vhost of their own and neither database gains the other's
rows; a cluster on a vhost where another one runs refuses to start; ``status`` tells which
processes run, right after ``down`` too; ``up`` on an earlier state says so and does not
show the earlier run's instances as running. What is checked is the broker's side: the
clusters run without Placement (``--no-placement``; each Placement is on a port of its own,
and test_cluster.py runs the demo with one).
"""
import json
import os
import re
import subprocess

import pytest
import sqlalchemy as sa

from minisched.localcluster import broker
from tests.functional import base

pytestmark = [pytest.mark.functional, pytest.mark.timeout(420)]


def _cluster_cmd(*args, timeout=240):
    return subprocess.run([base.script('minisched-cluster')] + list(args),
                          capture_output=True, text=True, timeout=timeout)


def _manage(state_dir, *args):
    result = subprocess.run([base.script('minisched-manage'), '--config-file',
                             str(state_dir / 'minisched.conf')] + list(args),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _rows(path, query):
    engine = sa.create_engine('sqlite:///%s' % path)
    try:
        with engine.connect() as connection:
            return connection.execute(sa.text(query)).fetchall()
    finally:
        engine.dispose()


def test_two_demos_at_once_each_on_a_vhost_of_its_own(tmp_path, monkeypatch):
    base.check_rabbit(base.TRANSPORT_URL)
    if broker.rabbitmqctl_for(base.TRANSPORT_URL) is None:
        pytest.skip('minisched-cluster makes vhosts with a local rabbitmqctl only')
    monkeypatch.setenv('MINISCHED_TRANSPORT_URL', base.TRANSPORT_URL)
    sizes = {'a': (2, 3), 'b': (3, 4)}  # computes, instances
    runs = {name: subprocess.Popen(
        [base.script('minisched-cluster'), '--no-placement', 'demo', '--state-dir',
         str(tmp_path / name),
         '--computes', str(computes), '--instances', str(instances)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for name, (computes, instances) in sizes.items()}
    outputs = {name: run.communicate(timeout=300)[0] for name, run in runs.items()}
    for name, run in runs.items():
        assert run.returncode == 0, outputs[name]
    vhosts = {name: re.search(r'on vhost (minisched-cluster-\w+) of its own', out).group(1)
              for name, out in outputs.items()}
    assert vhosts['a'] != vhosts['b']
    assert not set(vhosts.values()) & base.vhosts()  # deleted when each demo stopped
    for name, (computes, instances) in sizes.items():
        cell = tmp_path / name / 'minisched.sqlite'
        hosts = sorted(row[0] for row in _rows(
            cell, "SELECT host FROM services WHERE binary = 'minisched-compute'"))
        assert hosts == ['compute%d' % (i + 1) for i in range(computes)]
        assert _rows(cell, 'SELECT count(*) FROM instances')[0][0] == instances
        assert _rows(cell, 'SELECT count(*) FROM compute_nodes')[0][0] == computes
        for log in (tmp_path / name).glob('*.log'):
            text = log.read_text()
            assert 'ServiceNotFound' not in text and 'ReadOnlyFieldError' not in text, log


def test_a_busy_vhost_is_refused_status_and_reuse(tmp_path, transport_url):
    state = tmp_path / 'first'
    up = _cluster_cmd('up', '--detach', '--no-placement', '--state-dir', str(state),
                      '--transport-url', transport_url, '--computes', '2')
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert ('Operate it with: minisched-manage --config-file %s --config-dir %s service '
                'list' % (state / 'minisched.conf', state / 'minisched.conf.d')) in up.stdout
        assert (state / 'minisched.env').exists()
        # A transport URL given is used as given: no vhost of the tool's own.
        assert 'transport_url = %s\n' % transport_url in (state / 'minisched.conf').read_text()
        assert 'of its own' not in up.stdout

        # A second cluster on the same vhost would share its queues: refused, named.
        other = _cluster_cmd('demo', '--no-placement', '--state-dir', str(tmp_path / 'second'),
                             '--transport-url', transport_url, '--computes', '2')
        assert other.returncode == 1, other.stdout + other.stderr
        assert 'already have consumers' in other.stderr
        for queue in ('conductor (1)', 'scheduler (1)', 'compute (2)', 'compute.compute1 (1)'):
            assert queue in other.stderr, other.stderr
        assert 'rabbitmqctl add_vhost NAME' in other.stderr
        assert not (tmp_path / 'second' / 'minisched.sqlite').exists()

        status = _cluster_cmd('status', '--state-dir', str(state))
        assert status.returncode == 0, status.stderr
        assert len(re.findall(r'\| enabled \| up +\| .*\| running \(pid \d+\) +\|$',
                              status.stdout, re.MULTILINE)) == 4, status.stdout

        _manage(state, 'flavor', 'create', 'tiny', '--ram', '512', '--vcpus', '1',
                '--disk', '1')
        _manage(state, 'server', 'create', '--flavor', 'tiny', '--num-instances', '2',
                '--wait')
    finally:
        down = _cluster_cmd('down', '--state-dir', str(state))
    assert down.returncode == 0, down.stdout + down.stderr
    assert 'Stopped 4 service(s).' in down.stdout

    # At once: the database still says up (service_down_time), the processes are gone.
    status = _cluster_cmd('status', '--state-dir', str(state))
    processes = re.findall(r'\| (\S+) +\|$', status.stdout, re.MULTILINE)
    assert processes[1:] == ['stopped'] * 4, status.stdout  # [0] is the header

    # Up again on that state: it says so, and the instances of the first run are not shown
    # running on computes that do not run them (the fake driver kept none).
    again = _cluster_cmd('up', '--detach', '--no-placement', '--state-dir', str(state),
                         '--transport-url', transport_url, '--computes', '1')
    try:
        assert again.returncode == 0, again.stdout + again.stderr
        assert 'Reusing the state directory %s' % state in again.stdout
        assert ('2 instance(s) of an earlier run are set to ERROR and count on no host'
                in again.stdout)
        listed = _manage(state, 'server', 'list')
        assert len(re.findall(r'\| ERROR ', listed)) == 2, listed  # the compute API's status
        assert ' ACTIVE ' not in listed
    finally:
        down = _cluster_cmd('down', '--purge', '--state-dir', str(state))
    assert down.returncode == 0, down.stdout + down.stderr
    assert not state.exists()


def test_down_stops_what_an_up_killed_mid_start_had_started(tmp_path):
    """``up`` records each process as it starts it: SIGKILLed right after it started
    Placement (before any service), it leaves that Placement running, and ``down`` stops it
    and deletes the vhost ``up`` made (before, the Placement was recorded with the services
    only, and stayed)."""
    base.check_rabbit(base.TRANSPORT_URL)
    if broker.rabbitmqctl_for(base.TRANSPORT_URL) is None:
        pytest.skip('minisched-cluster makes vhosts with a local rabbitmqctl only')
    state = tmp_path / 'killed'
    up = subprocess.Popen([base.script('minisched-cluster'), 'up', '--detach', '--state-dir',
                           str(state), '--computes', '2'],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    for line in up.stdout:
        seen.append(line)
        if line.startswith('  Placement: http'):
            break
    up.kill()
    up.wait(timeout=30)
    recorded = json.loads((state / 'cluster.json').read_text())
    vhost = re.search(r'vhost (minisched-cluster-\w+)', ''.join(seen)).group(1)
    try:
        assert list(recorded) == ['placement'], ''.join(seen)
        assert _alive(recorded['placement'])
    finally:
        down = _cluster_cmd('down', '--state-dir', str(state))
    assert down.returncode == 0, down.stdout + down.stderr
    assert 'Stopped 1 service(s).' in down.stdout, down.stdout
    assert not _alive(recorded['placement'])
    assert vhost not in base.vhosts()


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
