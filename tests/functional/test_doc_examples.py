"""The RPC client example of the user guide, run against a real cluster.

``doc/source/user/examples/select_destinations.py`` is shown to readers as the way to call
``select_destinations`` from their own code: here it runs as they would run it, as a process
given the cluster's transport URL (the test session's own vhost) and control exchange, against
a conductor, a scheduler and three fake computes.
"""
import os
import re
import subprocess
import sys

import pytest

from tests.functional import base

pytestmark = [pytest.mark.functional, pytest.mark.timeout(180)]

EXAMPLE = os.path.join(os.path.dirname(__file__), '..', '..', 'doc', 'source', 'user',
                       'examples', 'select_destinations.py')
HOSTS = ('ex-1', 'ex-2', 'ex-3')
#: What the example prints for each instance: its host, node, cell and the alternates.
PLACED = re.compile(r'^instance (\d+): (\S+) \(node (\S+), cell ([0-9a-f-]{36})\); '
                    r'alternates: (.*)$', re.MULTILINE)


def _run_example(cluster, *args):
    return subprocess.run([sys.executable, EXAMPLE, cluster.transport_url,
                           '--exchange', cluster.control_exchange] + list(args),
                          capture_output=True, text=True, timeout=120)


def _start(cluster):
    cluster.start_conductor(wait=False)
    cluster.start_scheduler(workers=1, wait=False)
    for host in HOSTS:
        cluster.start_compute(host, vcpus=8, memory_mb=8192, local_gb=100, wait=False)
    cluster.wait_ready('conductor', 'scheduler', *HOSTS)
    # A host is a candidate once its compute node record has its usage written.
    base.wait_for(lambda: len(cluster.query(
        'SELECT id FROM compute_nodes WHERE deleted = 0 AND free_disk_gb IS NOT NULL'))
        == len(HOSTS), 60, message='the three compute nodes to be written')


def test_example_prints_hosts_with_alternates_then_no_valid_host(cluster):
    _start(cluster)

    result = _run_example(cluster, '--instances', '2')

    assert result.returncode == 0, result.stdout + result.stderr
    placed = PLACED.findall(result.stdout)
    assert [number for number, *_ in placed] == ['1', '2'], result.stdout
    for _, host, node, _, alternates in placed:
        assert host in HOSTS and node == host
        # max_attempts (3) - 1 alternates from the other hosts, never the chosen one
        others = alternates.split(', ')
        assert host not in others and set(others) <= set(HOSTS), result.stdout
    assert ('NoValidHost: No valid host was found. There are not enough hosts available. '
            'Filters rejected hosts: RamFilter rejected 3 of 3.') in result.stdout


def test_example_fails_with_one_line_when_no_scheduler_answers(cluster):
    # No service started: the call times out, and the example says so and exits 1.
    result = _run_example(cluster, '--timeout', '2')

    assert result.returncode == 1
    assert 'no scheduler answered within 2 s on exchange %s' % cluster.control_exchange \
        in result.stderr
