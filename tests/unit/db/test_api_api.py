"""API database API on SQLite: mappings, flavors, aggregates, groups, specs, build requests."""
import pytest
from oslo_db import exception as db_exc

from minisched import exception
from minisched.db.api import api as db


def _cell(ctx, **kw):
    values = {'name': 'cell1', 'transport_url': 'rabbit://', 'database_connection': 'sqlite://'}
    values.update(kw)
    return db.cell_mapping_create(ctx, values)


def _flavor(ctx, extra_specs=None, **kw):
    values = {'flavorid': '1', 'name': 'm1.small', 'memory_mb': 2048, 'vcpus': 1,
              'root_gb': 20, 'ephemeral_gb': 0}
    values.update(kw)
    return db.flavor_create(ctx, values, extra_specs=extra_specs)


# -- cell mappings --------------------------------------------------------------------------------

def test_cell_mappings(ctx):
    cell = _cell(ctx)
    assert cell['uuid'] and cell['disabled'] is False
    assert db.cell_mapping_get_by_uuid(ctx, cell['uuid']) == cell
    other = _cell(ctx, name='cell2')
    assert db.cell_mapping_get_all(ctx) == [cell, other]
    updated = db.cell_mapping_update(ctx, cell['uuid'], {'disabled': True})
    assert updated['disabled'] is True and updated['updated_at'] is not None
    db.cell_mapping_destroy(ctx, other['uuid'])
    assert db.cell_mapping_get_all(ctx) == [updated]
    with pytest.raises(exception.CellMappingExists):
        _cell(ctx, uuid=cell['uuid'])
    for call in (db.cell_mapping_get_by_uuid, db.cell_mapping_destroy):
        with pytest.raises(exception.CellMappingNotFound):
            call(ctx, other['uuid'])
    with pytest.raises(exception.CellMappingNotFound):
        db.cell_mapping_update(ctx, other['uuid'], {'name': 'x'})


def test_cell_mapping_destroy_refused_while_hosts_map_to_it(ctx):
    cell = _cell(ctx)
    db.host_mapping_create(ctx, 'host1', cell['id'])
    with pytest.raises(db_exc.DBReferenceError):
        db.cell_mapping_destroy(ctx, cell['uuid'])


# -- host mappings --------------------------------------------------------------------------------

def test_host_mappings(ctx):
    cell, cell2 = _cell(ctx), _cell(ctx, name='cell2')
    mapping = db.host_mapping_create(ctx, 'host1', cell['id'])
    assert mapping['host'] == 'host1' and mapping['cell_mapping'] == cell
    db.host_mapping_create(ctx, 'host2', cell2['id'])
    assert db.host_mapping_get_by_host(ctx, 'host1') == mapping
    assert [m['host'] for m in db.host_mapping_get_all(ctx)] == ['host1', 'host2']
    assert [m['host'] for m in db.host_mapping_get_all(ctx, cell_id=cell2['id'])] == ['host2']
    db.host_mapping_destroy(ctx, 'host1')
    with pytest.raises(exception.HostMappingNotFound):
        db.host_mapping_get_by_host(ctx, 'host1')
    with pytest.raises(exception.HostMappingNotFound):
        db.host_mapping_destroy(ctx, 'host1')


def test_host_mapping_duplicate_names_the_existing_cell(ctx):
    cell, cell2 = _cell(ctx), _cell(ctx, name='cell2')
    db.host_mapping_create(ctx, 'host1', cell['id'])
    with pytest.raises(exception.HostMappingExists) as caught:
        db.host_mapping_create(ctx, 'host1', cell2['id'])
    assert caught.value.kwargs == {'name': 'host1', 'cell_uuid': cell['uuid'], 'code': 409}


def test_host_mapping_to_missing_cell(ctx):
    with pytest.raises(db_exc.DBReferenceError):
        db.host_mapping_create(ctx, 'host1', 999)


# -- instance mappings ----------------------------------------------------------------------------

def test_instance_mappings(ctx):
    cell = _cell(ctx)
    mapping = db.instance_mapping_create(ctx, {'instance_uuid': 'i1', 'project_id': 'p'})
    assert mapping['cell_id'] is None and mapping['cell_mapping'] is None
    assert mapping['queued_for_delete'] is False
    with pytest.raises(exception.InstanceMappingExists):
        db.instance_mapping_create(ctx, {'instance_uuid': 'i1'})
    mapped = db.instance_mapping_update(ctx, 'i1', {'cell_id': cell['id']})
    assert mapped['cell_mapping'] == cell
    assert db.instance_mapping_get_by_instance_uuid(ctx, 'i1') == mapped
    assert db.instance_mapping_get_all_by_cell(ctx, cell['id']) == [mapped]
    db.instance_mapping_destroy(ctx, 'i1')
    for call in (db.instance_mapping_get_by_instance_uuid, db.instance_mapping_destroy):
        with pytest.raises(exception.InstanceMappingNotFound):
            call(ctx, 'i1')
    with pytest.raises(exception.InstanceMappingNotFound):
        db.instance_mapping_update(ctx, 'i1', {'cell_id': None})


# -- flavors --------------------------------------------------------------------------------------

def test_flavor_create_and_gets(ctx):
    flavor = _flavor(ctx, extra_specs={'hw:cpu_policy': 'dedicated'})
    assert flavor['extra_specs'] == {'hw:cpu_policy': 'dedicated'}
    assert (flavor['swap'], flavor['rxtx_factor'], flavor['is_public'],
            flavor['disabled']) == (0, 1.0, True, False)
    assert db.flavor_get(ctx, flavor['id']) == flavor
    assert db.flavor_get_by_flavor_id(ctx, '1') == flavor
    assert db.flavor_get_by_name(ctx, 'm1.small') == flavor
    other = _flavor(ctx, flavorid='2', name='m1.large')
    assert db.flavor_get_all(ctx) == [flavor, other]
    assert other['extra_specs'] == {}


def test_flavor_not_found_and_exists(ctx):
    _flavor(ctx)
    with pytest.raises(exception.FlavorExists):
        _flavor(ctx, flavorid='2')
    with pytest.raises(exception.FlavorExists):
        _flavor(ctx, name='other')
    with pytest.raises(exception.FlavorNotFound):
        db.flavor_get(ctx, 999)
    with pytest.raises(exception.FlavorNotFound):
        db.flavor_get_by_flavor_id(ctx, '9')
    with pytest.raises(exception.FlavorNotFoundByName):
        db.flavor_get_by_name(ctx, 'nope')
    with pytest.raises(exception.FlavorNotFound):
        db.flavor_destroy(ctx, '9')
    with pytest.raises(exception.FlavorNotFound):
        db.flavor_extra_specs_update(ctx, 999, {'a': 'b'})


def test_flavor_extra_specs_update_and_destroy(ctx):
    flavor = _flavor(ctx, extra_specs={'a': '1', 'b': '2'})
    specs = db.flavor_extra_specs_update(ctx, flavor['id'], {'a': '10', 'b': None, 'c': '3'})
    assert specs == {'a': '10', 'c': '3'}
    assert db.flavor_get(ctx, flavor['id'])['extra_specs'] == specs
    db.flavor_destroy(ctx, '1')
    with pytest.raises(exception.FlavorNotFound):
        db.flavor_get(ctx, flavor['id'])
    assert _flavor(ctx)['extra_specs'] == {}


# -- aggregates -----------------------------------------------------------------------------------

def test_aggregate_create_and_gets(ctx):
    agg = db.aggregate_create(ctx, {'name': 'agg1'}, metadata={'availability_zone': 'az1'})
    assert agg['uuid'] and agg['hosts'] == []
    assert agg['metadata'] == {'availability_zone': 'az1'}
    assert db.aggregate_get(ctx, agg['id']) == agg
    assert db.aggregate_get_by_uuid(ctx, agg['uuid']) == agg
    assert db.aggregate_get_all(ctx) == [agg]
    with pytest.raises(exception.AggregateNameExists):
        db.aggregate_create(ctx, {'name': 'agg1'})
    with pytest.raises(exception.AggregateNotFound):
        db.aggregate_get(ctx, 999)
    with pytest.raises(exception.AggregateNotFound):
        db.aggregate_get_by_uuid(ctx, 'nope')


def test_aggregate_hosts(ctx):
    agg = db.aggregate_create(ctx, {'name': 'agg1'}, metadata={'k': 'v'})
    other = db.aggregate_create(ctx, {'name': 'agg2'})
    assert db.aggregate_host_add(ctx, agg['id'], 'host1')['hosts'] == ['host1']
    db.aggregate_host_add(ctx, agg['id'], 'host2')
    db.aggregate_host_add(ctx, other['id'], 'host1')
    assert db.aggregate_get(ctx, agg['id'])['hosts'] == ['host1', 'host2']
    with pytest.raises(exception.AggregateHostExists):
        db.aggregate_host_add(ctx, agg['id'], 'host1')
    with pytest.raises(exception.AggregateNotFound):
        db.aggregate_host_add(ctx, 999, 'host1')
    assert [a['id'] for a in db.aggregate_get_by_host(ctx, 'host1')] == [agg['id'], other['id']]
    assert [a['id'] for a in db.aggregate_get_by_host(ctx, 'host1', key='k')] == [agg['id']]
    assert db.aggregate_get_by_host(ctx, 'host9') == []
    db.aggregate_host_delete(ctx, agg['id'], 'host1')
    assert db.aggregate_get(ctx, agg['id'])['hosts'] == ['host2']
    with pytest.raises(exception.AggregateHostNotFound):
        db.aggregate_host_delete(ctx, agg['id'], 'host1')


def test_aggregate_update_metadata_and_destroy(ctx):
    agg = db.aggregate_create(ctx, {'name': 'agg1'}, metadata={'a': '1', 'b': '2'})
    db.aggregate_create(ctx, {'name': 'agg2'})
    assert db.aggregate_update(ctx, agg['id'], {'name': 'renamed'})['name'] == 'renamed'
    with pytest.raises(exception.AggregateNameExists):
        db.aggregate_update(ctx, agg['id'], {'name': 'agg2'})
    with pytest.raises(exception.AggregateNotFound):
        db.aggregate_update(ctx, 999, {'name': 'x'})
    metadata = db.aggregate_metadata_update(ctx, agg['id'], {'a': None, 'b': '3', 'c': '4'})
    assert metadata == {'b': '3', 'c': '4'}
    assert db.aggregate_get(ctx, agg['id'])['metadata'] == metadata
    with pytest.raises(exception.AggregateNotFound):
        db.aggregate_metadata_update(ctx, 999, {'a': '1'})
    db.aggregate_host_add(ctx, agg['id'], 'host1')
    db.aggregate_destroy(ctx, agg['id'])
    with pytest.raises(exception.AggregateNotFound):
        db.aggregate_get(ctx, agg['id'])
    with pytest.raises(exception.AggregateNotFound):
        db.aggregate_destroy(ctx, agg['id'])
    assert db.aggregate_get_by_host(ctx, 'host1') == []


# -- instance groups ------------------------------------------------------------------------------

def test_instance_groups(ctx):
    group = db.instance_group_create(ctx, {'name': 'g', 'project_id': 'p1',
                                           'policy': 'anti-affinity',
                                           'rules': '{"max_server_per_host": 1}'},
                                     members=['i1', 'i2'])
    assert group['uuid'] and group['members'] == ['i1', 'i2']
    assert db.instance_group_get(ctx, group['uuid']) == group
    assert db.instance_group_get_by_instance(ctx, 'i2') == group
    other = db.instance_group_create(ctx, {'name': 'h', 'project_id': 'p2'})
    assert db.instance_group_get_all(ctx) == [group, other]
    assert db.instance_group_get_all(ctx, project_id='p2') == [other]
    added = db.instance_group_members_add(ctx, group['uuid'], ['i2', 'i3', 'i3'])
    assert added['members'] == ['i1', 'i2', 'i3']
    assert db.instance_group_update(ctx, group['uuid'], {'name': 'g2'})['name'] == 'g2'
    with pytest.raises(exception.InstanceGroupExists):
        db.instance_group_create(ctx, {'uuid': group['uuid']})
    db.instance_group_destroy(ctx, group['uuid'])
    for call in (db.instance_group_get, db.instance_group_destroy):
        with pytest.raises(exception.InstanceGroupNotFound):
            call(ctx, group['uuid'])
    with pytest.raises(exception.InstanceGroupNotFound):
        db.instance_group_get_by_instance(ctx, 'i1')
    with pytest.raises(exception.InstanceGroupNotFound):
        db.instance_group_members_add(ctx, group['uuid'], ['i9'])
    with pytest.raises(exception.InstanceGroupNotFound):
        db.instance_group_update(ctx, group['uuid'], {'name': 'x'})


# -- request specs and build requests -------------------------------------------------------------

def test_request_specs(ctx):
    spec = db.request_spec_create(ctx, 'i1', '{"num_instances": 1}')
    assert spec['instance_uuid'] == 'i1' and spec['spec'] == '{"num_instances": 1}'
    assert db.request_spec_get_by_instance_uuid(ctx, 'i1') == spec
    with pytest.raises(exception.RequestSpecExists):
        db.request_spec_create(ctx, 'i1', '{}')
    assert db.request_spec_update(ctx, 'i1', '{"num_instances": 2}')['spec'] == (
        '{"num_instances": 2}')
    db.request_spec_create(ctx, 'i2', '{}')
    assert [s['instance_uuid'] for s in
            db.request_spec_get_by_instance_uuids(ctx, ['i2', 'i1', 'i9'])] == ['i1', 'i2']
    assert db.request_spec_get_by_instance_uuids(ctx, []) == []
    db.request_spec_destroy(ctx, 'i1')
    for call in (db.request_spec_get_by_instance_uuid, db.request_spec_destroy):
        with pytest.raises(exception.RequestSpecNotFound):
            call(ctx, 'i1')
    with pytest.raises(exception.RequestSpecNotFound):
        db.request_spec_update(ctx, 'i1', '{}')


def test_build_requests(ctx):
    request = db.build_request_create(ctx, {'instance_uuid': 'i1', 'project_id': 'p',
                                            'instance': '{"uuid": "i1"}'})
    assert db.build_request_get_by_instance_uuid(ctx, 'i1') == request
    assert db.build_request_exists(ctx, 'i1') and not db.build_request_exists(ctx, 'i9')
    with pytest.raises(exception.BuildRequestAlreadyExists):
        db.build_request_create(ctx, {'instance_uuid': 'i1'})
    db.build_request_destroy(ctx, 'i1')
    for call in (db.build_request_get_by_instance_uuid, db.build_request_destroy):
        with pytest.raises(exception.BuildRequestNotFound):
            call(ctx, 'i1')


def _pending_build(ctx, uuid):
    db.instance_mapping_create(ctx, {'instance_uuid': uuid, 'project_id': 'p'})
    db.build_request_create(ctx, {'instance_uuid': uuid, 'project_id': 'p',
                                  'instance': '{"uuid": "%s"}' % uuid})


def test_build_request_take_maps_the_instance_and_drops_its_request_at_once(ctx):
    cell, other = _cell(ctx), _cell(ctx, name='cell2')
    _pending_build(ctx, 'i1')
    assert db.build_request_take(ctx, 'i1', cell['id']) == db.TAKEN
    assert db.instance_mapping_get_by_instance_uuid(ctx, 'i1')['cell_id'] == cell['id']
    with pytest.raises(exception.BuildRequestNotFound):
        db.build_request_get_by_instance_uuid(ctx, 'i1')
    # A second delivery, placed elsewhere meanwhile: it loses, and changes nothing.
    _pending_build(ctx, 'i2')
    db.instance_mapping_update(ctx, 'i2', {'cell_id': other['id']})
    assert db.build_request_take(ctx, 'i2', cell['id']) == db.PLACED
    assert db.instance_mapping_get_by_instance_uuid(ctx, 'i2')['cell_id'] == other['id']
    assert db.build_request_get_by_instance_uuid(ctx, 'i2')['instance_uuid'] == 'i2'


def test_build_request_take_without_a_request_or_a_mapping(ctx):
    cell = _cell(ctx)
    _pending_build(ctx, 'i1')
    db.build_request_destroy(ctx, 'i1')  # the user deleted the instance while it was placed
    assert db.build_request_take(ctx, 'i1', cell['id']) == db.GONE
    assert db.instance_mapping_get_by_instance_uuid(ctx, 'i1')['cell_id'] == cell['id']
    # No mapping (or no cells): the build request alone decides.
    db.build_request_create(ctx, {'instance_uuid': 'i2', 'project_id': 'p', 'instance': '{}'})
    assert db.build_request_take(ctx, 'i2', cell['id']) == db.TAKEN
    assert db.build_request_take(ctx, 'i2', None) == db.GONE


# -- the rows of one create -----------------------------------------------------------------------

def _batch(uuids, project='p1'):
    return ([{'instance_uuid': u, 'spec': '{}'} for u in uuids],
            [{'instance_uuid': u, 'project_id': project, 'instance': '{}'} for u in uuids],
            [{'instance_uuid': u, 'project_id': project, 'user_id': 'u1', 'cell_id': None}
             for u in uuids])


def _create_rows(ctx):
    return [len(db.build_request_get_all(ctx)),
            sum(1 for u in ('i1', 'i2', 'i3') if _exists(db.request_spec_get_by_instance_uuid,
                                                         ctx, u)),
            sum(1 for u in ('i1', 'i2', 'i3') if _exists(
                db.instance_mapping_get_by_instance_uuid, ctx, u))]


def _exists(get, ctx, uuid):
    try:
        get(ctx, uuid)
    except exception.NotFound:
        return False
    return True


def test_a_create_is_written_whole(ctx):
    group = db.instance_group_create(ctx, {'name': 'g', 'policy': 'affinity',
                                           'project_id': 'p1'})
    requests, specs = db.build_batch_create(ctx, *_batch(['i1', 'i2', 'i3']),
                                            group_uuid=group['uuid'])
    assert [r['instance_uuid'] for r in requests] == ['i1', 'i2', 'i3']
    assert [s['instance_uuid'] for s in specs] == ['i1', 'i2', 'i3']
    assert all(r['id'] and r['created_at'] for r in requests + specs)
    assert _create_rows(ctx) == [3, 3, 3]
    assert db.instance_group_get(ctx, group['uuid'])['members'] == ['i1', 'i2', 'i3']


def test_a_create_that_fails_part_way_writes_nothing(ctx):
    """The third table's insert fails (a duplicate, standing for any error): the specs and
    build requests inserted before it are rolled back with it."""
    db.instance_mapping_create(ctx, {'instance_uuid': 'i3', 'project_id': 'p1'})
    with pytest.raises(exception.BuildRequestAlreadyExists):
        db.build_batch_create(ctx, *_batch(['i1', 'i2', 'i3']))
    assert _create_rows(ctx) == [0, 0, 1]
    with pytest.raises(exception.InstanceGroupNotFound):  # the group is read last
        db.build_batch_create(ctx, *_batch(['i1', 'i2']), group_uuid='no-such-group')
    assert _create_rows(ctx) == [0, 0, 1]


def test_a_create_for_another_project_is_refused(ctx):
    from minisched import context as ms_context
    alice = ms_context.RequestContext(user_id='alice', project_id='p1')
    with pytest.raises(exception.Forbidden):
        db.build_batch_create(alice, *_batch(['i1'], project='p2'))
    assert _create_rows(ctx) == [0, 0, 0]


def test_a_withdrawal_is_whole_or_nothing(ctx):
    group = db.instance_group_create(ctx, {'name': 'g', 'policy': 'affinity'})
    db.build_batch_create(ctx, *_batch(['i1', 'i2', 'i3']), group_uuid=group['uuid'])
    db.build_request_destroy(ctx, 'i2')  # a conductor took it
    assert db.build_batch_withdraw(ctx, ['i1', 'i2', 'i3']) is False
    assert _create_rows(ctx) == [2, 3, 3]
    assert db.build_batch_withdraw(ctx, ['i1', 'i3']) is True
    assert _create_rows(ctx) == [0, 1, 1]  # i2's spec and mapping stay: it is being built
    assert db.instance_group_get(ctx, group['uuid'])['members'] == ['i2']
