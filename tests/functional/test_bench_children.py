"""A benchmark stopped from outside leaves no process behind.

``python -m benchmarks`` runs services (a scheduler and its workers, fake computes) and
spawned clients as its children. Killed with SIGKILL mid-run, the kernel kills them too (the
parent-death signal each child sets first); stopped with SIGTERM, the bench stops them itself
on the way out. Each run here is tagged through the environment, which every descendant
inherits, so that its processes can be found in /proc whatever their command line.
"""
import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from tests.functional import base

pytestmark = [pytest.mark.functional, pytest.mark.timeout(240)]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TAG = 'MINISCHED_BENCH_TEST_TAG'


def _tagged(tag):
    """Pids of the live processes whose environment carries ``TAG=tag``."""
    found = []
    marker = ('%s=%s' % (TAG, tag)).encode()
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/environ' % entry, 'rb') as handle:
                if marker in handle.read().split(b'\0'):
                    with open('/proc/%s/stat' % entry) as stat:
                        if stat.read().split(') ')[-1][0] != 'Z':  # zombies are gone
                            found.append(int(entry))
        except OSError:
            continue
    return found


def _cmdlines(pids):
    lines = []
    for pid in pids:
        try:
            with open('/proc/%d/cmdline' % pid, 'rb') as handle:
                lines.append(handle.read().replace(b'\0', b' ').decode(errors='replace'))
        except OSError:
            continue
    return lines


def _parent(pid):
    try:
        with open('/proc/%d/stat' % pid) as stat:
            fields = stat.read().rsplit(')', 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == 'Z' else int(fields[1])


def _descendants(root):
    """Pids of the live processes below ``root``. A process that rewrites its title
    (oslo.service's threading launcher and its workers, through setproctitle) also loses
    its ``/proc/PID/environ``: it is found by its parentage, not by the tag."""
    parents = {}
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            parent = _parent(int(entry))
            if parent is not None:
                parents.setdefault(parent, []).append(int(entry))
    found, stack = [], [root]
    while stack:
        for child in parents.get(stack.pop(), ()):
            found.append(child)
            stack.append(child)
    return found


def _alive(pid):
    return _parent(pid) is not None


def _running_services_and_clients(bench_pid):
    """Whether the e2e bench is in full swing: the scheduler launcher and its two workers,
    and a spawned client."""
    pids = _descendants(bench_pid)
    launchers = {pid for pid in pids if any(
        'minisched.cmd.scheduler' in line or 'minisched/cmd/scheduler' in line
        for line in _cmdlines([pid]))}
    workers = [pid for pid in pids if _parent(pid) in launchers]
    return bool(launchers) and len(workers) >= 2 and any(
        'multiprocessing' in line for line in _cmdlines(pids))


def _wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError('timed out after %d s waiting for %s' % (timeout, what))
        time.sleep(0.5)


def _start_bench(tmp_path):
    tag = uuid.uuid4().hex
    env = dict(os.environ, **{TAG: tag, 'PYTHONPATH': REPO})
    log = open(tmp_path / 'bench.log', 'wb')
    bench = subprocess.Popen(
        [sys.executable, '-m', 'benchmarks', '--quick', '--skip', 'pipeline,refresh,memory,build'],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    _wait(lambda: _running_services_and_clients(bench.pid) or bench.poll() is not None, 180,
          'the e2e bench to run its scheduler and clients')
    assert bench.poll() is None, (tmp_path / 'bench.log').read_text()
    return bench, tag


def _bench_vhosts(pid):
    """The vhosts of bench ``pid`` on the broker (``benchmarks.cluster.vhost``:
    ``minisched-bench-<pid>[-<bench>]``)."""
    prefix = 'minisched-bench-%d' % pid
    return [name for name in base.vhosts() if name == prefix or name.startswith(prefix + '-')]


def _delete_vhosts(pid):
    """Delete what a bench killed with SIGKILL could not."""
    for name in _bench_vhosts(pid):
        subprocess.run(['rabbitmqctl', '-q', 'delete_vhost', name], capture_output=True,
                       timeout=60)


@pytest.mark.parametrize('signum', [signal.SIGKILL, signal.SIGTERM])
def test_stopped_bench_leaves_no_process_behind(tmp_path, signum):
    base.check_rabbit(base.TRANSPORT_URL)
    bench, tag = _start_bench(tmp_path)
    watched = set(_tagged(tag)) | set(_descendants(bench.pid))
    try:
        bench.send_signal(signum)
        bench.wait(timeout=60)
        # SIGKILL: the kernel's parent-death signal; SIGTERM: the bench's own clean-up.
        _wait(lambda: not _tagged(tag) and not any(_alive(pid) for pid in watched), 30,
              'every child of the bench to be gone')
        left = _bench_vhosts(bench.pid)
    finally:
        for pid in set(_tagged(tag)) | {pid for pid in watched if _alive(pid)}:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        _delete_vhosts(bench.pid)
    assert not _bench_vhosts(bench.pid)
    if signum == signal.SIGTERM:
        assert bench.returncode == 128 + signal.SIGTERM
        assert left == []  # the bench deleted its own
