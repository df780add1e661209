"""Who reaches which rows, on SQLite: Nova's rules in both database APIs.

A user's context (not admin, with a user and a project) reaches its own project's instances,
their faults and actions, and its instance mappings, build requests and request specs;
another project's are NotFound, marked as refusals for the conductor's log. Admin contexts
reach everything; service, compute node, mapping, aggregate and flavor writes are theirs
alone; anonymous contexts are Forbidden.
"""
import traceback

import pytest

from minisched import context as ms_context
from minisched import exception
from minisched.db.api import api as api_db
from minisched.db.main import api as db

HOST = 'host1'


@pytest.fixture
def alice(db):
    """A user of project p1, who owns the instances made by ``instance``."""
    return ms_context.RequestContext(user_id='alice', project_id='p1')


@pytest.fixture
def mallory(db):
    """A user of project p2, who owns nothing here."""
    return ms_context.RequestContext(user_id='mallory', project_id='p2')


def _instance(ctx, project_id='p1', **kw):
    values = {'host': HOST, 'node': 'node1', 'vm_state': 'active', 'task_state': None,
              'project_id': project_id, 'user_id': 'alice'}
    values.update(kw)
    return db.instance_create(ctx, values)


def _refused(call, error, *args):
    """Run ``call``, which must raise ``error`` marked as a refusal; returns the exception."""
    with pytest.raises(error) as caught:
        call(*args)
    assert ms_context.is_refusal(caught.value), caught.value
    return caught.value


def _raise_site(exc):
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    return frame.filename, frame.lineno


# -- the context's rules -------------------------------------------------------------------------

def test_kinds_of_context():
    user = ms_context.RequestContext(user_id='u', project_id='p')
    anonymous = ms_context.RequestContext(project_id='p')
    admin = ms_context.get_admin_context()
    assert ms_context.is_user_context(user)
    assert not any(map(ms_context.is_user_context, (anonymous, admin, None)))
    ms_context.require_context(user)
    ms_context.require_context(admin)
    with pytest.raises(exception.Forbidden):
        ms_context.require_context(anonymous)
    for ctxt in (user, anonymous):
        with pytest.raises(exception.AdminRequired):
            ms_context.require_admin_context(ctxt)
    ms_context.require_admin_context(admin)
    ms_context.require_admin_context(user.elevated())


def test_authorize_project_and_user_context():
    user = ms_context.RequestContext(user_id='u', project_id='p')
    ms_context.authorize_project_context(user, 'p')
    ms_context.authorize_user_context(user, 'u')
    with pytest.raises(exception.Forbidden):
        ms_context.authorize_project_context(user, 'other')
    with pytest.raises(exception.Forbidden):
        ms_context.authorize_user_context(user, 'other')
    for ctxt in (user.elevated(), ms_context.RequestContext(user_id='u')):
        ms_context.authorize_project_context(ctxt, 'other')  # not a user's context: no check


def test_elevated_is_a_copy_and_read_deleted_is_checked():
    user = ms_context.RequestContext(user_id='u', project_id='p', roles=['member'])
    admin = user.elevated(read_deleted='yes')
    assert (admin.is_admin, admin.roles, admin.read_deleted) == (True, ['member', 'admin'],
                                                                 'yes')
    assert (user.is_admin, user.roles, user.read_deleted) == (False, ['member'], 'no')
    with pytest.raises(ValueError):
        user.read_deleted = 'maybe'
    with pytest.raises(exception.InvalidContext, match="read_deleted is 'maybe'"):
        ms_context.RequestContext.from_dict(dict(user.to_dict(), read_deleted='maybe'))


# -- instances ------------------------------------------------------------------------------------

def test_owner_and_admin_read_an_instance_another_project_gets_not_found(ctx, alice, mallory):
    instance = _instance(alice)
    assert db.instance_get_by_uuid(alice, instance['uuid']) == instance
    assert db.instance_get_by_uuid(ctx, instance['uuid']) == instance
    _refused(db.instance_get_by_uuid, exception.InstanceNotFound, mallory, instance['uuid'])


def test_a_missing_instance_is_not_a_refusal_and_fails_at_the_same_place(alice, mallory):
    instance = _instance(alice)
    hidden = _refused(db.instance_get_by_uuid, exception.InstanceNotFound, mallory,
                      instance['uuid'])
    with pytest.raises(exception.InstanceNotFound) as missing:
        db.instance_get_by_uuid(mallory, 'no-such-uuid')
    assert not ms_context.is_refusal(missing.value)
    # RPC sends the traceback to the caller: it must not tell "elsewhere" from "nowhere".
    assert _raise_site(hidden) == _raise_site(missing.value)


def test_another_project_can_neither_update_nor_destroy_an_instance(ctx, alice, mallory):
    instance = _instance(alice)
    _refused(db.instance_update_and_get_original, exception.InstanceNotFound, mallory,
             instance['uuid'], {'vm_state': 'error'})
    hidden = _refused(db.instance_update, exception.InstanceNotFound, mallory,
                      instance['uuid'], {'vm_state': 'error'}, 'active')
    with pytest.raises(exception.InstanceNotFound) as missing:
        db.instance_update(mallory, 'no-such-uuid', {'vm_state': 'error'}, 'active')
    assert _raise_site(hidden) == _raise_site(missing.value)
    _refused(db.instance_destroy, exception.InstanceNotFound, mallory, instance['uuid'])
    assert db.instance_get_by_uuid(ctx, instance['uuid']) == instance
    old, new = db.instance_update_and_get_original(alice, instance['uuid'],
                                                   {'vm_state': 'error'})
    assert (old['vm_state'], new['vm_state']) == ('active', 'error')
    assert db.instance_destroy(alice, instance['uuid'])['deleted'] == instance['id']


def test_instance_lists_keep_a_user_to_its_project(ctx, alice, mallory):
    mine = _instance(alice)
    theirs = _instance(ctx, project_id='p2', user_id='mallory')
    everyone = {mine['uuid'], theirs['uuid']}
    for ctxt, expected in ((alice, {mine['uuid']}), (mallory, {theirs['uuid']}),
                           (ctx, everyone)):
        assert {r['uuid'] for r in db.instance_get_all_by_host(ctxt, HOST)} == expected
        assert {r['uuid'] for r in db.instance_get_all_by_host_and_node(
            ctxt, HOST, 'node1')} == expected
        assert set(db.instance_get_uuids_by_host(ctxt, HOST)) == expected
        assert {r['uuid'] for r in db.instance_get_all_by_filters(ctxt, {})} == expected
        # Filters cannot widen the scope.
        assert {r['uuid'] for r in db.instance_get_all_by_filters(
            ctxt, {'project_id': ['p1', 'p2'], 'changes-since': mine['created_at']})} == \
            expected
    with pytest.raises(exception.MarkerNotFound):
        db.instance_get_all_by_filters(mallory, {}, marker=mine['uuid'])


def test_a_user_creates_instances_of_its_own_project_only(ctx, alice):
    with pytest.raises(exception.Forbidden):
        _instance(alice, project_id='p2')
    with pytest.raises(exception.Forbidden):
        _instance(alice, project_id=None)
    assert db.instance_get_all_by_filters(ctx, {}) == []
    assert _instance(alice)['project_id'] == 'p1'


def test_an_anonymous_context_reaches_no_instance(ctx):
    instance = _instance(ctx)
    anonymous = ms_context.RequestContext(project_id='p1')  # no user
    for call, args in ((db.instance_get_by_uuid, (instance['uuid'],)),
                       (db.instance_get_all_by_host, (HOST,)),
                       (db.instance_get_all_by_filters, ({},)),
                       (db.instance_destroy, (instance['uuid'],)),
                       (db.instance_create, ({'project_id': 'p1'},))):
        with pytest.raises(exception.Forbidden):
            call(anonymous, *args)


# -- instance faults and actions ------------------------------------------------------------------

def _fault(ctxt, instance_uuid):
    return db.instance_fault_create(ctxt, {'instance_uuid': instance_uuid, 'code': 500,
                                           'message': 'boom', 'host': HOST})


def test_faults_go_with_their_instance(ctx, alice, mallory):
    instance = _instance(alice)
    _fault(alice, instance['uuid'])
    _refused(_fault, exception.InstanceNotFound, mallory, instance['uuid'])
    assert db.instance_fault_get_by_instance_uuids(mallory, [instance['uuid']]) == {
        instance['uuid']: []}
    for ctxt in (alice, ctx):
        found = db.instance_fault_get_by_instance_uuids(ctxt, [instance['uuid']])
        assert [f['message'] for f in found[instance['uuid']]] == ['boom']


def _start(ctxt, instance_uuid, request_id='req-1'):
    return db.action_start(ctxt, {'instance_uuid': instance_uuid, 'request_id': request_id,
                                  'action': 'create', 'project_id': ctxt.project_id,
                                  'user_id': ctxt.user_id})


def _event(ctxt, instance_uuid, call, **values):
    return call(ctxt, dict({'instance_uuid': instance_uuid, 'request_id': 'req-1',
                            'event': 'schedule', 'host': HOST}, **values))


def test_actions_and_events_go_with_their_instance(ctx, alice, mallory):
    instance = _instance(alice)
    uuid = instance['uuid']
    action = _start(alice, uuid)
    _event(alice, uuid, db.action_event_start)
    for call, args in ((_start, (uuid, 'req-2')),
                       (_event, (uuid, db.action_event_start)),
                       (_event, (uuid, db.action_event_finish, ), ),
                       (db.action_finish, ({'instance_uuid': uuid, 'request_id': 'req-1',
                                            'message': 'forged'},))):
        _refused(call, exception.InstanceNotFound, mallory, *args)
    assert db.actions_get(mallory, uuid) == []
    assert db.action_get_by_request_id(mallory, uuid, 'req-1') is None
    assert db.action_events_get(mallory, action['id']) == []
    assert [a['id'] for a in db.actions_get(ctx, uuid)] == [action['id']]
    assert db.action_get_by_request_id(alice, uuid, 'req-1')['message'] is None
    # A deleted instance keeps its history, and its delete still records its events.
    db.instance_destroy(alice, uuid)
    finished = _event(alice, uuid, db.action_event_finish, result='Success')
    assert finished['result'] == 'Success'
    assert [e['id'] for e in db.action_events_get(alice, action['id'])] == [finished['id']]


# -- admin-only records ---------------------------------------------------------------------------

def test_services_and_compute_nodes_are_written_by_admins_only(ctx, alice):
    service = db.service_create(ctx, {'host': HOST, 'binary': db.COMPUTE_BINARY,
                                      'topic': 'compute'})
    node = db.compute_node_create(ctx, {'host': HOST, 'hypervisor_hostname': 'node1',
                                        'vcpus': 8, 'memory_mb': 4096, 'local_gb': 100,
                                        'vcpus_used': 0, 'memory_mb_used': 0,
                                        'local_gb_used': 0})
    writes = [(db.service_create, ({'host': 'h2', 'binary': 'b', 'topic': 't'},)),
              (db.service_update, (service['id'], {'disabled': True})),
              (db.service_destroy, (service['id'],)),
              (db.compute_node_create, ({'host': 'h2', 'hypervisor_hostname': 'n2'},)),
              (db.compute_node_update, (node['id'], {'vcpus': 1})),
              (db.compute_node_delete, (node['id'],))]
    for call, args in writes:
        with pytest.raises(exception.AdminRequired):
            call(alice, *args)
    # Nothing changed, and reading them is not refused (as in Nova).
    assert db.service_get_all(alice) == [service]
    assert db.compute_node_get_all(alice) == [node]
    assert db.service_update(ctx.elevated(), service['id'], {'disabled': True})['disabled']


def test_mappings_aggregates_and_flavors_are_written_by_admins_only(ctx, alice):
    cell = api_db.cell_mapping_create(ctx, {'name': 'cell1', 'transport_url': 'rabbit://',
                                            'database_connection': 'sqlite://'})
    api_db.host_mapping_create(ctx, HOST, cell['id'])
    agg = api_db.aggregate_create(ctx, {'name': 'agg1'})
    flavor = api_db.flavor_create(ctx, {'flavorid': '1', 'name': 'tiny', 'memory_mb': 64,
                                        'vcpus': 1, 'root_gb': 1, 'ephemeral_gb': 0})
    writes = [(api_db.cell_mapping_create, ({'name': 'x'},)),
              (api_db.cell_mapping_update, (cell['uuid'], {'disabled': True})),
              (api_db.cell_mapping_destroy, (cell['uuid'],)),
              (api_db.host_mapping_create, ('h2', cell['id'])),
              (api_db.host_mapping_destroy, (HOST,)),
              (api_db.aggregate_create, ({'name': 'agg2'},)),
              (api_db.aggregate_update, (agg['id'], {'name': 'renamed'})),
              (api_db.aggregate_metadata_update, (agg['id'], {'availability_zone': 'az'})),
              (api_db.aggregate_host_add, (agg['id'], HOST)),
              (api_db.aggregate_host_delete, (agg['id'], HOST)),
              (api_db.aggregate_destroy, (agg['id'],)),
              (api_db.flavor_create, ({'flavorid': '2', 'name': 'x', 'memory_mb': 1,
                                       'vcpus': 1},)),
              (api_db.flavor_extra_specs_update, (flavor['id'], {'k': 'v'})),
              (api_db.flavor_destroy, ('1',))]
    for call, args in writes:
        with pytest.raises(exception.AdminRequired):
            call(alice, *args)
    assert api_db.aggregate_get_all(alice) == [agg]
    assert api_db.flavor_get_all(alice) == [flavor]


def test_cell_and_host_mappings_are_read_by_admins_only(ctx, alice):
    """They carry the cells' database and transport URLs, passwords included."""
    cell = api_db.cell_mapping_create(ctx, {'name': 'cell1',
                                            'transport_url': 'rabbit://u:secret@h//',
                                            'database_connection': 'mysql://u:secret@h/db'})
    api_db.host_mapping_create(ctx, HOST, cell['id'])
    anonymous = ms_context.RequestContext()
    reads = [(api_db.cell_mapping_get_all, ()),
             (api_db.cell_mapping_get_by_uuid, (cell['uuid'],)),
             (api_db.host_mapping_get_all, ()),
             (api_db.host_mapping_get_all, (cell['id'],)),
             (api_db.host_mapping_get_by_host, (HOST,))]
    for call, args in reads:
        for ctxt in (alice, anonymous):
            with pytest.raises(exception.AdminRequired):
                call(ctxt, *args)
    assert api_db.cell_mapping_get_all(ctx) == [cell]
    assert api_db.cell_mapping_get_all(alice.elevated()) == [cell]
    assert api_db.host_mapping_get_by_host(ctx, HOST)['cell_mapping'] == cell


def test_in_process_callers_without_a_request_are_not_checked(db):
    cell = api_db.cell_mapping_create(None, {'name': 'cell1'})
    assert api_db.host_mapping_create(None, HOST, cell['id'])['host'] == HOST


# -- instance mappings, build requests, request specs ---------------------------------------------

def test_instance_mappings_belong_to_their_project(ctx, alice, mallory):
    cell = api_db.cell_mapping_create(ctx, {'name': 'cell1'})
    mapping = api_db.instance_mapping_create(alice, {'instance_uuid': 'i1', 'project_id': 'p1',
                                                     'user_id': 'alice'})
    assert api_db.instance_mapping_get_by_instance_uuid(alice, 'i1') == mapping
    error = exception.InstanceMappingNotFound
    _refused(api_db.instance_mapping_get_by_instance_uuid, error, mallory, 'i1')
    _refused(api_db.instance_mapping_update, error, mallory, 'i1', {'queued_for_delete': True})
    _refused(api_db.instance_mapping_claim_cell, error, mallory, 'i1', cell['id'])
    _refused(api_db.instance_mapping_destroy, error, mallory, 'i1')
    with pytest.raises(exception.Forbidden):
        api_db.instance_mapping_create(mallory, {'instance_uuid': 'i2', 'project_id': 'p1'})
    with pytest.raises(exception.Forbidden):
        api_db.instance_mapping_update(alice, 'i1', {'project_id': 'p2'})
    assert api_db.instance_mapping_get_by_instance_uuid(ctx, 'i1') == mapping
    # Another project's mapping is taken as absent: the take changes nothing there.
    assert api_db.build_request_take(mallory, 'i1', cell['id']) == api_db.GONE
    assert api_db.instance_mapping_get_by_instance_uuid(ctx, 'i1')['cell_id'] is None
    assert api_db.build_request_take(alice, 'i1', cell['id']) == api_db.GONE
    assert api_db.instance_mapping_get_all_by_cell(mallory, cell['id']) == []
    assert [m['instance_uuid'] for m in api_db.instance_mapping_get_all_by_cell(
        alice, cell['id'])] == ['i1']
    api_db.instance_mapping_destroy(alice, 'i1')


def test_build_requests_belong_to_their_project(ctx, alice, mallory):
    request = api_db.build_request_create(alice, {'instance_uuid': 'i1', 'project_id': 'p1',
                                                  'instance': '{}'})
    assert api_db.build_request_get_by_instance_uuid(alice, 'i1') == request
    assert api_db.build_request_exists(alice, 'i1')
    assert not api_db.build_request_exists(mallory, 'i1')  # as if it were not there
    _refused(api_db.build_request_get_by_instance_uuid, exception.BuildRequestNotFound,
             mallory, 'i1')
    _refused(api_db.build_request_destroy, exception.BuildRequestNotFound, mallory, 'i1')
    assert api_db.build_request_take(mallory, 'i1', None) == api_db.GONE
    assert api_db.build_request_get_by_instance_uuid(alice, 'i1') == request
    with pytest.raises(exception.Forbidden):
        api_db.build_request_create(mallory, {'instance_uuid': 'i2', 'project_id': 'p1'})
    assert api_db.build_request_get_all(mallory) == []
    assert api_db.build_request_get_all(alice) == [request]
    assert api_db.build_request_get_all(ctx) == [request]
    api_db.build_request_destroy(alice, 'i1')


def test_request_specs_follow_the_instance_mapping(ctx, alice, mallory):
    api_db.request_spec_create(alice, 'i1', '{}')
    # Before the mapping exists (the API writes the spec first), it is not hidden.
    assert api_db.request_spec_get_by_instance_uuid(mallory, 'i1')['spec'] == '{}'
    api_db.instance_mapping_create(alice, {'instance_uuid': 'i1', 'project_id': 'p1'})
    error = exception.RequestSpecNotFound
    _refused(api_db.request_spec_get_by_instance_uuid, error, mallory, 'i1')
    _refused(api_db.request_spec_update, error, mallory, 'i1', '{"forged": 1}')
    _refused(api_db.request_spec_destroy, error, mallory, 'i1')
    assert api_db.request_spec_get_by_instance_uuid(ctx, 'i1')['spec'] == '{}'
    assert api_db.request_spec_update(alice, 'i1', '{"n": 1}')['spec'] == '{"n": 1}'
    # Several at once: only those the caller may see.
    assert [s['instance_uuid'] for s in
            api_db.request_spec_get_by_instance_uuids(mallory, ['i1', 'i2'])] == []
    assert [s['instance_uuid'] for s in
            api_db.request_spec_get_by_instance_uuids(alice, ['i1', 'i2'])] == ['i1']
    api_db.request_spec_destroy(alice, 'i1')


# -- instance groups ----------------------------------------------------------------------------

def _group(ctxt, project_id='p1', members=('i1',)):
    return api_db.instance_group_create(ctxt, {'name': 'g', 'policy': 'affinity',
                                               'project_id': project_id, 'user_id': 'alice'},
                                        list(members))


def test_instance_groups_belong_to_their_project(ctx, alice, mallory):
    """Nova's ``_instance_group_get_query``: a non-admin context sees its project's only."""
    own = _group(alice)
    other = _group(ctx, project_id='p2', members=('i2',))
    assert [g['uuid'] for g in api_db.instance_group_get_all(alice)] == [own['uuid']]
    assert api_db.instance_group_get_all(alice, project_id='p2') == []
    assert {g['uuid'] for g in api_db.instance_group_get_all(ctx)} == {own['uuid'],
                                                                       other['uuid']}
    for call, args in [(api_db.instance_group_get, (own['uuid'],)),
                       (api_db.instance_group_members_add, (own['uuid'], ['i3'])),
                       (api_db.instance_group_update, (own['uuid'], {'name': 'mine'})),
                       (api_db.instance_group_destroy, (own['uuid'],))]:
        _refused(call, exception.InstanceGroupNotFound, mallory, *args)
    _refused(api_db.instance_group_get_by_instance, exception.InstanceGroupNotFound,
             mallory, 'i1')
    with pytest.raises(exception.Forbidden):
        _group(mallory, project_id='p1')
    with pytest.raises(exception.Forbidden):
        api_db.instance_group_update(alice, own['uuid'], {'project_id': 'p2'})
    # Nothing changed: the group is still alice's, whole.
    assert api_db.instance_group_get(alice, own['uuid'])['members'] == ['i1']
    assert api_db.instance_group_get(ctx, own['uuid'])['name'] == 'g'
    assert api_db.instance_group_members_add(alice, own['uuid'], ['i3'])['members'] == [
        'i1', 'i3']
    api_db.instance_group_destroy(alice, own['uuid'])
    assert [g['uuid'] for g in api_db.instance_group_get_all(ctx)] == [other['uuid']]


def test_instance_groups_refuse_anonymous_contexts(ctx):
    group = _group(ctx)
    anonymous = ms_context.RequestContext()
    for call, args in [(api_db.instance_group_get_all, ()),
                       (api_db.instance_group_get, (group['uuid'],)),
                       (api_db.instance_group_get_by_instance, ('i1',)),
                       (api_db.instance_group_members_add, (group['uuid'], ['i3'])),
                       (api_db.instance_group_update, (group['uuid'], {'name': 'x'})),
                       (api_db.instance_group_destroy, (group['uuid'],))]:
        with pytest.raises(exception.Forbidden):
            call(anonymous, *args)
    with pytest.raises(exception.Forbidden):
        _group(anonymous)
    assert api_db.instance_group_get(ctx, group['uuid'])['members'] == ['i1']


def test_services_are_read_by_admins_and_users_not_anonymous_contexts(ctx, alice):
    service = db.service_create(ctx, {'host': HOST, 'binary': 'minisched-compute',
                                      'topic': 'compute', 'report_count': 0})
    anonymous = ms_context.RequestContext()
    reads = [(db.service_get, (service['id'],)),
             (db.service_get_by_uuid, (service['uuid'],)),
             (db.service_get_by_host_and_binary, (HOST, 'minisched-compute')),
             (db.service_get_by_host_and_topic, (HOST, 'compute')),
             (db.service_get_all, ()),
             (db.service_get_all_by_topic, ('compute',)),
             (db.service_get_all_by_binary, ('minisched-compute',)),
             (db.service_get_all_by_host, (HOST,)),
             (db.service_get_by_compute_host, (HOST,)),
             (db.service_get_minimum_version, (['minisched-compute'],))]
    for call, args in reads:
        with pytest.raises(exception.Forbidden):
            call(anonymous, *args)
        call(ctx, *args)
        call(alice, *args)
