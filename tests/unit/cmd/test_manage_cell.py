"""``minisched-manage cell``: each action run in-process through ``manage.main`` against SQLite
files in a temporary directory (API database, the local cell "main", and a second cell)."""
import re

import pytest

from minisched import context as ms_context
from minisched import exception, objects
from minisched.db import engines, migration
from minisched.db.api import api as api_db
from minisched.db.main import api as main_db
from minisched.objects import host_mapping as host_mapping_obj
from tests.unit import base

objects.register_all()

CELL0 = '00000000-0000-0000-0000-000000000000'
UUID_RE = r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
TRANSPORT = 'rabbit://guest:s3cret@mq.example:5672/'


manage = base.import_without_eventlet('minisched.cmd.manage')
manage_cell = base.import_without_eventlet('minisched.cmd.manage_cell')


class Env:
    """A configured deployment on SQLite files, and ``run`` for ``minisched-manage``."""

    def __init__(self, tmp_path, capsys, database=True):
        self.tmp_path, self.capsys = tmp_path, capsys
        self.api_url = 'sqlite:///%s' % (tmp_path / 'api.sqlite')
        self.main_url = ('sqlite:///%s' % (tmp_path / 'main.sqlite') if database
                         else 'sqlite:///%s' % (tmp_path / 'state' / 'minisched.sqlite'))
        self.cell2_url = 'sqlite:///%s' % (tmp_path / 'cell2.sqlite')
        (tmp_path / 'state').mkdir()
        lines = ['[DEFAULT]', 'state_path = %s' % (tmp_path / 'state'),
                 'transport_url = %s' % TRANSPORT,
                 '[api_database]', 'connection = %s' % self.api_url]
        if database:
            lines += ['[database]', 'connection = %s' % self.main_url]
        self.conf_file = tmp_path / 'minisched.conf'
        self.conf_file.write_text('\n'.join(lines) + '\n')
        for url, name in ((self.api_url, 'api'), (self.main_url, 'main'),
                          (self.cell2_url, 'main')):
            migration.db_sync(url, name)

    def run(self, *args):
        """``(exit code, stdout, stderr)`` of ``minisched-manage cell ARGS``."""
        try:
            rc = manage.main(['minisched-manage', '--config-file', str(self.conf_file),
                              'cell'] + list(args))
        except SystemExit as exc:
            rc = exc.code
        finally:
            manage.CONF.clear()
            manage.CONF.unregister_opt(manage.CATEGORY_OPT)
        out, err = self.capsys.readouterr()
        return rc, out, err

    def ok(self, *args):
        rc, out, err = self.run(*args)
        assert (rc, err) == (0, ''), (args, rc, out, err)
        return out

    def cell_ctx(self, url):
        ctxt = ms_context.get_admin_context()
        ctxt.db_connection = url
        return ctxt

    def node(self, url, host, nodename=None):
        return main_db.compute_node_create(self.cell_ctx(url), {
            'host': host, 'hypervisor_hostname': nodename or host, 'vcpus': 4,
            'memory_mb': 4096, 'local_gb': 40, 'vcpus_used': 0, 'memory_mb_used': 0,
            'local_gb_used': 0, 'hypervisor_type': 'fake', 'hypervisor_version': 1})

    def mapped(self, url, node):
        return main_db.compute_node_get_by_uuid(self.cell_ctx(url), node['uuid'])['mapped']

    def service(self, url, host, disabled=False):
        return main_db.service_create(self.cell_ctx(url), {
            'host': host, 'binary': 'minisched-compute', 'topic': 'compute',
            'disabled': disabled})

    def create(self, *args):
        """Create a cell (``create --verbose ARGS``); returns its uuid."""
        out = self.ok('create', '--verbose', *args)
        return out.splitlines()[-1]

    def cells(self):
        return {cell['name']: cell for cell in api_db.cell_mapping_get_all(None)}


@pytest.fixture
def env(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(manage, 'EXTRA_CATEGORIES', ('cell',))
    monkeypatch.setattr(engines, '_urls', dict(engines._urls))
    monkeypatch.setattr(engines, '_options', dict(engines._options))
    yield Env(tmp_path, capsys)
    engines.dispose_all()


@pytest.fixture
def env_default_db(tmp_path, capsys, monkeypatch):
    """No ``[database] connection``: the embedded default file under ``state_path``."""
    monkeypatch.setattr(manage, 'EXTRA_CATEGORIES', ('cell',))
    monkeypatch.setattr(engines, '_urls', dict(engines._urls))
    monkeypatch.setattr(engines, '_options', dict(engines._options))
    yield Env(tmp_path, capsys, database=False)
    engines.dispose_all()


# -- create / list --------------------------------------------------------------------------------

def test_create_prints_uuid_only_when_verbose_and_list_masks_passwords(env):
    rc, out, err = env.run('create', '--name', 'quiet', '--transport-url', 'rabbit://a:b@h/q',
                           '--database_connection', 'mysql+pymysql://u:p@db/quiet')
    assert (rc, out, err) == (0, '', '')
    uuid = env.create('--name', 'cell2', '--transport-url', 'rabbit://u:pw@mq:5672/c2',
                      '--database_connection', 'mysql+pymysql://u:pw@db/cell2', '--disabled')
    assert re.fullmatch(UUID_RE, uuid)
    listing = env.ok('list')
    row = next(line for line in listing.splitlines() if uuid in line)
    assert re.split(r'\s*\|\s*', row.strip('| ')) == [
        'cell2', uuid, 'rabbit://u:****@mq:5672/c2', 'mysql+pymysql://u:****@db/cell2', 'True']
    assert 'pw@' not in listing
    assert listing.splitlines()[1].split('|')[1:-1] == [
        ' Name  ', ' UUID                                 ', ' Transport URL              ',
        ' Database Connection             ', ' Disabled ']
    assert 'rabbit://u:pw@mq:5672/c2' in env.ok('list_cells', '--verbose')


def test_database_urls_sqlalchemy_cannot_use_are_refused_and_change_nothing(env):
    """An unknown dialect or a driver that is not installed would only show when a service
    reads the cell: say so now (whether the server answers is not checked)."""
    bad = 'nosuchdb://u:secret@db/cell2'
    why = "Invalid database connection: Can't load plugin: sqlalchemy.dialects:nosuchdb\n"
    assert env.run('create', '--name', 'cell2', '--transport-url', 'rabbit://mq/c2',
                   '--database_connection', bad)[::2] == (1, why)
    assert env.run('map_cell0', '--database_connection', bad)[::2] == (1, why)
    assert env.cells() == {}
    cell2 = env.create('--name', 'cell2', '--transport-url', 'rabbit://mq/c2',
                       '--database_connection', env.cell2_url)
    assert env.run('update_cell', '--cell_uuid', cell2, '--database_connection', bad,
                   '--transport-url', 'rabbit://mq/c2')[::2] == (2, why)
    assert env.cells()['cell2']['database_connection'] == env.cell2_url
    # A server that does not answer is fine: the cell may be mapped before its database is up.
    env.ok('map_cell0', '--database_connection', 'postgresql+psycopg2://u:p@nowhere/cell0')


def test_create_defaults_to_the_local_config(env):
    rc, out, err = env.run('create_cell', '--name', 'cell1', '--verbose')
    assert rc == 0 and err == ''
    assert out.splitlines()[:2] == [
        '--transport-url not provided in the command line, using the value '
        '[DEFAULT]/transport_url from the configuration file',
        '--database_connection not provided in the command line, using the value '
        '[database]/connection from the configuration file']
    cell = env.cells()['cell1']
    assert (cell['transport_url'], cell['database_connection']) == (TRANSPORT, env.main_url)
    assert cell['uuid'] == out.splitlines()[2] and not cell['disabled']


def test_create_refuses_a_database_or_transport_url_of_another_cell(env):
    first = env.create('--name', 'cell1')
    for args in (['--transport-url', 'rabbit://other/'],             # same database
                 ['--database_connection', env.cell2_url]):          # same transport
        rc, out, err = env.run('create', '--name', 'cell2', *args)
        assert rc == 2
        assert err == ('The specified transport_url and/or database_connection combination '
                       'already exists for another cell with uuid %s.\n' % first)
    assert list(env.cells()) == ['cell1']


def test_create_refuses_an_invalid_transport_url(env):
    rc, out, err = env.run('create', '--name', 'x', '--transport-url', 'not-a-url')
    assert (rc, err) == (1, 'Invalid transport URL: No scheme specified\n')
    assert env.cells() == {}


def test_create_without_database_option_uses_the_embedded_default(env_default_db):
    env = env_default_db
    out = env.ok('create', '--name', 'cell1')
    assert ('using the default [database]/connection %s' % env.main_url) in out
    assert env.cells()['cell1']['database_connection'] == env.main_url


# -- URL templates --------------------------------------------------------------------------------

def test_format_url_fills_fields_from_the_local_url():
    conf = 'mysql+pymysql://nova:pw@db.local:3306/nova?charset=utf8'
    assert manage_cell.format_url(
        '{scheme}://{username}:{password}@{hostname}:{port}/nova_cell2?{query}', conf) == \
        'mysql+pymysql://nova:pw@db.local:3306/nova_cell2?charset=utf8'
    assert manage_cell.format_url('{scheme}://h/{path}_x', conf) == 'mysql+pymysql://h/nova_x'


def test_format_url_numbers_the_hosts_of_a_multi_host_url():
    conf = 'rabbit://u1:p1@h1:5671,u2:p2@h2:5672/vhost'
    assert manage_cell.format_url(
        'rabbit://{username2}:{password2}@{hostname2}:{port2},{hostname1}/{path}', conf) == \
        'rabbit://u2:p2@h2:5672,h1/vhost'


@pytest.mark.parametrize('template, conf', [
    ('rabbit://plain/', 'rabbit://u:p@h/'),        # no template: unchanged
    ('{scheme}://{hostname}/', None),              # nothing to format with
    ('{scheme}://{nosuchfield}/', 'rabbit://h/'),  # bad template: logged, unchanged
])
def test_format_url_returns_the_template_when_it_cannot_format(template, conf):
    assert manage_cell.format_url(template, conf) == template


def test_templates_are_stored_and_formatted_where_used(env):
    migration.db_sync(env.main_url + '.cell2', 'main')
    db_template, mq_template = 'sqlite:////{path}.cell2', '{scheme}://{username}:****@x/c2'
    uuid = env.create('--name', 'cell2', '--database_connection', db_template,
                      '--transport-url', '{scheme}://{username}:{password}@{hostname}/c2')
    stored = env.cells()['cell2']
    assert stored['database_connection'] == db_template
    assert stored['transport_url'] == '{scheme}://{username}:{password}@{hostname}/c2'
    row = next(line for line in env.ok('list').splitlines() if uuid in line)
    assert 'rabbit://guest:****@mq.example/c2' in row and env.main_url + '.cell2' in row
    assert mq_template not in row
    node = env.node(env.main_url + '.cell2', 'h9')
    out = env.ok('discover_hosts', '--cell_uuid', uuid, '--verbose')
    assert "Creating host mapping for compute host 'h9': %s" % node['uuid'] in out
    assert env.mapped(env.main_url + '.cell2', node) == 1


# -- map_cell0 ------------------------------------------------------------------------------------

def test_map_cell0_is_idempotent_and_defaults_to_main_url_with_cell0_suffix(env):
    assert env.run('map_cell0') == (0, '', '')
    assert env.run('map_cell0', '--database_connection', 'sqlite:///x') == (
        0, 'Cell0 is already setup\n', '')
    cell0 = env.cells()['cell0']
    assert (cell0['uuid'], cell0['transport_url']) == (CELL0, 'none:///')
    assert cell0['database_connection'] == 'sqlite:///%s' % (env.tmp_path / 'main_cell0.sqlite')


def test_map_cell0_puts_the_default_sqlite_file_beside_the_embedded_main_one(env_default_db):
    env_default_db.ok('map_cell0')
    assert env_default_db.cells()['cell0']['database_connection'] == 'sqlite:///%s' % (
        env_default_db.tmp_path / 'state' / 'minisched_cell0.sqlite')


def test_map_cell0_takes_the_given_database(env):
    env.ok('map_cell0', '--database_connection', 'postgresql+psycopg2://u:p@db/cell0')
    assert env.cells()['cell0']['database_connection'] == 'postgresql+psycopg2://u:p@db/cell0'


# -- discover_hosts -------------------------------------------------------------------------------

def test_discover_hosts_verbose_prints_novas_status_lines(env):
    env.ok('map_cell0')
    cell1 = env.create('--name', 'cell1')
    node = env.node(env.main_url, 'h1')
    assert env.ok('discover_hosts', '--verbose').splitlines() == [
        'Found 2 cell mappings.',
        'Skipping cell0 since it does not contain hosts.',
        "Getting computes from cell 'cell1': %s" % cell1,
        "Checking host mapping for compute host 'h1': %s" % node['uuid'],
        "Creating host mapping for compute host 'h1': %s" % node['uuid'],
        'Found 1 unmapped computes in cell: %s' % cell1,
    ]
    assert env.mapped(env.main_url, node) == 1
    assert api_db.host_mapping_get_by_host(None, 'h1')['cell_mapping']['uuid'] == cell1


def test_discover_hosts_second_run_maps_nothing_and_strict_says_so(env):
    cell1 = env.create('--name', 'cell1')
    env.node(env.main_url, 'h1')
    assert env.run('discover_hosts', '--strict') == (0, '', '')
    assert env.ok('discover_hosts', '--verbose').splitlines() == [
        'Found 1 cell mappings.',
        "Getting computes from cell 'cell1': %s" % cell1,
        'Found 0 unmapped computes in cell: %s' % cell1,
    ]
    assert env.run('discover_hosts', '--strict') == (1, '', '')


def test_discover_hosts_rechecks_an_unmarked_node_of_an_already_mapped_host(env):
    cell1 = env.create('--name', 'cell1')
    first, second = env.node(env.main_url, 'h1', 'n1'), env.node(env.main_url, 'h1', 'n2')
    out = env.ok('discover_hosts', '--verbose').splitlines()
    assert out[3:6] == ["Creating host mapping for compute host 'h1': %s" % first['uuid'],
                        "Checking host mapping for compute host 'h1': %s" % second['uuid'],
                        'Found 1 unmapped computes in cell: %s' % cell1]
    assert (env.mapped(env.main_url, first), env.mapped(env.main_url, second)) == (1, 0)
    assert "Checking host mapping for compute host 'h1': %s" % second['uuid'] in env.ok(
        'discover_hosts', '--verbose')


def test_discover_hosts_by_service_maps_compute_services_disabled_included(env):
    cell2 = env.create('--name', 'cell2', '--database_connection', env.cell2_url,
                       '--transport-url', 'rabbit://mq/cell2')
    env.service(env.cell2_url, 'h3', disabled=True)
    node = env.node(env.cell2_url, 'h3')
    assert env.ok('discover_hosts', '--by-service', '--cell_uuid', cell2,
                  '--verbose').splitlines() == [
        "Getting computes from cell 'cell2': %s" % cell2,
        'Creating host mapping for service h3',
        'Found 1 unmapped computes in cell: %s' % cell2,
    ]
    assert env.mapped(env.cell2_url, node) == 0      # --by-service marks no node
    assert env.run('discover_hosts', '--by-service', '--strict') == (1, '', '')


def test_discover_hosts_exits_2_when_a_parallel_run_mapped_the_host(env, monkeypatch):
    cell1 = env.create('--name', 'cell1')
    env.node(env.main_url, 'h1')
    api_db.host_mapping_create(None, 'h1', env.cells()['cell1']['id'])

    def not_found_yet(ctxt, host):  # the other run inserts between our check and insert
        raise exception.HostMappingNotFound(name=host)
    monkeypatch.setattr(host_mapping_obj.HostMapping, 'get_by_host', not_found_yet)
    rc, out, err = env.run('discover_hosts')
    assert (rc, out) == (2, '')
    assert err == ('ERROR: Duplicate host mapping was encountered. This command should be run '
                   'once after all compute hosts have been deployed and should not be run in '
                   'parallel. When run in parallel, the commands will collide with each other '
                   'trying to map the same hosts in the database at the same time. Error: '
                   'Host h1 is already mapped to cell %s\n' % cell1)


def test_discover_hosts_errors_are_one_line_without_traceback(env):
    rc, out, err = env.run('discover_hosts', '--cell_uuid', 'f' * 8 + '-ffff-ffff-ffff-' + 'f' * 12)
    assert (rc, err.count('\n')) == (1, 1) and 'has no mapping' in err
    env.create('--name', 'gone', '--database_connection', 'sqlite:////nonexistent/dir/x.db',
               '--transport-url', 'rabbit://gone/')
    rc, out, err = env.run('discover_hosts')
    assert rc == 1 and err.startswith('Database error: ') and err.count('\n') == 1


# -- list_hosts / delete / update -----------------------------------------------------------------

def test_list_hosts_lists_mappings_sorted_by_host(env):
    cell1 = env.create('--name', 'cell1')
    cell2 = env.create('--name', 'cell2', '--database_connection', env.cell2_url,
                       '--transport-url', 'rabbit://mq/cell2')
    for url, host in ((env.main_url, 'h2'), (env.cell2_url, 'h1'), (env.main_url, 'h0')):
        env.node(url, host)
    env.ok('discover_hosts')
    rows = [re.split(r'\s*\|\s*', line.strip('| '))
            for line in env.ok('list_hosts').splitlines()[3:-1]]
    assert rows == [['cell1', cell1, 'h0'], ['cell2', cell2, 'h1'], ['cell1', cell1, 'h2']]
    assert 'h1' not in env.ok('list_hosts', '--cell_uuid', cell1)
    rc, out, err = env.run('list_hosts', '--cell_uuid', CELL0)
    assert (rc, err) == (1, 'Cell with uuid %s was not found.\n' % CELL0)


def test_delete_refuses_a_cell_with_hosts_unless_forced(env):
    cell1 = env.create('--name', 'cell1')
    node = env.node(env.main_url, 'h1')
    env.ok('discover_hosts')
    assert env.run('delete', '--cell_uuid', cell1) == (
        2, '', 'There are existing hosts mapped to cell with uuid %s.\n' % cell1)
    assert env.run('delete_cell', '--cell_uuid', cell1, '--force') == (0, '', '')
    assert env.cells() == {} and api_db.host_mapping_get_all(None) == []
    assert env.mapped(env.main_url, node) == 0      # discoverable again


def test_delete_refuses_a_cell_with_instances(env):
    env.ok('map_cell0')
    cell0 = env.cells()['cell0']
    cell0_url = cell0['database_connection']
    migration.db_sync(cell0_url, 'main')
    instance = main_db.instance_create(env.cell_ctx(cell0_url), {'project_id': 'p'})
    api_db.instance_mapping_create(None, {'instance_uuid': instance['uuid'], 'project_id': 'p',
                                          'cell_id': cell0['id']})
    rc, out, err = env.run('delete', '--cell_uuid', CELL0)
    assert (rc, err) == (3, 'There are existing instances mapped to cell with uuid %s.\n' % CELL0)
    main_db.instance_destroy(env.cell_ctx(cell0_url), instance['uuid'])
    rc, out, err = env.run('delete', '--cell_uuid', CELL0)
    assert rc == 4 and 'all instances have been deleted' in err and err.count('\n') == 1
    assert env.run('delete', '--cell_uuid', CELL0, '--force') == (0, '', '')
    assert env.cells() == {}
    assert api_db.instance_mapping_get_all_by_cell(None, cell0['id']) == []


def test_delete_unknown_cell_exits_1_and_an_empty_cell0_is_deleted(env):
    assert env.run('delete', '--cell_uuid', CELL0) == (
        1, '', 'Cell with uuid %s was not found.\n' % CELL0)
    env.ok('map_cell0')
    assert env.run('delete', '--cell_uuid', CELL0) == (0, '', '')


def test_update_cell_name_state_and_refusals(env):
    cell1 = env.create('--name', 'cell1', '--disabled')
    out = env.ok('update_cell', '--cell_uuid', cell1, '--name', 'first', '--enable')
    assert env.cells()['first']['disabled'] is False
    assert out.count('from the configuration file') == 2   # Nova: URLs default to the config
    assert 'already enabled' in env.ok('update_cell', '--cell_uuid', cell1, '--enable')
    assert env.run('update_cell', '--cell_uuid', cell1, '--disable', '--enable')[::2] == (
        4, 'Cell cannot be disabled and enabled at the same time.\n')
    env.ok('update_cell', '--cell_uuid', cell1, '--disable')
    assert env.cells()['first']['disabled'] is True
    env.ok('map_cell0')
    # Nova checks the config's URLs (still cell1's) before the cell0 rule: move cell1 away.
    env.ok('update_cell', '--cell_uuid', cell1, '--database_connection', env.cell2_url,
           '--transport-url', 'rabbit://mq/cell1')
    assert env.run('update_cell', '--cell_uuid', CELL0, '--disable')[::2] == (
        5, 'Cell0 cannot be disabled.\n')


def test_update_cell_refuses_urls_of_another_cell_and_unknown_cells(env):
    env.create('--name', 'cell1')
    cell2 = env.create('--name', 'cell2', '--database_connection', env.cell2_url,
                       '--transport-url', 'rabbit://mq/cell2')
    rc, out, err = env.run('update_cell', '--cell_uuid', cell2, '--name', 'x')
    assert rc == 3 and 'already exists for another cell' in err   # the config's URLs: cell1's
    assert env.cells()['cell2']['database_connection'] == env.cell2_url
    rc, out, err = env.run('update_cell', '--cell_uuid', CELL0)
    assert (rc, err) == (1, 'Cell with uuid %s was not found.\n' % CELL0)


# -- simple_cell_setup ----------------------------------------------------------------------------

def test_simple_cell_setup_without_hosts_maps_cell0_and_the_local_cell(env):
    rc, out, err = env.run('simple_cell_setup')
    assert (rc, err) == (0, '')
    assert out.splitlines()[-1] == 'No hosts found to map to cell, exiting.'
    cells = env.cells()
    assert sorted(cells) == ['cell0', 'cell1']
    assert cells['cell1']['database_connection'] == env.main_url
    assert cells['cell1']['transport_url'] == TRANSPORT
    assert migration.db_version(cells['cell0']['database_connection'], 'main') is not None
    node = env.node(env.main_url, 'h1')
    out = env.ok('simple_cell_setup', '--transport-url', 'rabbit://ignored/')
    assert 'Cell0 is already setup' in out
    assert sorted(env.cells()) == ['cell0', 'cell1']
    assert env.mapped(env.main_url, node) == 1
    assert 'All hosts are already mapped to cell(s).' in env.ok('simple_cell_setup')


def test_simple_cell_setup_maps_unmapped_instances_of_the_local_cell(env):
    instance = main_db.instance_create(env.cell_ctx(env.main_url), {'project_id': 'p'})
    env.ok('simple_cell_setup')
    mapping = api_db.instance_mapping_get_by_instance_uuid(None, instance['uuid'])
    assert mapping['cell_mapping']['name'] == 'cell1'
