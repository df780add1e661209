"""A fault during the retry of another fault, and a cell whose database is away for a while.

The API database, cell1's and cell0's are three PostgreSQL databases; the API database and
cell1's are reached through ``TcpProxy``s the test cuts (cell0's directly). What is proved:

* a second short cut of the API database while the conductor rebuilds the instances an
  interrupted run placed (``_adopt_orphans`` -> ``build_instances`` ->
  ``setup_instance_group``) is retried like the first: every build ACTIVE, none ERROR, no
  build request or unplaced instance mapping left;
* a cut of cell1's database during a stream of creates (cell1 holds every compute) makes the
  builds wait for it (``[conductor] cell_unreachable_wait_seconds``) instead of ending in
  cell0 as NoValidHost: every build ACTIVE once it is back. Past the bound, the fault says
  which cell was unreachable since when.
"""
import collections
import time

import pytest
import sqlalchemy as sa

from minisched.db import migration
from tests.functional import base
from tests.functional import build_helpers
from tests.functional import db_fixtures
from tests.functional import resilience
from tests.functional import tcp_proxy
from tests.functional.test_build_faults import Accounting, _direct, _proxied

pytestmark = [pytest.mark.functional, pytest.mark.timeout(300)]

FLAVOR = {'vcpus': 1, 'memory_mb': 64, 'root_gb': 1}
COMPUTES = ('c1', 'c2', 'c3')
ADOPTED = 'this one schedules and builds it again'
RETRIED = 'Database unavailable while building'


class Outages:
    """The deployment: proxies in front of the API and cell1 databases, a cluster using
    them, and direct query functions for the accounting."""

    def __init__(self, request, tmp_path, transport_url, conductor_conf=None):
        urls = {}
        for name, schema in (('api', 'api'), ('cell1', 'main'), ('cell0', 'main')):
            urls[name], drop = db_fixtures.make_db('postgresql')
            request.addfinalizer(drop)
            migration.db_sync(urls[name], schema)
        port = sa.engine.make_url(urls['api']).port or 5432
        self.api_proxy = tcp_proxy.TcpProxy(port)
        self.cell_proxy = tcp_proxy.TcpProxy(port)
        for proxy in (self.api_proxy, self.cell_proxy):
            request.addfinalizer(proxy.close)
        self.cluster = resilience.make_cluster(
            request, tmp_path, transport_url, _proxied(urls['cell1'], self.cell_proxy),
            shared_vhost=True, service_down_time=60, conf={
                'api_database': {'connection': _proxied(urls['api'], self.api_proxy)},
                'DEFAULT': {'long_rpc_timeout': 60, 'update_resources_interval': 2},
                'conductor': dict({'stuck_build_timeout_seconds': 600},
                                  **(conductor_conf or {}))})
        cluster = self.cluster
        cluster.start_conductor(wait=False)
        for host in COMPUTES:
            cluster.start_compute(host, vcpus=64, memory_mb=65536, wait=False)
        cluster.wait_ready('conductor', *COMPUTES)
        build_helpers.wait_nodes(cluster, COMPUTES)
        cluster.run_manage('cell', 'map_cell0', '--database_connection', urls['cell0'])
        cluster.run_manage('cell', 'simple_cell_setup')
        cluster.start_scheduler(workers=1)   # reads the cell mappings at start-up
        self.client = build_helpers.Client(cluster)
        request.addfinalizer(self.client.close)
        self.flavor = self.client.flavor('tiny', **FLAVOR)
        self.api = _direct(urls['api'])
        self.accounting = Accounting(self.api, {'cell1': _direct(urls['cell1']),
                                                'cell0': _direct(urls['cell0'])})
        time.sleep(2)  # the scheduler's first view of the computes

    def mapped(self):
        return self.api('SELECT COUNT(*) AS n FROM instance_mappings WHERE cell_id IS NOT '
                        'NULL')[0]['n']

    def outcome(self, accepted, timeout=120):
        """(summary, problems, orphans) once every accepted build settled."""
        accounting = self.accounting
        base.wait_for(lambda: accounting.settled(accepted), timeout, interval=1,
                      message='every accepted build to end ACTIVE or ERROR')
        summary, problems = accounting.report(len(accepted), accepted)
        return summary, problems, accounting.orphans(accepted)[0]


def test_second_api_database_cut_while_adopting_orphans_ends_no_build_in_error(
        request, tmp_path, transport_url):
    dep = Outages(request, tmp_path, transport_url)
    accepted = dep.client.boot(dep.flavor, num_instances=120)
    # First cut: once the conductor placed part of the request (before it cast any build).
    base.wait_for(lambda: dep.mapped() >= 15, 60, interval=0.05,
                  message='the conductor to place instances')
    dep.api_proxy.cut()
    time.sleep(3)
    dep.api_proxy.restore()
    # Second cut: as soon as the run again rebuilds what the first run placed.
    resilience.wait_log(dep.cluster, 'conductor', ADOPTED, timeout=60)
    dep.api_proxy.cut()
    time.sleep(3)
    dep.api_proxy.restore()

    summary, problems, orphans = dep.outcome(accepted)
    log = dep.cluster.log('conductor')
    adopted = log.count(ADOPTED)
    print('\nAPI database cut twice (the second while adopting): %s; %d instances adopted, '
          '%d runs again' % (summary, adopted, log.count(RETRIED)))
    assert not problems, problems
    assert (summary['ERROR'], summary['ACTIVE']) == (0, len(accepted)), summary
    assert orphans == [], orphans
    # Both cuts met the build: the first interrupted the placing, the second the adoption.
    assert adopted and log.count(RETRIED) >= 2, (adopted, log[-3000:])
    assert 'Traceback' not in log, log[-3000:]


def test_cell_database_outage_waits_for_the_cell(request, tmp_path, transport_url):
    dep = Outages(request, tmp_path, transport_url,
                  conductor_conf={'cell_unreachable_wait_seconds': 45})
    accepted, refused = [], collections.Counter()
    started = time.monotonic()
    cut_at = restored_at = None
    while time.monotonic() - started < 30:   # 1 create a second for 30 s, the cut in the middle
        elapsed = time.monotonic() - started
        if cut_at is None and elapsed >= 5:
            dep.cell_proxy.cut()
            cut_at = time.monotonic()
        if cut_at and restored_at is None and time.monotonic() - cut_at >= 20:
            dep.cell_proxy.restore()
            restored_at = time.monotonic()
        try:
            accepted += dep.client.boot(dep.flavor)
        except Exception as exc:
            refused[type(exc).__name__] += 1
        time.sleep(max(0.0, started + len(accepted) + sum(refused.values()) -
                       time.monotonic()))
    assert restored_at is not None

    summary, problems, orphans = dep.outcome(accepted)
    log = dep.cluster.log('conductor')
    waited = log.count('unreachable since')
    print('\ncell1 database cut 20 s during 30 s of creates: %s; refused %s; %d waits for '
          'the cell' % (summary, dict(refused), waited))
    assert not problems, problems
    assert (summary['ERROR'], summary['ACTIVE']) == (0, len(accepted)), summary
    assert orphans == [], orphans
    assert waited, 'no build waited for the cell: %s' % log[-3000:]


def test_cell_unreachable_past_the_bound_says_so(request, tmp_path, transport_url):
    dep = Outages(request, tmp_path, transport_url,
                  conductor_conf={'cell_unreachable_wait_seconds': 6})
    dep.cell_proxy.cut()
    try:
        uuid, = dep.client.boot(dep.flavor)
        base.wait_for(lambda: dep.accounting.faults('cell0', [uuid]), 60, interval=0.5,
                      message='the build to be buried in cell0')
    finally:
        dep.cell_proxy.restore()
    fault = dep.accounting.faults('cell0', [uuid])[uuid]
    assert fault.startswith('No valid host was found. Cell cell1 unreachable since '), fault
    assert 'not enough hosts' in fault  # and why there was no other host
    assert dep.api('SELECT instance_uuid FROM build_requests') == []
