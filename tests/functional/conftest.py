"""Functional test setup: the fixtures of ``fixtures.py``, service logs in failure reports, and
the concurrency backend of the processes a test starts.

The services run native threads, their default. A module marked ``both_backends`` (those
that exercise concurrency: delivery, broker restarts, build faults, authorization,
multi-host layouts, the conductor's admission) runs each of its tests twice, the second
time (``[eventlet]``) with ``OS_MINISCHED_DISABLE_EVENTLET_PATCHING=0`` for every process
it starts, as an operator who kept the deprecated backend would.
"""
import signal

import pytest

from minisched import monkey_patch

from tests.functional.fixtures import cluster, database, transport_url  # noqa: F401
from tests.functional.placement_helpers import placement_cluster, placement_server  # noqa: F401


def pytest_configure(config):
    config.addinivalue_line('markers', 'both_backends: run each test with the services on '
                                       'native threads and on eventlet')
    # `timeout`, CI runners and IDEs stop pytest with SIGTERM, which skips fixture finalizers
    # and would leave the service processes (in sessions of their own) and the session's
    # vhost behind: make it a KeyboardInterrupt, after which pytest still tears down.
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(signum, frame):
    raise KeyboardInterrupt('SIGTERM')


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Append the tail of every service log of the test's clusters to a failed phase's report."""
    outcome = yield
    report = outcome.get_result()
    clusters = getattr(item, 'minisched_clusters', ())
    if report.failed and clusters:
        for index, cluster in enumerate(clusters):
            report.sections.append(('minisched service logs (%s) %d' % (report.when, index),
                                    cluster.log_tails() or '(no service was started)'))


def pytest_generate_tests(metafunc):
    if metafunc.definition.get_closest_marker('both_backends'):
        metafunc.fixturenames.insert(0, 'services_backend')  # before any process starts
        metafunc.parametrize('services_backend', ['threading', 'eventlet'], indirect=True)


@pytest.fixture
def services_backend(request, monkeypatch):
    """The backend of the processes the test starts: their default (threading), or eventlet
    through the environment they inherit (this process keeps native threads)."""
    backend = getattr(request, 'param', 'threading')
    if backend == 'eventlet':
        monkeypatch.setenv(monkey_patch.ENV, '0')
    else:
        monkeypatch.delenv(monkey_patch.ENV, raising=False)
    return backend
