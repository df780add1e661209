"""minisched-cluster demo end to end: on RabbitMQ, and on the fake:// fallback.

The README's first command runs ``minisched-cluster demo``; these tests run the installed
console script the same way, as a subprocess, and read what it prints.
"""
import re
import socket
import subprocess

from tests.functional import base


def _run_demo(tmp_path, transport_url, instances=4, computes=3):
    state_dir = tmp_path / 'cluster'
    result = subprocess.run(
        [base.script('minisched-cluster'), '--state-dir', str(state_dir), '--transport-url',
         transport_url, '--computes', str(computes), 'demo', '--instances', str(instances)],
        capture_output=True, text=True, timeout=240)
    return result, state_dir


def _landed(output):
    """``{instance name: host}`` from the demo's placement table."""
    return dict(re.findall(r'^\| (demo-\d+) +\| \S+ +\| (\S+) +\| active +\|$', output,
                           re.MULTILINE))


def _closed_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]  # nothing listens once the socket is closed


def test_demo_on_rabbitmq_boots_and_stops(tmp_path, transport_url):
    result, state_dir = _run_demo(tmp_path, transport_url)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'Using RabbitMQ at' in result.stdout
    assert 'Discovered 3 new compute host(s).' in result.stdout
    landed = _landed(result.stdout)
    assert len(landed) == 4
    assert set(landed.values()) <= {'compute1', 'compute2', 'compute3'}
    assert 'Stopped.' in result.stdout
    # The console is the demo's: no INFO or DEBUG log record of a library lands on it.
    assert not re.search(r'^\d{4}-\d\d-\d\d \S+ \d+ (INFO|DEBUG) ',
                         result.stdout + result.stderr, re.MULTILINE), result.stderr
    # every child service logged a clean stop and no traceback
    for name in ('conductor', 'scheduler', 'compute1'):
        log = (state_dir / ('%s.log' % name)).read_text()
        assert 'Traceback' not in log, log[-3000:]
    assert not (state_dir / 'cluster.json').exists()


def test_demo_falls_back_to_fake_transport(tmp_path):
    url = 'rabbit://guest:guest@127.0.0.1:%d/' % _closed_port()
    result, state_dir = _run_demo(tmp_path, url, instances=3, computes=2)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'in-memory fake:// transport' in result.stdout
    assert 'minisched-cluster' not in result.stderr
    assert len(_landed(result.stdout)) == 3
    assert (state_dir / 'services.log').exists()


def test_bad_arguments_exit_non_zero_with_one_line(tmp_path):
    result = subprocess.run([base.script('minisched-cluster'), '--computes', '0', 'demo'],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert '--computes must be at least 1' in result.stderr
