"""Cells v2 with real processes: host discovery, two cells with their own databases and message
queues serving one scheduler, and a cell whose database stops answering.

Each test has an API database and a database per cell (``cells_helpers.make_deployment``).
cell1's conductor, computes and the scheduler use the session's vhost; cell2's conductor and
computes have a vhost of their own. Mappings are made with ``minisched-manage cell`` as an
operator makes them, and ``select_destinations`` is called over RPC from a child interpreter
(``Deployment.select``). The scheduler runs one worker, so that what one request teaches
it (a host mapping, a cell that stopped answering) is what the next request sees.
"""
import os

import pytest
import sqlalchemy as sa

from tests import local_ports
from tests.functional import base
from tests.functional import cells_helpers
from tests.functional import db_fixtures

pytestmark = [pytest.mark.functional, pytest.mark.timeout(120)]

UNMAPPED = ('Compute host %s has no host mapping and is not schedulable. Run '
            '"minisched-manage cell discover_hosts" to map it.')
DOWN = 'Cell %s did not answer'
SMALL = {'vcpus': 4, 'memory_mb': 4096, 'local_gb': 40}
#: With the default filters (RamFilter: ratio 1.5, 512 MB reserved; DiskFilter: ratio 1.0),
#: BIG_RAM fits only RAM_HOST and BIG_DISK only DISK_HOST. Each selection is consumed in the
#: scheduler's memory until the compute's next resource report (no build follows here), so
#: these sizes leave room for every selection a test makes.
RAM_HOST = {'vcpus': 8, 'memory_mb': 32768, 'local_gb': 40}
DISK_HOST = {'vcpus': 8, 'memory_mb': 4096, 'local_gb': 800}
BIG_RAM = {'memory_mb': 16384, 'root_gb': 1}
BIG_DISK = {'memory_mb': 512, 'root_gb': 300}


@pytest.fixture(scope='module')
def cell2_transport_url(transport_url):
    """cell2's message queue: a vhost of its own, shared by this module's tests."""
    url, delete = cells_helpers.cell_vhost()
    yield url
    delete()


def deployment(request, tmp_path, transport_url, cell2_transport_url=None, api='sqlite',
               **cells):
    """``cells_helpers.make_deployment`` with these backends (default: cell1 on SQLite)."""
    return cells_helpers.make_deployment(
        request, tmp_path, {'cell1': transport_url, 'cell2': cell2_transport_url},
        dict(cells or {'cell1': 'sqlite'}, api=api))


def test_new_compute_is_not_schedulable_until_discover_hosts_maps_it(request, tmp_path,
                                                                      transport_url):
    dep = deployment(request, tmp_path, transport_url)
    cell1 = dep.main
    cell1.start_conductor(wait=False)
    out = dep.manage('cell', 'simple_cell_setup')
    assert out[-1] == 'No hosts found to map to cell, exiting.', out
    cell_uuid = dep.api_query("SELECT uuid FROM cell_mappings WHERE name = 'cell1'")[0]['uuid']
    cell1.wait_ready('conductor')
    cell1.start_scheduler(workers=1, wait=False)
    cell1.start_compute('c1', **SMALL)
    cell1.wait_ready('scheduler')
    assert dep.node('cell1', 'c1')['mapped'] == 0

    before = dep.select()
    assert before.hosts == [] and before.error.startswith('NoValidHost'), before
    # The scheduler saw c1 (its node is in the cell database) and left it out for want of a
    # host mapping.
    assert UNMAPPED % 'c1' in cell1.log('scheduler')
    assert dep.api_query('SELECT host FROM host_mappings') == []

    dep.manage('cell', 'discover_hosts')
    assert dep.node('cell1', 'c1')['mapped'] == 1
    assert dep.select().hosts == [('c1', cell_uuid)]


def test_periodic_discovery_makes_new_compute_schedulable_without_the_command(
        request, tmp_path, transport_url):
    dep = deployment(request, tmp_path, transport_url)
    cell1 = dep.main
    cell1.start_conductor(wait=False)
    cell_uuid = dep.create_cells('cell1')['cell1']
    cell1.start_scheduler(workers=1, wait=False,
                          conf={'scheduler': {'discover_hosts_in_cells_interval': 2}})
    cell1.wait_ready('conductor', 'scheduler')
    cell1.start_compute('c1', **SMALL)   # after the scheduler's first discovery
    dep.node('cell1', 'c1')

    # No discover_hosts command: the scheduler's periodic task maps c1 within its interval.
    base.wait_for(lambda: dep.node('cell1', 'c1')['mapped'] == 1, 15,
                  message='the periodic discovery to map c1')
    assert 'Discovered 1 new hosts: cell1:c1' in cell1.log('scheduler')
    assert [row['host'] for row in dep.api_query('SELECT host FROM host_mappings')] == ['c1']
    assert dep.select().hosts == [('c1', cell_uuid)]


def start_two_cells(dep, **extra_cells):
    """Map cell1, cell2 and ``extra_cells`` ({name: (database URL, transport URL)}), start
    cell1's conductor, compute c1 (DISK_HOST) and the scheduler, and cell2's own conductor and
    compute c2 (RAM_HOST); map c1 and c2 with ``discover_hosts`` (of cell1 and cell2 only).

    The scheduler reads the cell mappings once, at start-up, and the host mappings on every
    request: it may start before the hosts are mapped, not before the cells are.
    """
    cell1, cell2 = dep.clusters['cell1'], dep.clusters['cell2']
    cell1.start_conductor(wait=False)
    cell2.start_conductor(wait=False)
    cells_created = dep.create_cells('cell1', 'cell2', wait=False, **extra_cells)
    cell1.wait_ready('conductor')
    cell2.wait_ready('conductor')   # a compute started before its conductor waits 10 s
    cell1.start_compute('c1', wait=False, **DISK_HOST)
    cell2.start_compute('c2', wait=False, **RAM_HOST)
    cells_created()
    cell1.start_scheduler(workers=1, wait=False)
    dep.node('cell1', 'c1')
    dep.node('cell2', 'c2')
    if extra_cells:
        dep.manage_many(*(('cell', 'discover_hosts', '--cell_uuid', dep.cell_uuids[cell])
                          for cell in ('cell1', 'cell2')))
    else:
        dep.manage('cell', 'discover_hosts')
    cell1.wait_ready('scheduler', 'c1')
    cell2.wait_ready('c2')


@pytest.mark.parametrize('api, cell1_db, cell2_db', [
    ('sqlite', 'sqlite', 'sqlite'),
    ('postgresql', 'postgresql', 'mysql'),
])
def test_scheduler_serves_hosts_of_two_cells_with_their_own_databases(
        request, tmp_path, transport_url, cell2_transport_url, api, cell1_db, cell2_db):
    dep = deployment(request, tmp_path, transport_url, cell2_transport_url, api=api,
                     cell1=cell1_db, cell2=cell2_db)
    start_two_cells(dep)
    cell1_uuid, cell2_uuid = dep.cell_uuids['cell1'], dep.cell_uuids['cell2']
    # Each compute's records are in its own cell's database only, written by its conductor.
    for cell, host in (('cell1', 'c1'), ('cell2', 'c2')):
        cluster = dep.clusters[cell]
        assert [row['host'] for row in cluster.query(
            "SELECT host FROM services WHERE topic = 'compute'")] == [host]
        assert [row['host'] for row in cluster.query('SELECT host FROM compute_nodes')] == [host]
    assert {(row['host'], row['uuid']) for row in dep.api_query(
        'SELECT h.host, c.uuid FROM host_mappings h JOIN cell_mappings c '
        'ON h.cell_id = c.id')} == {('c1', cell1_uuid), ('c2', cell2_uuid)}

    assert dep.select(**BIG_RAM).hosts == [('c2', cell2_uuid)]
    assert dep.select(**BIG_DISK).hosts == [('c1', cell1_uuid)]
    # Two instances that both hosts fit, but after the first (on c2, which has more free RAM)
    # c2 has too little disk left for the second: one instance per cell.
    both = dep.select(memory_mb=4096, root_gb=30, num_instances=2)
    assert sorted(both.hosts) == [('c1', cell1_uuid), ('c2', cell2_uuid)], both
    assert 'did not answer' not in dep.main.log('scheduler')


def break_database(request, url):
    """Make the cell database at ``url`` unreachable; returns a function undoing it (once).

    SQLite: its directory (with the WAL files) is moved away, so opening the file fails.
    PostgreSQL: the database is renamed, its connections cut.
    """
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() == 'sqlite':
        here = os.path.dirname(parsed.database)
        os.rename(here, here + '.away')
        move_back = lambda: os.rename(here + '.away', here)
    else:
        admin = sa.create_engine(db_fixtures.admin_url('postgresql'), poolclass=sa.pool.NullPool,
                                 isolation_level='AUTOCOMMIT')

        def rename(old, new):
            # The cell's conductor reconnects at once: cut and rename until it fits between.
            def renamed():
                with admin.connect() as conn:
                    conn.execute(sa.text('SELECT pg_terminate_backend(pid) FROM '
                                         'pg_stat_activity WHERE datname = :name'),
                                 {'name': old})
                    try:
                        conn.execute(sa.text('ALTER DATABASE "%s" RENAME TO "%s"' % (old, new)))
                    except sa.exc.DBAPIError:
                        return False
                    return True
            base.wait_for(renamed, 20, interval=0.05, message='renaming database %s' % old)

        rename(parsed.database, parsed.database + '_away')
        move_back = lambda: rename(parsed.database + '_away', parsed.database)
    state = {'broken': True}

    def restore():
        if state.pop('broken', False):
            move_back()
    request.addfinalizer(restore)  # before the database is dropped
    return restore


@pytest.mark.parametrize('cell2_db', ['sqlite', 'postgresql'])
def test_cell_whose_database_does_not_answer_is_skipped_while_the_other_schedules(
        request, tmp_path, transport_url, cell2_transport_url, cell2_db):
    dep = deployment(request, tmp_path, transport_url, cell2_transport_url, cell2=cell2_db,
                     cell1='sqlite')
    # cell3's database (and message queue) is a closed port from the start.
    port = local_ports.closed_port()
    start_two_cells(dep, cell3=('postgresql+psycopg2://minisched@127.0.0.1:%d/cell3' % port,
                                'rabbit://minisched:secret@127.0.0.1:%d/' % port))
    uuids = dep.cell_uuids
    scheduler_log = lambda: dep.main.log('scheduler')
    assert dep.select(**BIG_RAM).hosts == [('c2', uuids['cell2'])]
    assert dep.select(**BIG_DISK).hosts == [('c1', uuids['cell1'])]
    assert DOWN % uuids['cell3'] in scheduler_log()
    assert DOWN % uuids['cell2'] not in scheduler_log()

    restore = break_database(request, dep.clusters['cell2'].db_url)
    big = dep.select(**BIG_RAM)
    # Nothing else fits: a NoValidHost that names the cells whose hosts were not considered.
    assert big.hosts == [] and big.error.startswith('CellsUnreachable'), big
    assert 'cell2 unreachable since' in big.error and 'cell3 unreachable since' in big.error
    assert DOWN % uuids['cell2'] in scheduler_log()
    assert dep.select(**BIG_DISK).hosts == [('c1', uuids['cell1'])]
    # Even a request that both hosts fit goes to cell1: c2 is no candidate at all.
    assert dep.select().hosts == [('c1', uuids['cell1'])]

    # Back: c2 is a candidate again once its cell answers (and its compute reported).
    restore()
    base.wait_for(lambda: dep.select(**BIG_RAM).hosts == [('c2', uuids['cell2'])], 20,
                  interval=0.5, message='c2 to be chosen again')


def test_discover_hosts_verbose_maps_new_computes_of_two_cells_once(
        request, tmp_path, transport_url, cell2_transport_url):
    dep = deployment(request, tmp_path, transport_url, cell2_transport_url, cell1='sqlite',
                     cell2='sqlite')
    cell1, cell2 = dep.clusters['cell1'], dep.clusters['cell2']
    cell1.start_conductor(wait=False)
    cell2.start_conductor(wait=False)
    cells_created = dep.create_cells('cell1', 'cell2', cell0=True, wait=False)
    cell1.wait_ready('conductor')
    cell2.wait_ready('conductor')
    cell1.start_compute('c1', wait=False, **SMALL)
    cell2.start_compute('c2', wait=False, **SMALL)
    cells_created()
    nodes = {'c1': dep.node('cell1', 'c1')['uuid'], 'c2': dep.node('cell2', 'c2')['uuid']}
    hosts = {'cell1': 'c1', 'cell2': 'c2'}
    cells = [(row['name'], row['uuid']) for row in dep.api_query(
        'SELECT name, uuid FROM cell_mappings ORDER BY id')]

    def lines(created):
        out = ['Found 3 cell mappings.']
        for name, uuid in cells:
            if name == 'cell0':
                out.append('Skipping cell0 since it does not contain hosts.')
                continue
            out.append("Getting computes from cell '%s': %s" % (name, uuid))
            if created:
                host = hosts[name]
                out += ["Checking host mapping for compute host '%s': %s" % (host, nodes[host]),
                        "Creating host mapping for compute host '%s': %s" % (host, nodes[host])]
            out.append('Found %d unmapped computes in cell: %s' % (int(created), uuid))
        return out

    assert dep.manage('cell', 'discover_hosts', '--verbose', '--strict') == lines(True)
    assert dep.node('cell1', 'c1')['mapped'] == dep.node('cell2', 'c2')['mapped'] == 1
    # Nothing new: --strict exits 1, without it 0; mapped nodes are not even checked.
    strict, plain = dep.manage_many(('cell', 'discover_hosts', '--verbose', '--strict'),
                                    ('cell', 'discover_hosts'), expect=[1, 0])
    assert (strict, plain) == (lines(False), [])

    # A new compute in cell2: discovery of that cell only maps it.
    cell2.start_compute('c3', **SMALL)
    c3 = dep.node('cell2', 'c3')['uuid']
    assert dep.manage('cell', 'discover_hosts', '--cell_uuid', dep.cell_uuids['cell2'],
                      '--verbose', '--strict') == [
        "Getting computes from cell 'cell2': %s" % dep.cell_uuids['cell2'],
        "Checking host mapping for compute host 'c3': %s" % c3,
        "Creating host mapping for compute host 'c3': %s" % c3,
        'Found 1 unmapped computes in cell: %s' % dep.cell_uuids['cell2']]
    assert sorted((row['host'], row['name']) for row in dep.api_query(
        'SELECT h.host, c.name FROM host_mappings h JOIN cell_mappings c ON h.cell_id = c.id')
    ) == [('c1', 'cell1'), ('c2', 'cell2'), ('c3', 'cell2')]
