"""The DB layer on real servers: db_sync of both databases on throwaway PostgreSQL and MariaDB
databases, the schema matching the models, then a CRUD pass through the behaviours whose SQL
differs between backends (duplicate detection, ordered SET, microsecond timestamps, NULLs).
"""
import os

import pytest
import sqlalchemy as sa
from oslo_config import cfg
from oslo_db import exception as db_exc

from minisched import context as ms_context
from minisched import exception
from minisched.conf import database, default
from minisched.db import engines, migration, utils
from minisched.db.api import api as api_db
from minisched.db.main import api as main_db
from tests.functional import db_fixtures
from tests.unit.db.test_migration import schema_diff

pytestmark = pytest.mark.functional
throwaway_db = db_fixtures.throwaway_db  # makes the fixture available in this module


def _configure(state_path, urls):
    conf = cfg.ConfigOpts()
    database.register_opts(conf)
    default.register_opts(conf)
    conf([], project='minisched-test', default_config_files=[], default_config_dirs=[])
    conf.set_override('state_path', str(state_path))
    conf.set_override('connection', urls['main'], group='database')
    # [api_database] is a module-level OptGroup: its overrides are seen by every ConfigOpts.
    conf.set_override('connection', urls['api'], group='api_database')
    try:
        engines.configure(conf)
    finally:
        conf.clear_override('connection', group='api_database')


@pytest.fixture(params=db_fixtures.SERVER_BACKENDS)
def urls(request, tmp_path, monkeypatch):
    """Both databases created on the parametrized backend, migrated (twice) and configured."""
    monkeypatch.setattr(engines, '_urls', dict(engines._urls))
    monkeypatch.setattr(engines, '_options', dict(engines._options))
    urls = {}
    for name in ('main', 'api'):
        urls[name], cleanup = db_fixtures.make_db(request.param)
        request.addfinalizer(cleanup)
    _configure(tmp_path, urls)
    for name in ('main', 'api'):
        migration.db_sync(urls[name], name)
        migration.db_sync(urls[name], name)
    return urls


@pytest.fixture
def ctx(urls):
    return ms_context.get_admin_context()


@pytest.mark.parametrize('throwaway_db', db_fixtures.BACKENDS, indirect=True)
def test_throwaway_db_fixture(throwaway_db):
    assert db_fixtures.PREFIX in throwaway_db
    migration.db_sync(throwaway_db, 'api')
    assert migration.db_version(throwaway_db, 'api') is not None


@pytest.mark.parametrize('backend', db_fixtures.BACKENDS)
def test_make_db_cleanup_drops_the_database(backend):
    url, cleanup = db_fixtures.make_db(backend)
    migration.db_sync(url, 'main')
    cleanup()
    cleanup()
    if backend == 'sqlite':
        assert not os.path.exists(os.path.dirname(sa.engine.make_url(url).database))
        return
    with pytest.raises(sa.exc.OperationalError):  # unknown database
        with sa.create_engine(url).connect():
            pass


def test_db_sync_and_schema(urls):
    for name, url in urls.items():
        assert migration.db_version(url, name) is not None
        assert schema_diff(url, name) == []


def test_services(ctx):
    values = {'host': 'h1', 'binary': main_db.COMPUTE_BINARY, 'topic': 'compute'}
    service = main_db.service_create(ctx, values)
    with pytest.raises(exception.ServiceBinaryExists):
        main_db.service_create(ctx, dict(values, topic='other'))
    with pytest.raises(exception.ServiceTopicExists):
        main_db.service_create(ctx, dict(values, binary='minisched-other'))
    first = main_db.service_update(ctx, service['id'], {'report_count': 1})
    assert first['last_seen_up'] is not None and first['report_count'] == 1
    again = main_db.service_update(ctx, service['id'], {'report_count': 1})
    assert again['last_seen_up'] == first['last_seen_up']
    assert again['updated_at'] > first['updated_at']
    main_db.service_destroy(ctx, service['id'])
    gone = main_db.service_get(ms_context.get_admin_context('yes'), service['id'])
    assert gone['deleted'] == service['id']
    assert main_db.service_create(ctx, values)['id'] != service['id']


def test_compute_nodes(ctx):
    values = {'host': 'h1', 'hypervisor_hostname': 'n1', 'vcpus': 4, 'memory_mb': 1024,
              'local_gb': 10, 'vcpus_used': 0, 'memory_mb_used': 0, 'local_gb_used': 0,
              'cpu_info': '{}', 'ram_allocation_ratio': 1.5}
    node = main_db.compute_node_create(ctx, values)
    stale = main_db.compute_node_create(ctx, dict(values, hypervisor_hostname='n2'))
    with pytest.raises(exception.ComputeNodeExists):
        main_db.compute_node_create(ctx, values)
    since = utils.now()  # rows changed within the same second must still be found
    main_db.compute_node_update(ctx, node['id'], {'vcpus_used': 2})
    main_db.compute_node_delete(ctx, stale['id'])
    changed = main_db.compute_node_get_all_changed_since(ctx, since)
    assert sorted((row['id'], row['deleted']) for row in changed) == [
        (node['id'], 0), (stale['id'], stale['id'])]
    assert main_db.compute_node_get_by_host_and_nodename(ctx, 'h1', 'n1')['vcpus_used'] == 2
    assert main_db.compute_node_get_by_nodename(ctx, 'n1')['id'] == node['id']
    third = main_db.compute_node_create(ctx, dict(values, hypervisor_hostname='n3',
                                                  hypervisor_type='ironic'))
    assert [row['id'] for row in main_db.compute_node_get_all_by_pagination(
        ctx, limit=1, marker=node['id'])] == [third['id']]
    with pytest.raises(exception.MarkerNotFound):
        main_db.compute_node_get_all_by_pagination(ctx, marker=stale['id'])
    main_db.service_create(ctx, {'host': 'h1', 'binary': main_db.COMPUTE_BINARY})
    assert [row['host'] for row in main_db.service_get_all_computes_by_hv_type(
        ctx, 'ironic')] == ['h1']


def test_scheduler_reads(ctx):
    """The scheduler's full and incremental reads: the rows the dict reads give, read-only."""
    service = main_db.service_create(ctx, {'host': 'h1', 'binary': main_db.COMPUTE_BINARY,
                                           'topic': 'compute', 'disabled': True})
    node = main_db.compute_node_create(ctx, {
        'host': 'h1', 'hypervisor_hostname': 'n1', 'vcpus': 4, 'memory_mb': 1024,
        'local_gb': 10, 'vcpus_used': 0, 'memory_mb_used': 0, 'local_gb_used': 0,
        'service_id': service['id']})
    since = utils.now()
    newer = main_db.compute_node_update(ctx, node['id'], {'vcpus_used': 1})
    services, nodes = main_db.compute_hosts_get_all(ctx, main_db.COMPUTE_BINARY)
    assert [dict(row) for row in services] == [main_db.service_get(ctx, service['id'])]
    assert [dict(row) for row in nodes] == [main_db.compute_node_get(ctx, node['id'])]
    assert {type(row) for row in services + nodes} == {utils.FrozenRow}
    services, nodes = main_db.compute_changes_since(ctx, main_db.COMPUTE_BINARY, since)
    assert services == [] and [row['vcpus_used'] for row in nodes] == [newer['vcpus_used']]
    # Listed by version first: only the rows not held are read whole.
    listed = {}

    def unheld(table_name, versions):
        listed[table_name] = [tuple(version) for version in versions]
        return [version[0] for version in versions]
    services, nodes = main_db.compute_changes_since(ctx, main_db.COMPUTE_BINARY, since,
                                                    unheld=unheld)
    assert listed == {'services': [], 'compute_nodes': [
        (node['id'], newer['updated_at'], newer['created_at'])]}
    assert services == [] and [dict(row) for row in nodes] == [newer]
    assert main_db.compute_changes_since(ctx, main_db.COMPUTE_BINARY, since,
                                         unheld=lambda name, versions: []) == ([], [])
    later = main_db.service_update(ctx, service['id'], {'disabled_reason': 'maintenance'})
    listed.clear()
    services, nodes = main_db.compute_changes_since(ctx, main_db.COMPUTE_BINARY, since,
                                                    unheld=unheld)
    assert listed == {'services': [(service['id'], later['updated_at'], later['created_at'])],
                      'compute_nodes': [(node['id'], newer['updated_at'], newer['created_at'])]}
    assert [dict(row) for row in services] == [later] and [dict(row) for row in nodes] == [newer]
    listed.clear()
    services, nodes = main_db.compute_hosts_get_all(ctx, main_db.COMPUTE_BINARY, unheld=unheld)
    assert listed == {'services': [(service['id'], later['updated_at'],
                                    later['created_at'], 'h1')],
                      'compute_nodes': [(node['id'], newer['updated_at'], newer['created_at'],
                                         'h1', 'n1')]}
    assert [dict(row) for row in nodes] == [newer]
    assert [dict(row) for row in services] == [main_db.service_get(ctx, service['id'])]


def test_instances(ctx):
    inst = main_db.instance_create(ctx, {'host': 'h1', 'node': 'n1', 'vm_state': 'building',
                                         'task_state': None, 'flavor': '{"x": 1}' * 20000})
    assert len(inst['flavor']) == 8 * 20000  # > 64 KiB: MEDIUMTEXT on MySQL
    _, new = main_db.instance_update_and_get_original(
        ctx, inst['uuid'], {'task_state': 'scheduling'}, expected_task_state=[None, 'x'])
    # The row as stored after the update (RETURNING, or a read where there is none): the
    # column the condition checked changed, and updated_at was set by the update.
    assert new['task_state'] == 'scheduling' and new['updated_at'] is not None
    assert new == main_db.instance_get_by_uuid(ctx, inst['uuid'])
    with pytest.raises(exception.UnexpectedTaskStateError):
        main_db.instance_update_and_get_original(ctx, inst['uuid'], {'task_state': 'y'},
                                                 expected_task_state=[None])
    # Instance.save's write: the new row alone, the same either way.
    new = main_db.instance_update(ctx, inst['uuid'], {'node': 'n2'},
                                  expected_task_state='scheduling')
    assert new['node'] == 'n2' and new == main_db.instance_get_by_uuid(ctx, inst['uuid'])
    with pytest.raises(exception.UnexpectedTaskStateError):
        main_db.instance_update(ctx, inst['uuid'], {'node': 'n3'}, expected_task_state=[None])
    main_db.instance_update_and_get_original(ctx, inst['uuid'], {'task_state': 'deleting'})
    with pytest.raises(exception.UnexpectedDeletingTaskStateError):
        main_db.instance_update_and_get_original(ctx, inst['uuid'], {'host': 'h2'},
                                                 expected_task_state='scheduling')
    with pytest.raises(exception.InstanceExists):
        main_db.instance_create(ctx, {'uuid': inst['uuid']})
    for host in ('h3', None, 'h2', None):
        main_db.instance_create(ctx, {'host': host})
    everything = main_db.instance_get_all_by_filters(ctx, {}, sort_key='host', sort_dir='asc')
    assert [row['host'] for row in everything] == ['h1', 'h2', 'h3', None, None]
    page = main_db.instance_get_all_by_filters(ctx, {}, sort_key='host', sort_dir='asc',
                                               limit=2, marker=everything[2]['uuid'])
    assert [row['id'] for row in page] == [row['id'] for row in everything[3:]]
    assert main_db.instance_destroy(ctx, inst['uuid'])['deleted'] == inst['id']


def test_host_mappings(ctx):
    cell = api_db.cell_mapping_create(ctx, {'name': 'cell1'})
    other = api_db.cell_mapping_create(ctx, {'name': 'cell2'})
    mapping = api_db.host_mapping_create(ctx, 'h1', cell['id'])
    assert mapping['cell_mapping']['uuid'] == cell['uuid']
    with pytest.raises(exception.HostMappingExists) as caught:
        api_db.host_mapping_create(ctx, 'h1', other['id'])
    assert caught.value.kwargs['cell_uuid'] == cell['uuid']
    with pytest.raises(db_exc.DBReferenceError):
        api_db.cell_mapping_destroy(ctx, cell['uuid'])
    moved = api_db.host_mapping_update(ctx, mapping['id'], {'cell_id': other['id']})
    assert moved['cell_mapping']['uuid'] == other['uuid'] and moved['updated_at'] is not None
    api_db.host_mapping_create(ctx, 'h2', cell['id'])
    with pytest.raises(exception.HostMappingExists) as caught:
        api_db.host_mapping_update(ctx, mapping['id'], {'host': 'h2'}, host='h1')
    assert caught.value.kwargs['cell_uuid'] == cell['uuid']
    assert [c['uuid'] for c in api_db.cell_mapping_get_all(ctx, disabled=False)] == [
        cell['uuid'], other['uuid']]


def test_aggregates(ctx):
    agg = api_db.aggregate_create(ctx, {'name': 'a1'}, metadata={'availability_zone': 'az'})
    api_db.aggregate_host_add(ctx, agg['id'], 'h1')
    api_db.aggregate_host_add(ctx, agg['id'], 'h2')
    with pytest.raises(exception.AggregateHostExists):
        api_db.aggregate_host_add(ctx, agg['id'], 'h1')
    with pytest.raises(exception.AggregateNameExists):
        api_db.aggregate_create(ctx, {'name': 'a1'})
    api_db.aggregate_metadata_update(ctx, agg['id'], {'availability_zone': None, 'k': 'v'})
    found = api_db.aggregate_get_by_host(ctx, 'h2')
    assert [(a['hosts'], a['metadata']) for a in found] == [(['h1', 'h2'], {'k': 'v'})]
    api_db.aggregate_metadata_update(ctx, agg['id'], {'trait:A_B': 'required'})
    assert [(a['hosts'], a['metadata']) for a in api_db.aggregate_get_by_metadata(
        ctx, value='v')] == [(['h1', 'h2'], {'k': 'v'})]
    # The prefix is a LIKE pattern with its wildcards escaped.
    for prefix, names in (('trait:', ['a1']), ('trait_', []), ('trait:A_', ['a1'])):
        assert [a['name'] for a in api_db.aggregate_get_non_matching_by_metadata_keys(
            ctx, ['trait:X'], prefix, 'required')] == names
    api_db.aggregate_destroy(ctx, agg['id'])
    assert api_db.aggregate_get_all(ctx) == []


def test_flavors(ctx):
    flavor = api_db.flavor_create(ctx, {'flavorid': '1', 'name': 'small', 'memory_mb': 512,
                                        'vcpus': 1}, extra_specs={'a': '1'})
    with pytest.raises(exception.FlavorExists):
        api_db.flavor_create(ctx, {'flavorid': '2', 'name': 'small', 'memory_mb': 1,
                                   'vcpus': 1})
    specs = api_db.flavor_extra_specs_update(ctx, flavor['id'], {'a': None, 'b': '2'})
    assert specs == {'b': '2'}
    assert api_db.flavor_get_by_name(ctx, 'small')['extra_specs'] == {'b': '2'}
    api_db.flavor_add_project(ctx, flavor['id'], 'p1')
    with pytest.raises(exception.FlavorAccessExists):
        api_db.flavor_add_project(ctx, flavor['id'], 'p1')
    assert api_db.flavor_get_projects(ctx, '1') == ['p1']
    for flavorid, name, memory_mb in (('2', 'large', 2048), ('3', 'xlarge', 2048)):
        api_db.flavor_create(ctx, {'flavorid': flavorid, 'name': name, 'memory_mb': memory_mb,
                                   'vcpus': 1, 'is_public': False})
    user = ms_context.RequestContext(user_id='u', project_id='p1', is_admin=False)
    assert [f['flavorid'] for f in api_db.flavor_get_all(user)] == ['1']
    # The name filter is each backend's regular expression search (REGEXP, ~).
    assert [f['flavorid'] for f in api_db.flavor_get_all(
        ctx, filters={'name': 'l(ar|ma)'}, sort_key='memory_mb', sort_dir='desc')] == ['3', '2']
    assert [f['flavorid'] for f in api_db.flavor_get_all(
        ctx, sort_key='memory_mb', sort_dir='desc', marker='3', limit=1)] == ['2']
    assert api_db.flavor_destroy(ctx, flavor_id=flavor['id'])['flavorid'] == '1'
    assert api_db.flavor_destroy(ctx, '2')['name'] == 'large'
    assert [f['flavorid'] for f in api_db.flavor_get_all(ctx)] == ['3']


def test_action_events(ctx):
    """An event starts on the newest action of its request and finishes the newest event of
    that name on its host, in one statement where the backend returns what it updated."""
    def action(when):
        return main_db.action_start(ctx, {
            'action': 'create', 'instance_uuid': 'i1', 'request_id': 'req-1',
            'user_id': 'u', 'project_id': 'p', 'start_time': when})
    older, newer = action(utils.now()), action(utils.now())
    start = {'instance_uuid': 'i1', 'request_id': 'req-1', 'event': 'build',
             'start_time': utils.now()}
    first = main_db.action_event_start(ctx, dict(start, host='c1'))
    second = main_db.action_event_start(ctx, dict(start, host='c2'))
    assert first['action_id'] == second['action_id'] == newer['id'] != older['id']
    done = main_db.action_event_finish(ctx, dict(start, host='c1', finish_time=utils.now(),
                                                 result='Error', traceback='tb'))
    assert (done['id'], done['result'], done['traceback']) == (first['id'], 'Error', 'tb')
    assert main_db.action_event_finish(ctx, dict(start, host='c2', result='Success'))[
        'id'] == second['id']
    assert main_db.action_get_by_request_id(ctx, 'i1', 'req-1')['message'] == 'Error'
    with pytest.raises(exception.InstanceActionEventNotFound):
        main_db.action_event_finish(ctx, dict(start, event='nope', result='Success'))
    with pytest.raises(exception.InstanceActionNotFound):
        main_db.action_event_finish(ctx, dict(start, request_id='req-9', result='Success'))
    with pytest.raises(exception.InstanceActionNotFound):
        main_db.action_event_start(ctx, dict(start, request_id='req-9'))


def test_a_create_returns_its_rows_in_the_order_given(ctx):
    """``build_batch_create``'s rows (returned by the INSERT where the backend can, read
    back where not) come in the order given, with the ids stored, without the JSON."""
    uuids = ['i3', 'i1', 'i2', 'i0']
    requests, specs = api_db.build_batch_create(
        ctx, [{'instance_uuid': u, 'spec': '{}'} for u in uuids],
        [{'instance_uuid': u, 'project_id': 'p', 'instance': '{}'} for u in uuids],
        [{'instance_uuid': u, 'project_id': 'p'} for u in uuids])
    assert [r['instance_uuid'] for r in requests] == [s['instance_uuid'] for s in specs] == uuids
    assert all('instance' not in r and 'spec' not in s for r, s in zip(requests, specs))
    for row in requests:
        stored = api_db.build_request_get_by_instance_uuid(ctx, row['instance_uuid'])
        assert (stored['id'], stored['created_at']) == (row['id'], row['created_at'])
