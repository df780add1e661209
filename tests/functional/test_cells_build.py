"""Builds across cells with their own message buses: API -> conductor -> cell2's compute.

The deployment of ``test_cells`` (``cells_helpers.make_deployment``): an API database, cell1
(its database, the session's vhost, the scheduler and the API-level conductor) and cell2 (its
own database, its own vhost, its own conductor and computes), mapped with ``minisched-manage
cell create --transport-url`` and ``discover_hosts``. The test process plays the API service
with ``minisched.compute.api`` (``build_helpers.Client``: a private ConfigOpts parsed from
cell1's config file). What is proved:

* the API-level conductor creates an instance in the chosen host's cell (``target_cell``) and
  casts ``build_and_run_instance`` on that cell's bus: a flavor only cell2's compute fits is
  ACTIVE on it, in cell2's database only, its instance mapping names cell2, its create events
  are Success with cell2's compute as the build's host;
* a reschedule stays inside cell2: its compute calls ITS cell's conductor, which uses the
  alternates (no scheduler on cell2's bus); the instance ends ACTIVE on the other cell2
  compute;
* ``API.delete`` casts ``terminate_instance`` on cell2's bus: the row is soft-deleted in
  cell2's database and the compute's usage freed;
* the scheduler listens on cell2's bus too: c2's update_instance_info reaches it.

Every cell runs with the same ``control_exchange``, as a Nova deployment does: the exchange of
a cast comes from the caller's configuration, not from the cell's transport URL, so a cell
whose services consumed another exchange would never get the API conductor's casts. Each
``base.Cluster`` picks an exchange of its own, so cell2's config file is given cell1's here.
"""
import configparser

import pytest

from tests.functional import base
from tests.functional import build_helpers
from tests.functional import cells_helpers

pytestmark = [pytest.mark.functional, pytest.mark.timeout(180)]

BUILD = 'compute_build_and_run_instance'
#: Exact capacities: no reserved memory, allocation ratios of 1.0.
COMPUTE_CONF = {'DEFAULT': {'ram_allocation_ratio': 1.0, 'cpu_allocation_ratio': 1.0,
                            'disk_allocation_ratio': 1.0, 'reserved_host_memory_mb': 0}}
#: c1 (cell1) has disk and little RAM, c2 (cell2) RAM and little disk; c3 (cell2, added for
#: the reschedule) has the most RAM of all, and fails every spawn.
C1 = {'vcpus': 8, 'memory_mb': 4096, 'local_gb': 800}
C2 = {'vcpus': 8, 'memory_mb': 32768, 'local_gb': 40}
C3 = {'vcpus': 16, 'memory_mb': 65536, 'local_gb': 40}
#: Only cell2's computes fit BIG_RAM; only c1 fits BIG_DISK.
BIG_RAM = {'vcpus': 1, 'memory_mb': 8192, 'root_gb': 1}
BIG_DISK = {'vcpus': 1, 'memory_mb': 512, 'root_gb': 300}


@pytest.fixture(scope='module')
def cell2_transport_url(transport_url):
    """cell2's message queue: a vhost of its own."""
    url, delete = cells_helpers.cell_vhost()
    yield url
    delete()


def share_control_exchange(cell, exchange):
    """Make ``cell``'s services consume ``exchange`` (see the module docstring)."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(cell.conf_file)
    parser.set('DEFAULT', 'control_exchange', exchange)
    with open(cell.conf_file, 'w') as f:
        parser.write(f)
    cell.control_exchange = exchange


def cell_instance(cell, uuid):
    rows = cell.query('SELECT uuid, host, vm_state, task_state, deleted FROM instances '
                      'WHERE uuid = :uuid', uuid=uuid)
    return rows[0] if rows else None


def test_build_reschedule_and_delete_in_a_cell_with_its_own_bus(
        request, tmp_path, transport_url, cell2_transport_url):
    dep = cells_helpers.make_deployment(
        request, tmp_path, {'cell1': transport_url, 'cell2': cell2_transport_url},
        {'api': 'sqlite', 'cell1': 'sqlite', 'cell2': 'sqlite'})
    cell1, cell2 = dep.clusters['cell1'], dep.clusters['cell2']
    share_control_exchange(cell2, cell1.control_exchange)
    cell1.start_conductor(wait=False)
    cell2.start_conductor(wait=False)
    cells_created = dep.create_cells('cell1', 'cell2', wait=False)
    cell1.wait_ready('conductor')
    cell2.wait_ready('conductor')   # a compute started before its conductor waits 10 s
    cell1.start_compute('c1', conf=COMPUTE_CONF, wait=False, **C1)
    cell2.start_compute('c2', conf=COMPUTE_CONF, wait=False, **C2)
    uuids = cells_created()
    cell1.start_scheduler(workers=1, wait=False, conf={'DEFAULT': {'debug': True}})
    dep.node('cell1', 'c1')
    dep.node('cell2', 'c2')
    dep.manage('cell', 'discover_hosts')
    cell1.wait_ready('scheduler', 'c1')
    cell2.wait_ready('c2')
    build_helpers.wait_nodes(cell1, ['c1'])
    build_helpers.wait_nodes(cell2, ['c2'])
    # cell2's mapping carries its own bus, as ``cell create --transport-url`` stored it.
    assert dep.api_query("SELECT transport_url FROM cell_mappings WHERE name = 'cell2'") == [
        {'transport_url': cell2_transport_url}]

    client = build_helpers.Client(cell1)
    request.addfinalizer(client.close)
    big_ram = client.flavor('big.ram', **BIG_RAM)
    big_disk = client.flavor('big.disk', **BIG_DISK)

    # 1. Two instances only c2 fits, and one only c1 fits: each is built in its host's cell.
    in_cell2 = client.boot(big_ram, num_instances=2, display_name='ram')
    in_cell1, = client.boot(big_disk, display_name='disk')
    built = client.wait_built(in_cell2 + [in_cell1], timeout=90)
    assert {u: (i.vm_state, i.host) for u, i in built.items()} == dict(
        {u: ('active', 'c2') for u in in_cell2}, **{in_cell1: ('active', 'c1')})
    mappings = {row['instance_uuid']: row['name'] for row in dep.api_query(
        'SELECT m.instance_uuid, c.name FROM instance_mappings m JOIN cell_mappings c '
        'ON m.cell_id = c.id')}
    assert mappings == dict({u: 'cell2' for u in in_cell2}, **{in_cell1: 'cell1'})
    for uuid in in_cell2:
        row = cell_instance(cell2, uuid)
        assert (row['host'], row['vm_state'], row['task_state'], row['deleted']) == (
            'c2', 'active', None, 0), row
        assert cell_instance(cell1, uuid) is None   # in cell2's database only
        events = client.events(uuid)
        assert [(e.action, e.event, e.result) for e in events] == [
            ('create', 'schedule', 'Success'), ('create', BUILD, 'Success')], events
        assert events[1].host == 'c2'
    assert cell_instance(cell1, in_cell1)['host'] == 'c1'
    assert cell_instance(cell2, in_cell1) is None
    assert cell2.query("SELECT memory_mb_used FROM compute_nodes WHERE host = 'c2'") == [
        {'memory_mb_used': 2 * BIG_RAM['memory_mb']}]
    # The scheduler also listens on cell2's bus: c2's instance info reached it (in Nova it
    # would not, the fanout going out on a bus no scheduler reads).
    assert 'Listening for scheduler messages on the bus of cell cell2 too' in \
        cell1.log('scheduler')
    base.wait_for(lambda: 'cached instance information for host c2' in cell1.log('scheduler'),
                  30, message="c2's update_instance_info to reach the scheduler")

    # 2. c3 joins cell2, with the most RAM (picked first) and every spawn failing: cell2's
    # compute asks cell2's conductor to reschedule, which builds on the alternate c2.
    cell2.start_compute('c3', conf=build_helpers.merge_conf(
        COMPUTE_CONF, {'fake_driver': {'spawn_failure': 'reschedule'}}), **C3)
    dep.node('cell2', 'c3')
    build_helpers.wait_nodes(cell2, ['c3'])
    dep.manage('cell', 'discover_hosts', '--cell_uuid', uuids['cell2'])
    rescheduled, = client.boot(big_ram, display_name='rescheduled')
    instance = client.wait_built([rescheduled], timeout=90)[rescheduled]
    assert (instance.vm_state, instance.host) == ('active', 'c2')
    row = cell_instance(cell2, rescheduled)
    assert (row['host'], row['vm_state'], row['deleted']) == ('c2', 'active', 0), row
    events = client.events(rescheduled)
    assert [(e.action, e.event, e.host, e.result) for e in events[1:]] == [
        ('create', BUILD, 'c3', 'Error'), ('create', BUILD, 'c2', 'Success')], events
    assert (events[0].event, events[0].result) == ('schedule', 'Success'), events
    assert 'fake driver told to fail spawn' in cell2.log('c3')
    # The reschedule never left cell2: cell1's conductor did not see build_instances.
    assert rescheduled not in cell1.log('conductor')
    assert cell_instance(cell1, rescheduled) is None

    # 3. Deletes go to the instance's cell: terminate on cell2's bus frees c2.
    for uuid in in_cell2 + [rescheduled]:
        client.delete(uuid)
    client.wait_deleted(in_cell2 + [rescheduled])
    for uuid in in_cell2 + [rescheduled]:
        row = cell_instance(cell2, uuid)
        assert row['deleted'] != 0, row
    base.wait_for(lambda: cell2.query(
        "SELECT memory_mb_used FROM compute_nodes WHERE host = 'c2'") == [
        {'memory_mb_used': 0}], 30, message="c2's memory to be freed")
    assert cell_instance(cell1, in_cell1)['deleted'] == 0
