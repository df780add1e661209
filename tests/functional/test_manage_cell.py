"""``minisched-manage cell`` as an operator runs it: the console script in subprocesses, an API
database on PostgreSQL, cell1 on PostgreSQL and cell2 on MariaDB, each cell configured by its
own config file (its ``[database] connection`` and ``transport_url``)."""
import re
import subprocess

import pytest
import sqlalchemy as sa

from minisched import context as ms_context
from minisched.db import engines
from minisched.db.main import api as main_db
from tests.functional import base
from tests.functional import db_fixtures

throwaway_db = db_fixtures.throwaway_db  # makes the fixture available in this module

pytestmark = pytest.mark.functional

TIMEOUT = 120
CELL0 = '00000000-0000-0000-0000-000000000000'



def _manage_command():
    """The installed console script, as an operator runs it."""
    return [base.script('minisched-manage')]


class Deployment:
    """Databases, one config file per cell, and ``manage(conf, *args)``."""

    def __init__(self, tmp_path, urls, command):
        self.urls, self.command = urls, command
        self.transport = {cell: 'rabbit://minisched:mq-secret@127.0.0.1:5672/%s' % cell
                          for cell in ('cell1', 'cell2')}
        self.confs = {}
        for cell in ('cell1', 'cell2'):
            path = tmp_path / ('%s.conf' % cell)
            path.write_text('\n'.join([
                '[DEFAULT]', 'state_path = %s' % tmp_path,
                'transport_url = %s' % self.transport[cell],
                '[api_database]', 'connection = %s' % urls['api'],
                '[database]', 'connection = %s' % urls[cell]]) + '\n')
            self.confs[cell] = str(path)

    def run(self, conf, *args):
        """``(exit code, stdout, stderr)`` of ``minisched-manage --config-file CONF ARGS``."""
        result = subprocess.run(self.command + ['--config-file', self.confs[conf]] + list(args),
                                capture_output=True, text=True, timeout=TIMEOUT)
        assert 'Traceback' not in result.stderr, result.stderr
        return result.returncode, result.stdout, result.stderr

    def ok(self, conf, *args):
        rc, out, err = self.run(conf, *args)
        assert rc == 0, (args, rc, out, err)
        return out

    def node(self, cell, host, nodename=None):
        ctxt = ms_context.get_admin_context()
        ctxt.db_connection = self.urls[cell]
        return main_db.compute_node_create(ctxt, {
            'host': host, 'hypervisor_hostname': nodename or host, 'vcpus': 8,
            'memory_mb': 8192, 'local_gb': 80, 'vcpus_used': 0, 'memory_mb_used': 0,
            'local_gb_used': 0, 'hypervisor_type': 'fake', 'hypervisor_version': 1})

    def mapped(self, cell):
        """``{node uuid: mapped}`` of a cell database."""
        with engines.engine_for_url(self.urls[cell]).connect() as conn:
            rows = conn.execute(sa.text('SELECT uuid, mapped FROM compute_nodes'))
            return dict(rows.all())


@pytest.fixture(scope='module')
def command():
    return _manage_command()


@pytest.fixture
def deployment(request, tmp_path, command):
    urls = {}
    for name, backend in (('api', 'postgresql'), ('cell1', 'postgresql'), ('cell2', 'mysql')):
        urls[name], cleanup = db_fixtures.make_db(backend)
        request.addfinalizer(cleanup)
    dep = Deployment(tmp_path, urls, command)
    dep.ok('cell1', 'api_db', 'sync')
    dep.ok('cell1', 'db', 'sync')
    dep.ok('cell2', 'db', 'sync')
    dep.ok('cell1', 'cell', 'map_cell0')
    dep.cells = {cell: dep.ok(cell, 'cell', 'create_cell', '--name', cell,
                              '--verbose').splitlines()[-1]
                 for cell in ('cell1', 'cell2')}
    return dep


def test_discover_hosts_maps_the_computes_of_both_cells(deployment):
    dep, cells = deployment, deployment.cells
    n1, n2 = dep.node('cell1', 'h1'), dep.node('cell1', 'h2')
    n3 = dep.node('cell2', 'h3')
    assert dep.ok('cell1', 'cell', 'discover_hosts', '--verbose').splitlines() == [
        'Found 3 cell mappings.',
        'Skipping cell0 since it does not contain hosts.',
        "Getting computes from cell 'cell1': %s" % cells['cell1'],
        "Checking host mapping for compute host 'h1': %s" % n1['uuid'],
        "Creating host mapping for compute host 'h1': %s" % n1['uuid'],
        "Checking host mapping for compute host 'h2': %s" % n2['uuid'],
        "Creating host mapping for compute host 'h2': %s" % n2['uuid'],
        'Found 2 unmapped computes in cell: %s' % cells['cell1'],
        "Getting computes from cell 'cell2': %s" % cells['cell2'],
        "Checking host mapping for compute host 'h3': %s" % n3['uuid'],
        "Creating host mapping for compute host 'h3': %s" % n3['uuid'],
        'Found 1 unmapped computes in cell: %s' % cells['cell2'],
    ]
    assert dep.mapped('cell1') == {n1['uuid']: 1, n2['uuid']: 1}
    assert dep.mapped('cell2') == {n3['uuid']: 1}
    # Nothing left: --strict fails, from either cell's host.
    assert dep.run('cell2', 'cell', 'discover_hosts', '--strict') == (1, '', '')
    # A new compute in cell2 (MariaDB), and a second node of an already-mapped host.
    n4, n5 = dep.node('cell2', 'h4'), dep.node('cell2', 'h3', 'h3-b')
    assert dep.run('cell1', 'cell', 'discover_hosts', '--cell_uuid', cells['cell2'],
                   '--strict', '--verbose') == (0, '\n'.join([
                       "Getting computes from cell 'cell2': %s" % cells['cell2'],
                       "Checking host mapping for compute host 'h4': %s" % n4['uuid'],
                       "Creating host mapping for compute host 'h4': %s" % n4['uuid'],
                       "Checking host mapping for compute host 'h3': %s" % n5['uuid'],
                       'Found 1 unmapped computes in cell: %s' % cells['cell2']]) + '\n', '')
    assert dep.mapped('cell2') == {n3['uuid']: 1, n4['uuid']: 1, n5['uuid']: 0}
    rows = [re.split(r'\s*\|\s*', line.strip('| '))
            for line in dep.ok('cell2', 'cell', 'list_hosts').splitlines()[3:-1]]
    assert rows == [['cell1', cells['cell1'], 'h1'], ['cell1', cells['cell1'], 'h2'],
                    ['cell2', cells['cell2'], 'h3'], ['cell2', cells['cell2'], 'h4']]


def test_cells_refuse_duplicates_and_delete_only_when_forced(deployment):
    dep, cells = deployment, deployment.cells
    listing = dep.ok('cell1', 'cell', 'list')
    assert 'mq-secret' not in listing and 'minisched:****@127.0.0.1:5672/cell2' in listing
    assert dep.urls['cell2'].split('@')[-1] in listing
    assert CELL0 in listing and (dep.urls['cell1'].rsplit('/', 1)[1] + '_cell0') in listing
    # Another cell on cell2's MariaDB database is refused.
    rc, out, err = dep.run('cell1', 'cell', 'create', '--name', 'cell3', '--transport-url',
                           'rabbit://mq/cell3', '--database_connection', dep.urls['cell2'])
    assert (rc, err) == (2, 'The specified transport_url and/or database_connection '
                            'combination already exists for another cell with uuid %s.\n'
                         % cells['cell2'])
    node = dep.node('cell2', 'h3')
    dep.ok('cell1', 'cell', 'discover_hosts', '--by-service')   # no service: nothing mapped
    dep.ok('cell1', 'cell', 'discover_hosts')
    assert dep.run('cell1', 'cell', 'delete', '--cell_uuid', cells['cell2']) == (
        2, '', 'There are existing hosts mapped to cell with uuid %s.\n' % cells['cell2'])
    assert dep.run('cell1', 'cell', 'delete_cell', '--cell_uuid', cells['cell2'],
                   '--force') == (0, '', '')
    assert dep.mapped('cell2') == {node['uuid']: 0}
    assert cells['cell2'] not in dep.ok('cell1', 'cell', 'list')
    assert 'h3' not in dep.ok('cell1', 'cell', 'list_hosts')
    # The cell comes back as it was created, and discovery maps its host again.
    back = dep.ok('cell2', 'cell', 'create', '--name', 'cell2', '--verbose').splitlines()[-1]
    assert "Creating host mapping for compute host 'h3'" in dep.ok(
        'cell1', 'cell', 'discover_hosts', '--cell_uuid', back, '--verbose')


@pytest.mark.parametrize('throwaway_db', db_fixtures.SERVER_BACKENDS, indirect=True)
def test_a_database_without_schema_is_one_line_naming_the_sync(throwaway_db, tmp_path):
    """Each backend says "no such table" in its own way (SQLSTATE 42P01, error 1146): the
    operator gets one line naming the command that creates the schema, not a traceback."""
    conf = tmp_path / 'minisched.conf'
    conf.write_text('[DEFAULT]\nstate_path = %s\n[api_database]\nconnection = %s\n'
                    '[database]\nconnection = %s\n' % (tmp_path, throwaway_db, throwaway_db))
    for args in (('cell', 'list'), ('service', 'list')):
        result = subprocess.run(_manage_command() + ['--config-file', str(conf)] + list(args),
                                capture_output=True, text=True, timeout=TIMEOUT)
        lines = [line for line in result.stderr.splitlines()
                 if line.startswith('Database error: ')]
        assert (result.returncode, result.stdout, len(lines)) == (1, '', 1), result.stderr
        assert 'Traceback' not in result.stderr, result.stderr
        assert "'minisched-manage api_db sync'" in lines[0], lines[0]
