"""Multi-cell deployments of real minisched processes, and select_destinations from a child.

``make_deployment`` builds what Nova's cells v2 needs: an API database, one database per cell
and a ``base.Cluster`` per cell (its own config file, conductor and computes). cell1's cluster
uses the test session's transport and also runs the scheduler, which reads every cell database
directly. Each further cell gets a vhost of its own, as a Nova cell gets its own message
queue: a compute reaches its cell database through the conductor consuming topic
``conductor`` on its transport, and oslo.messaging names topic queues after the topic alone,
so in one vhost cell2's computes would be served by cell1's conductor (a control exchange of
its own is not enough). No vhost of its own (no rabbitmqctl): skipped, or failed if CI=true.
Several tests may share that vhost (as they share the session's): each cluster deletes its
services' queues when it stops.

``Deployment.select(...)`` asks the scheduler for destinations through a child interpreter
(``SchedulerClient``, ``python -m tests.functional.cells_helpers``). oslo.config's ``CONF`` and
the RPC transport are global per process: parsing a cluster's config in the pytest process
would leave its transport URL, control exchange and broker connection behind for every later
test. The child starts clean, with the deployment, and answers every call of the test.
"""
import argparse
import json
import os
import select
import subprocess
import sys

import sqlalchemy as sa
from sqlalchemy import pool

from minisched.db import migration
from tests.functional import base
from tests.functional import db_fixtures

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SELECT_TIMEOUT = 60
MANAGE_TIMEOUT = 60


def cell_vhost():
    """A vhost for a cell's own message queue: ``(transport URL, delete it)``.

    Without rabbitmqctl there is none to make: the test is skipped (failed under CI=true).
    """
    url, delete = base.make_vhost(base.TRANSPORT_URL)
    if url == base.TRANSPORT_URL:
        base.unavailable('no vhost of its own for a second cell: rabbitmqctl is needed (see '
                         'MINISCHED_TEST_RABBITMQCTL in tests/functional/base.py)')
    return url, delete


class Deployment:
    """An API database, cell databases and a Cluster per cell; see the module docstring."""

    def __init__(self, tmp_path, api_url):
        self.tmp_path = tmp_path
        self.api_url = api_url
        self.clusters = {}   # cell name -> base.Cluster (cell1 first)
        self.cell_uuids = {}
        self.client = None   # SchedulerClient, with cell1's config

    @property
    def main(self):
        """cell1's cluster: the scheduler's, and the config ``minisched-manage`` runs with."""
        return self.clusters['cell1']

    def manage(self, *args, expect=0):
        """Stdout lines of ``minisched-manage ARGS`` with cell1's config; exit code ``expect``."""
        return self.manage_many(args, expect=expect)[0]

    def manage_many(self, *commands, expect=0, wait=True):
        """Run several ``minisched-manage`` commands at once (each costs an interpreter
        start-up); their stdout lines, in order. Each must exit with ``expect`` (or with its
        item of ``expect``, a list). ``wait=False``: return a function collecting them."""
        expects = expect if isinstance(expect, list) else [expect] * len(commands)
        popens = [subprocess.Popen([base.script('minisched-manage'), '--config-file',
                                    self.main.conf_file] + [str(a) for a in args],
                                   env=base.manage_env(), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
                  for args in commands]

        def collect():
            outputs = []
            for args, popen, expected in zip(commands, popens, expects):
                out, err = popen.communicate(timeout=MANAGE_TIMEOUT)
                assert 'Traceback' not in err, err
                assert popen.returncode == expected, 'minisched-manage %s exited %d:\n%s%s' % (
                    ' '.join(map(str, args)), popen.returncode, out, err)
                outputs.append(out.splitlines())
            return outputs
        return collect() if wait else collect

    def map_cell0(self):
        """``cell map_cell0`` args; cell0 (never read here) is an SQLite file in any case."""
        return ('cell', 'map_cell0', '--database_connection',
                'sqlite:///%s' % (self.tmp_path / 'cell0.sqlite'))

    def create_cells(self, *names, cell0=False, wait=True, **urls):
        """``cell create`` each named cell with its cluster's URLs, and each cell of ``urls``
        ({name: (database URL, transport URL)}), all at once (with ``cell0``, ``map_cell0``
        too); returns {name: uuid}. Their ids, hence the order of ``cell list``, vary.
        ``wait=False``: return a function that waits, then returns {name: uuid}."""
        urls = dict({name: (self.clusters[name].db_url, self.clusters[name].transport_url)
                     for name in names}, **urls)
        collect = self.manage_many(*(
            ('cell', 'create', '--name', name, '--verbose', '--database_connection', db_url,
             '--transport-url', mq_url) for name, (db_url, mq_url) in urls.items()),
            *([self.map_cell0()] if cell0 else []), wait=False)

        def created():
            uuids = {name: lines[-1] for name, lines in zip(urls, collect())}
            self.cell_uuids.update(uuids)
            return uuids
        return created() if wait else created

    def api_query(self, sql, **params):
        """Rows (as dicts) of ``sql`` on the API database."""
        engine = sa.create_engine(self.api_url, poolclass=pool.NullPool)
        try:
            with engine.connect() as conn:
                return [dict(row) for row in conn.execute(sa.text(sql), params).mappings()]
        finally:
            engine.dispose()

    def node(self, cell, host, timeout=30):
        """The compute node row of ``host`` in ``cell``'s database, once the compute wrote it."""
        sql = 'SELECT uuid, mapped FROM compute_nodes WHERE host = :host AND deleted = 0'
        return base.wait_for(lambda: (self.clusters[cell].query(sql, host=host) or [None])[0],
                             timeout, message='the compute node of %s in %s' % (host, cell))

    def select(self, **sizes):
        """select_destinations for a flavor of ``sizes``; see ``SchedulerClient.select``."""
        return self.client.select(**sizes)

    def stop_all(self):
        """Stop the services of every cell, and the client, at once (each takes seconds)."""
        if self.client is not None:
            self.client.end_input()
        processes = [p for cluster in self.clusters.values() for p in cluster.processes.values()]
        base.Cluster._stop(processes, base.STOP_TIMEOUT)

    def kill_all(self):
        """Teardown: end the client, SIGKILL the services of every cell (``Cluster.kill_all``)."""
        if self.client is not None:
            self.client.end_input()
        for cluster in self.clusters.values():
            cluster.kill_all()


def make_deployment(request, tmp_path, transport_urls, backends):
    """A Deployment with synced, empty databases and no cell mapping or service yet.

    ``transport_urls``: {cell name: transport URL}, cell1's the session's, any other cell's
    a vhost of its own (``cell_vhost``). ``backends``: {'api': backend, 'cell1': backend, ...}, each
    one of ``db_fixtures.BACKENDS``. After the test every service is stopped, its exchange
    and queues deleted, and every database dropped.
    """
    api_url, cleanup = db_fixtures.make_db(backends['api'])
    request.addfinalizer(cleanup)
    migration.db_sync(api_url, 'api')
    dep = Deployment(tmp_path, api_url)
    for cell in sorted(name for name in backends if name != 'api'):
        db_url, cleanup = db_fixtures.make_db(backends[cell])
        request.addfinalizer(cleanup)
        migration.db_sync(db_url, 'main')
        url = transport_urls[cell]
        workdir = tmp_path / cell
        workdir.mkdir()
        cluster = base.Cluster(workdir, url, db_url,
                               conf={'api_database': {'connection': api_url}},
                               own_vhost=url != base.TRANSPORT_URL)
        request.node.minisched_clusters = (getattr(request.node, 'minisched_clusters', []) +
                                           [cluster])
        request.addfinalizer(cluster.cleanup_broker)
        request.addfinalizer(cluster.kill_all)
        dep.clusters[cell] = cluster
    dep.client = SchedulerClient(dep.main.conf_file, tmp_path / 'select-client.log')
    request.addfinalizer(dep.client.close)
    # Runs first: the clusters' own kill_all then finds their processes already gone.
    request.addfinalizer(dep.kill_all)
    return dep


# -- select_destinations in a child interpreter -----------------------------------------------

class Selected:
    """What a select_destinations call answered: ``hosts`` [(host, cell uuid)] or ``error``."""

    def __init__(self, hosts=(), error=None):
        self.hosts = [tuple(h) for h in hosts]
        self.error = error

    def __repr__(self):
        return 'Selected(hosts=%r, error=%r)' % (self.hosts, self.error)


class SchedulerClient:
    """A child interpreter calling select_destinations (RPC API 4.5, Selection objects).

    It parses ``conf_file`` and imports minisched once, then answers one request per line on
    its stdin, so that each call costs a round trip rather than an interpreter start-up. Its
    stderr goes to ``log_path``.
    """

    def __init__(self, conf_file, log_path):
        self.log_path = str(log_path)
        with open(self.log_path, 'w') as log:
            self.popen = subprocess.Popen(
                [sys.executable, '-m', 'tests.functional.cells_helpers', '--config-file',
                 conf_file], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=log, text=True)

    def select(self, memory_mb=512, vcpus=1, root_gb=1, num_instances=1):
        """Ask for ``num_instances`` instances of a flavor of these sizes; a ``Selected``."""
        request = {'memory_mb': memory_mb, 'vcpus': vcpus, 'root_gb': root_gb,
                   'num_instances': num_instances}
        try:
            self.popen.stdin.write(json.dumps(request) + '\n')
            self.popen.stdin.flush()
        except BrokenPipeError:
            pass  # reported below, with the child's stderr
        ready, _, _ = select.select([self.popen.stdout], [], [], SELECT_TIMEOUT)
        line = self.popen.stdout.readline() if ready else ''
        if not line:
            self.close()
            with open(self.log_path, errors='replace') as log:
                raise AssertionError('the select_destinations child gave no answer (exit %s, '
                                     'timeout %ds); %s:\n%s' % (self.popen.returncode,
                                                                SELECT_TIMEOUT, self.log_path,
                                                                log.read()[-4000:]))
        return Selected(**json.loads(line))

    def end_input(self):
        """Tell the child to exit (at the end of its input), without waiting."""
        try:
            self.popen.stdin.close()
        except OSError:
            pass

    def close(self):
        """End the child (at the end of its input); kill it if it does not exit."""
        if self.popen.poll() is None:
            self.end_input()
            try:
                self.popen.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.popen.kill()
                self.popen.wait()


def _child(argv):
    """The child's loop: one JSON request per stdin line, one JSON answer per stdout line."""
    parser = argparse.ArgumentParser()
    parser.add_argument('--config-file', required=True)
    conf_file = parser.parse_args(argv).config_file

    from oslo_utils import uuidutils

    from minisched import config, context, exception, rpc
    from minisched.scheduler import rpcapi
    from tests.unit import fakes

    config.parse_args(['cells_helpers', '--config-file', conf_file])
    api = rpcapi.SchedulerAPI(config.CONF)
    try:
        for line in sys.stdin:
            request = json.loads(line)
            spec = fakes.fake_spec(**request)
            uuids = [uuidutils.generate_uuid() for _ in range(request['num_instances'])]
            try:
                selections = api.select_destinations(context.get_admin_context(), spec, uuids,
                                                     return_objects=True)
                answer = {'hosts': [[s[0].service_host, s[0].cell_uuid] for s in selections]}
            except exception.NoValidHost as exc:
                answer = {'error': '%s: %s' % (type(exc).__name__, exc)}
            sys.stdout.write(json.dumps(answer) + '\n')
            sys.stdout.flush()
    finally:
        rpc.cleanup()


if __name__ == '__main__':
    _child(sys.argv[1:])
