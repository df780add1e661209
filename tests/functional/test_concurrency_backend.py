"""The services on each concurrency backend: native threads (the default) and eventlet.

Real service processes, started with ``OS_MINISCHED_DISABLE_EVENTLET_PATCHING`` set as an
operator would: the backend they say they run, a Guru Meditation report on SIGUSR2 that
shows (or not) eventlet's hub, SIGHUP reloading without a restart, and SIGTERM stopping
cleanly, for a one-worker service (in-process with either backend) and a forked one.
"""
import re
import signal

import pytest

from minisched import monkey_patch
from tests.functional import base

pytestmark = [pytest.mark.functional, pytest.mark.timeout(180)]

BACKENDS = {'threading': '1', 'eventlet': '0'}
STARTED = {'threading': 'Service is starting with native threading.',
           'eventlet': 'Service is starting with the eventlet backend.'}
#: What a report's stacks show of eventlet's hub: a green thread of an eventlet process
#: waits in the hub's ``switch``.
HUB = 'eventlet/hubs/hub.py'
#: A log record at ERROR (the Guru Meditation report's config dump has the words too).
ERROR_RECORD = re.compile(r'^\d{4}-\d\d-\d\d [\d:.]+ \d+ (ERROR|CRITICAL) ', re.M)


def select(cluster):
    result = cluster.run_manage('scheduler', 'select', '--ram', 512, '--vcpus', 1, '--disk',
                                1, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.mark.parametrize('backend', sorted(BACKENDS))
def test_signals_and_reports_on_each_backend(cluster, monkeypatch, backend):
    monkeypatch.setenv(monkey_patch.ENV, BACKENDS[backend])
    cluster.start_conductor()
    cluster.start_compute('c1')
    scheduler = cluster.start_scheduler(workers=1)
    for name in ('conductor', 'c1', 'scheduler'):
        assert STARTED[backend] in cluster.log(name), cluster.log(name)[-2000:]
    assert 'c1' in select(cluster)

    # Guru Meditation: its report goes to the service's stderr, here its log.
    before = cluster.log('scheduler').count('Guru Meditation')
    scheduler.popen.send_signal(signal.SIGUSR2)
    base.wait_for(lambda: cluster.log('scheduler').count('Guru Meditation') > before,
                  20, message='a Guru Meditation report after SIGUSR2')
    base.wait_for(lambda: '====' in cluster.log('scheduler').rsplit('Guru Meditation', 1)[1],
                  20, message='the whole report')
    report = cluster.log('scheduler').rsplit('Guru Meditation', 1)[1]
    assert (HUB in report) == (backend == 'eventlet'), report[-3000:]

    # SIGHUP: options reloaded and the service reset, the same process still answering.
    scheduler.popen.send_signal(signal.SIGHUP)
    base.wait_for(lambda: 'SIGHUP' in cluster.log('scheduler'), 20,
                  message='the scheduler to log SIGHUP')
    assert scheduler.popen.poll() is None
    assert 'c1' in select(cluster)

    assert cluster.stop('scheduler') == 0
    log = cluster.log('scheduler')
    assert 'Traceback' not in log
    assert not ERROR_RECORD.search(log), log[-3000:]


def test_forked_workers_on_native_threads(cluster, monkeypatch):
    """Two scheduler workers (forked by oslo.service's threading launcher) both serve, and
    SIGTERM stops the parent and its workers."""
    monkeypatch.setenv(monkey_patch.ENV, '1')
    cluster.start_conductor(workers=2)
    cluster.start_compute('c1')
    cluster.start_scheduler(workers=2)
    for _ in range(4):
        assert 'c1' in select(cluster)
    assert cluster.stop('scheduler') == 0
    assert cluster.stop('conductor') == 0
    for name in ('scheduler', 'conductor'):
        assert 'Traceback' not in cluster.log(name), cluster.log(name)[-3000:]
