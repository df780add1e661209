"""minisched-cluster demo end to end: on RabbitMQ, and on the fake:// fallback.

The README's first command runs ``minisched-cluster demo``; these tests run the installed
console script the same way, as a subprocess, and read what it prints: where each instance
landed and why, every reschedule, and a second demo that starts as clean as the first.
"""
import os
import re
import shutil
import subprocess

import pytest

from tests import local_ports
from tests.functional import base

pytestmark = [pytest.mark.functional, pytest.mark.timeout(480)]

#: ``demo-01  m1.small  -> compute3 (weight 1.000); runner-up compute2 (0.500); ...``
PLACEMENT = re.compile(r'^  (demo-\d+) +\S+ +-> (compute\d) \(weight -?\d+\.\d{3}\).*; '
                       r'(?:runner-up compute\d \(-?\d+\.\d{3}\)[^;]*|no runner-up); .+$',
                       re.MULTILINE)


def _run_demo(tmp_path, transport_url, instances=4, computes=3, env=None, extra=()):
    state_dir = tmp_path / 'cluster'
    result = subprocess.run(
        [base.script('minisched-cluster'), '--state-dir', str(state_dir), '--transport-url',
         transport_url, '--computes', str(computes), *extra, 'demo', '--instances',
         str(instances)], capture_output=True, text=True, timeout=300, env=env)
    return result, state_dir


def _landed(output):
    """``{instance name: host}`` from the demo's placement table."""
    return dict(re.findall(r'^\| (demo-\d+) +\| \S+ +\| (\S+) +\| active +\|$', output,
                           re.MULTILINE))


def test_demo_on_rabbitmq_boots_and_stops(tmp_path, transport_url):
    result, state_dir = _run_demo(tmp_path, transport_url)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'Using RabbitMQ at' in result.stdout
    assert 'Discovered 3 new compute host(s).' in result.stdout
    landed = _landed(result.stdout)
    assert len(landed) == 4
    assert set(landed.values()) <= {'compute1', 'compute2', 'compute3'}
    # Why: each placement names the host it landed on (the table's), its weight, the
    # runner-up; the usage names the allocation ratios behind the limits.
    assert dict(PLACEMENT.findall(result.stdout)) == landed, result.stdout
    assert re.search(r'runner-up compute\d \(-?\d+\.\d{3}\), \w+Weigher put the first '
                     r'ahead most \(\+\d+\.\d{3}\)', result.stdout), result.stdout
    # Nova 34's path by default: its filters, Placement's ratios and each instance's
    # allocations on the host it landed on.
    assert re.search(r'^Scheduler: filters ComputeFilter, ComputeCapabilitiesFilter, '
                     r'ImagePropertiesFilter, ServerGroupAntiAffinityFilter, '
                     r'ServerGroupAffinityFilter; weighers .*RAMWeigher x1[,; ]',
                     result.stdout, re.MULTILINE), result.stdout
    assert re.search(r'^\| compute1 +\| \d+/4 \(x4 = 16\) +\| \d+/16384 \(x1 = 16384\) ',
                     result.stdout, re.MULTILINE), result.stdout
    allocated = dict(re.findall(r'^\| (demo-\d+) +\| (compute\d) +\| DISK_GB=\d+, '
                                r'MEMORY_MB=\d+, VCPU=\d \|$', result.stdout, re.MULTILINE))
    assert allocated == landed, result.stdout
    assert 'Stopped.' in result.stdout
    # The console is the demo's: no log record lands on it (they go to log files).
    assert not re.search(r'^\d{4}-\d\d-\d\d \S+ \d+ (INFO|DEBUG|WARNING|ERROR) ',
                         result.stdout + result.stderr, re.MULTILINE), result.stderr
    # every child service logged a clean stop and no traceback
    for name in ('conductor', 'scheduler', 'compute1', 'placement'):
        log = (state_dir / ('%s.log' % name)).read_text()
        assert 'Traceback' not in log, log[-3000:]
    assert not (state_dir / 'cluster.json').exists()


def test_demo_falls_back_to_fake_transport_and_runs_without_placement(tmp_path):
    result, state_dir = _run_demo(tmp_path, _fake_url(), instances=3, computes=2,
                                  extra=['--no-placement'])
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'in-memory fake:// transport' in result.stdout
    assert 'minisched-cluster' not in result.stderr
    assert len(_landed(result.stdout)) == 3
    assert (state_dir / 'services.log').exists()
    # The path without Placement: none started, Ocata's filters, Rocky's ratios.
    assert 'Placement' not in result.stdout, result.stdout
    assert not (state_dir / 'placement.log').exists()
    assert re.search(r'^Scheduler: filters RetryFilter, AvailabilityZoneFilter, RamFilter, '
                     r'DiskFilter, ', result.stdout, re.MULTILINE), result.stdout
    assert re.search(r'^\| compute1 +\| \d+/4 \(x16 = 64\) +\| \d+/16384 \(x1\.5 = 24576\) ',
                     result.stdout, re.MULTILINE), result.stdout


def _fake_url():
    return 'rabbit://guest:guest@127.0.0.1:%d/' % local_ports.closed_port()


def test_a_second_demo_starts_as_clean_as_the_first(tmp_path):
    first, state_dir = _run_demo(tmp_path, _fake_url(), instances=6, computes=2)
    assert first.returncode == 0, first.stdout + first.stderr
    second, _ = _run_demo(tmp_path, _fake_url(), instances=6, computes=2)
    assert second.returncode == 0, second.stdout + second.stderr
    assert 'Removed the earlier cluster state in %s.' % state_dir in second.stdout
    assert 'Removed the earlier' not in first.stdout
    # The same requests on the same empty hosts: the same placements and usage.
    assert _landed(second.stdout) == _landed(first.stdout)
    usage = lambda out: out[out.index('Per-host usage'):out.index('Stopping')]
    assert usage(second.stdout) == usage(first.stdout)


def test_the_demo_tells_every_reschedule_and_why_it_failed(tmp_path):
    # Every compute fails the first spawn of each instance (a reschedulable error): the
    # instance moves on after each, until the scheduling attempts run out.
    env = dict(os.environ, OS_FAKE_DRIVER__SPAWN_FAILURE='first_reschedule',
               TMPDIR=str(tmp_path))
    result = subprocess.run(
        [base.script('minisched-cluster'), 'demo', '--transport-url', _fake_url(),
         '--instances', '1'], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    moved = re.findall(r'^      rescheduled from (compute\d): (.+)$', result.stdout,
                       re.MULTILINE)
    assert sorted(host for host, _reason in moved) == ['compute1', 'compute2', 'compute3']
    assert {reason for _host, reason in moved} == {
        'Insufficient compute resources: fake driver told to fail spawn.'}
    assert re.search(r'^  demo-01 +m1\.small +-> no host; first choice (compute\d) ',
                     result.stdout, re.MULTILINE).group(1) == moved[0][0]
    assert re.search(r'^      ERROR: Exceeded maximum number of retries\. ', result.stdout,
                     re.MULTILINE), result.stdout
    # A failed demo keeps its (temporary) state directory for its logs, and says where.
    kept = re.search(r'^Config, databases and logs are in (\S+)\.$', result.stdout,
                     re.MULTILINE).group(1)
    assert os.path.dirname(kept) == str(tmp_path)
    assert os.path.exists(os.path.join(kept, 'services.log'))
    shutil.rmtree(kept)


def test_bad_arguments_exit_non_zero_with_one_line(tmp_path):
    result = subprocess.run([base.script('minisched-cluster'), '--computes', '0', 'demo'],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert '--computes must be at least 1' in result.stderr
