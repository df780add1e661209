"""Functional test setup: the fixtures of ``fixtures.py``, and service logs in failure reports."""
import signal

import pytest

from tests.functional.fixtures import cluster, database, transport_url  # noqa: F401


def pytest_configure(config):
    # Importing minisched's objects loads oslo.service, hence eventlet (the product's backend).
    config.addinivalue_line('filterwarnings', r'ignore:\s*Eventlet is deprecated')
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
