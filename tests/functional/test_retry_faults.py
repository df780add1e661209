"""A fault during the retry of another fault.

The API database, cell1's and cell0's are three PostgreSQL databases; the API database and
cell1's are reached through ``TcpProxy``s the test cuts (cell0's directly). What is proved:

* a second short cut of the API database while the conductor rebuilds the instances an
  interrupted run placed (``_adopt_orphans`` -> ``build_instances`` ->
  ``setup_instance_group``) is retried like the first: every build ACTIVE, none ERROR, no
  build request or unplaced instance mapping left;
"""
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
    assert adopted >= 15 and log.count(RETRIED) >= 2, log[-3000:]
    assert 'Traceback' not in log, log[-3000:]
