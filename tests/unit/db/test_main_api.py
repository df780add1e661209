"""Cell database API on SQLite: services, compute nodes, instances, faults, actions."""
import datetime

import pytest

from minisched import context as ms_context
from minisched import exception
from minisched.db import utils
from minisched.db.main import api as db

COMPUTE = db.COMPUTE_BINARY


def _service(ctx, **kw):
    values = {'host': 'host1', 'binary': COMPUTE, 'topic': 'compute'}
    values.update(kw)
    return db.service_create(ctx, values)


def _node(ctx, **kw):
    values = {'host': 'host1', 'hypervisor_hostname': 'node1', 'vcpus': 8, 'memory_mb': 4096,
              'local_gb': 100, 'vcpus_used': 0, 'memory_mb_used': 0, 'local_gb_used': 0}
    values.update(kw)
    return db.compute_node_create(ctx, values)


def _instance(ctx, **kw):
    values = {'host': 'host1', 'node': 'node1', 'vm_state': 'building', 'task_state': None}
    values.update(kw)
    return db.instance_create(ctx, values)


def _reading(read_deleted):
    return ms_context.get_admin_context(read_deleted=read_deleted)


# -- services -------------------------------------------------------------------------------------

def test_service_create_fills_defaults(ctx):
    service = _service(ctx)
    assert isinstance(service, dict)
    assert service['uuid'] and service['id']
    assert (service['report_count'], service['disabled'], service['forced_down'],
            service['version'], service['deleted']) == (0, False, False, 0, 0)
    assert isinstance(service['created_at'], datetime.datetime)
    assert service['created_at'].tzinfo is None
    assert service['updated_at'] is None and service['last_seen_up'] is None


def test_service_duplicate_binary_and_topic(ctx):
    _service(ctx)
    with pytest.raises(exception.ServiceBinaryExists):
        _service(ctx, topic='other')
    with pytest.raises(exception.ServiceTopicExists):
        _service(ctx, binary='minisched-other')


def test_service_gets(ctx):
    service = _service(ctx)
    assert db.service_get(ctx, service['id']) == service
    assert db.service_get_by_uuid(ctx, service['uuid']) == service
    assert db.service_get_by_host_and_binary(ctx, 'host1', COMPUTE) == service
    assert db.service_get_by_host_and_topic(ctx, 'host1', 'compute') == service
    assert db.service_get_by_compute_host(ctx, 'host1') == service
    with pytest.raises(exception.ServiceNotFound):
        db.service_get(ctx, 999)
    with pytest.raises(exception.ServiceNotFound):
        db.service_get_by_uuid(ctx, 'nope')
    with pytest.raises(exception.HostBinaryNotFound):
        db.service_get_by_host_and_binary(ctx, 'host1', 'minisched-scheduler')
    with pytest.raises(exception.ComputeHostNotFound):
        db.service_get_by_compute_host(ctx, 'host2')


def test_service_get_by_host_and_topic_skips_disabled(ctx):
    _service(ctx, disabled=True)
    with pytest.raises(exception.ServiceNotFound):
        db.service_get_by_host_and_topic(ctx, 'host1', 'compute')


def test_service_get_by_compute_host_ignores_other_binaries(ctx):
    _service(ctx, binary='minisched-scheduler', topic='scheduler')
    with pytest.raises(exception.ComputeHostNotFound):
        db.service_get_by_compute_host(ctx, 'host1')


def test_service_lists(ctx):
    enabled = _service(ctx)
    disabled = _service(ctx, host='host2', disabled=True)
    sched = _service(ctx, binary='minisched-scheduler', topic='scheduler')
    ids = lambda rows: [row['id'] for row in rows]  # noqa: E731
    assert ids(db.service_get_all(ctx)) == [enabled['id'], disabled['id'], sched['id']]
    assert ids(db.service_get_all(ctx, disabled=True)) == [disabled['id']]
    assert ids(db.service_get_all(ctx, disabled=False)) == [enabled['id'], sched['id']]
    assert ids(db.service_get_all_by_topic(ctx, 'compute')) == [enabled['id']]
    assert ids(db.service_get_all_by_binary(ctx, COMPUTE)) == [enabled['id']]
    assert ids(db.service_get_all_by_binary(ctx, COMPUTE, include_disabled=True)) == [
        enabled['id'], disabled['id']]
    assert ids(db.service_get_all_by_host(ctx, 'host1')) == [enabled['id'], sched['id']]


def test_service_update_growing_report_count_sets_last_seen_up(ctx):
    service = _service(ctx)
    updated = db.service_update(ctx, service['id'], {'report_count': 1})
    assert updated['report_count'] == 1
    assert updated['last_seen_up'] is not None
    assert updated['updated_at'] is not None


def test_service_update_same_report_count_keeps_last_seen_up(ctx):
    service = _service(ctx)
    first = db.service_update(ctx, service['id'], {'report_count': 3})
    again = db.service_update(ctx, service['id'], {'report_count': 3})
    assert again['last_seen_up'] == first['last_seen_up']
    assert again['updated_at'] > first['updated_at']
    lower = db.service_update(ctx, service['id'], {'report_count': 2})
    assert lower['last_seen_up'] == first['last_seen_up']


def test_service_update_without_report_count(ctx):
    service = _service(ctx)
    updated = db.service_update(ctx, service['id'], {'disabled': True,
                                                     'disabled_reason': 'maintenance'})
    assert updated['disabled'] is True and updated['disabled_reason'] == 'maintenance'
    assert updated['last_seen_up'] is None
    assert updated['updated_at'] is not None
    with pytest.raises(exception.ServiceNotFound):
        db.service_update(ctx, 999, {'disabled': True})


def test_service_update_to_duplicate(ctx):
    _service(ctx)
    other = _service(ctx, host='host2', topic='other')
    with pytest.raises(exception.ServiceBinaryExists):
        db.service_update(ctx, other['id'], {'host': 'host1'})


def test_service_destroy_soft_deletes_with_deleted_equal_id(ctx):
    service = _service(ctx)
    db.service_destroy(ctx, service['id'])
    with pytest.raises(exception.ServiceNotFound):
        db.service_get(ctx, service['id'])
    gone = db.service_get(_reading('yes'), service['id'])
    assert gone['deleted'] == service['id'] and gone['deleted_at'] is not None
    assert [row['id'] for row in db.service_get_all(_reading('only'))] == [service['id']]
    recreated = _service(ctx)  # the unique key includes ``deleted``
    assert recreated['id'] != service['id']
    assert len(db.service_get_all(_reading('yes'))) == 2
    with pytest.raises(exception.ServiceNotFound):
        db.service_destroy(ctx, service['id'])


def test_service_destroy_soft_deletes_its_compute_nodes(ctx):
    service = _service(ctx)
    by_id = _node(ctx, service_id=service['id'], host='elsewhere')
    by_host = _node(ctx, hypervisor_hostname='node2')
    other = _node(ctx, host='host2')
    db.service_destroy(ctx, service['id'])
    assert [row['id'] for row in db.compute_node_get_all(ctx)] == [other['id']]
    deleted = db.compute_node_get_all(_reading('only'))
    assert sorted((row['id'], row['deleted']) for row in deleted) == [
        (by_id['id'], by_id['id']), (by_host['id'], by_host['id'])]


def test_non_compute_service_destroy_keeps_host_nodes(ctx):
    sched = _service(ctx, binary='minisched-scheduler', topic='scheduler')
    node = _node(ctx)
    db.service_destroy(ctx, sched['id'])
    assert db.compute_node_get(ctx, node['id'])['deleted'] == 0


def test_service_get_minimum_version(ctx):
    _service(ctx, version=5)
    _service(ctx, host='host2', version=3)
    _service(ctx, host='host3', version=1, forced_down=True)
    gone = _service(ctx, host='host4', version=0)
    db.service_destroy(ctx, gone['id'])
    _service(ctx, binary='minisched-scheduler', topic='scheduler', version=7)
    assert db.service_get_minimum_version(ctx, [COMPUTE, 'minisched-scheduler', 'x']) == {
        COMPUTE: 3, 'minisched-scheduler': 7}


def test_read_deleted_invalid(ctx):
    with pytest.raises(ValueError):
        db.service_get_all(_reading('maybe'))


# -- compute nodes --------------------------------------------------------------------------------

def test_compute_node_create_and_gets(ctx):
    node = _node(ctx, cpu_info='{"arch": "x86_64"}', ram_allocation_ratio=1.5)
    assert node['uuid'] and node['mapped'] == 0 and node['deleted'] == 0
    assert node['cpu_info'] == '{"arch": "x86_64"}' and node['ram_allocation_ratio'] == 1.5
    assert db.compute_node_get(ctx, node['id']) == node
    assert db.compute_node_get_by_uuid(ctx, node['uuid']) == node
    assert db.compute_node_get_by_host_and_nodename(ctx, 'host1', 'node1') == node
    with pytest.raises(exception.ComputeNodeNotFound):
        db.compute_node_get(ctx, 999)
    with pytest.raises(exception.ComputeNodeNotFound):
        db.compute_node_get_by_uuid(ctx, 'nope')
    with pytest.raises(exception.ComputeHostNotFound):
        db.compute_node_get_by_host_and_nodename(ctx, 'host1', 'node9')


def test_compute_node_duplicate_then_recreate_after_delete(ctx):
    node = _node(ctx)
    with pytest.raises(exception.ComputeNodeExists):
        _node(ctx)
    db.compute_node_delete(ctx, node['id'])
    assert _node(ctx, uuid=node['uuid'])['id'] != node['id']


def test_compute_node_lists(ctx):
    one = _node(ctx, service_id=7, mapped=1)
    two = _node(ctx, hypervisor_hostname='node2', service_id=7)
    three = _node(ctx, host='host2')
    ids = lambda rows: [row['id'] for row in rows]  # noqa: E731
    assert ids(db.compute_node_get_all(ctx)) == [one['id'], two['id'], three['id']]
    assert ids(db.compute_node_get_all_by_host(ctx, 'host1')) == [one['id'], two['id']]
    with pytest.raises(exception.ComputeHostNotFound):
        db.compute_node_get_all_by_host(ctx, 'host9')
    assert ids(db.compute_node_get_all_by_uuids(ctx, [one['uuid'], three['uuid']])) == [
        one['id'], three['id']]
    assert db.compute_node_get_all_by_uuids(ctx, []) == []
    assert ids(db.compute_nodes_get_by_service_id(ctx, 7)) == [one['id'], two['id']]
    with pytest.raises(exception.ServiceNotFound):
        db.compute_nodes_get_by_service_id(ctx, 8)
    assert ids(db.compute_node_get_all_by_not_mapped(ctx, 1)) == [two['id'], three['id']]


def test_compute_node_update_and_delete(ctx):
    node = _node(ctx)
    updated = db.compute_node_update(ctx, node['id'], {'vcpus_used': 2, 'stats': '{}'})
    assert updated['vcpus_used'] == 2 and updated['stats'] == '{}'
    assert updated['updated_at'] is not None
    with pytest.raises(exception.ComputeNodeNotFound):
        db.compute_node_update(ctx, 999, {'vcpus_used': 2})
    assert db.compute_node_delete(ctx, node['id']) is None
    assert db.compute_node_get(_reading('yes'), node['id'])['deleted'] == node['id']
    with pytest.raises(exception.ComputeNodeNotFound):
        db.compute_node_delete(ctx, node['id'])
    with pytest.raises(exception.ComputeNodeNotFound):
        db.compute_node_update(ctx, node['id'], {'vcpus_used': 3})


def test_compute_node_get_all_changed_since_includes_deleted(ctx):
    old = _node(ctx, hypervisor_hostname='old')
    stale = _node(ctx, hypervisor_hostname='stale')
    since = utils.now()
    new = _node(ctx, hypervisor_hostname='new')
    db.compute_node_update(ctx, old['id'], {'vcpus_used': 1})
    db.compute_node_delete(ctx, stale['id'])
    changed = db.compute_node_get_all_changed_since(ctx, since)
    assert sorted(row['id'] for row in changed) == sorted([old['id'], stale['id'], new['id']])
    assert {row['id']: row['deleted'] for row in changed}[stale['id']] == stale['id']
    assert db.compute_node_get_all_changed_since(ctx, utils.now()) == []


def test_compute_hosts_reads_for_the_scheduler(ctx):
    """The full and the incremental read: every compute service (disabled too) and node, as
    read-only rows whose repeating strings are shared."""
    one = _service(ctx)
    two = _service(ctx, host='host2', disabled=True)
    scheduler = _service(ctx, binary='minisched-scheduler', topic='scheduler')
    gone = _service(ctx, host='host3')
    db.service_destroy(ctx, gone['id'])
    node = _node(ctx)
    since = utils.now()
    newer = _node(ctx, host='host2', hypervisor_hostname='node2')
    services, nodes = db.compute_hosts_get_all(ctx, COMPUTE)
    assert [row['id'] for row in services] == [one['id'], two['id']]
    assert [row['id'] for row in nodes] == [node['id'], newer['id']]
    assert {type(row) for row in services + nodes} == {utils.FrozenRow}
    assert dict(nodes[0]) == db.compute_node_get(ctx, node['id'])
    assert services[0]['host'] is nodes[0]['host']
    services, nodes = db.compute_hosts_get_all(_reading('yes'), COMPUTE)
    assert gone['id'] in [row['id'] for row in services]
    # With unheld: every live row listed by version and key; only the ids returned are read.
    listed = {}

    def unheld(table_name, versions):
        listed[table_name] = [tuple(version) for version in versions]
        held = node['id'] if table_name == 'compute_nodes' else None
        return [version[0] for version in versions if version[0] != held]
    services, nodes = db.compute_hosts_get_all(ctx, COMPUTE, unheld=unheld)
    assert sorted(listed['services']) == [
        (row['id'], row['updated_at'], row['created_at'], row['host'])
        for row in (db.service_get(ctx, one['id']), db.service_get(ctx, two['id']))]
    assert sorted(listed['compute_nodes']) == [
        (row['id'], row['updated_at'], row['created_at'], row['host'],
         row['hypervisor_hostname']) for row in (node, newer)]
    assert [row['id'] for row in services] == [one['id'], two['id']]
    assert [row['id'] for row in nodes] == [newer['id']]
    assert {type(row) for row in services + nodes} == {utils.FrozenRow}
    services, nodes = db.compute_changes_since(ctx, COMPUTE, since)
    assert [row['id'] for row in nodes] == [newer['id']] and services == []
    assert type(nodes[0]) is utils.FrozenRow

    # With unheld: the changed rows are listed by version; only the ids it returns are read.
    asked = []

    def unheld(table_name, versions):
        asked.append((table_name, [tuple(version) for version in versions]))
        return [version[0] for version in versions]
    assert db.compute_changes_since(ctx, COMPUTE, since, unheld=unheld) == (services, nodes)
    assert asked == [('services', []), ('compute_nodes', [
        (newer['id'], newer['updated_at'], newer['created_at'])])]
    assert db.compute_changes_since(ctx, COMPUTE, since,
                                    unheld=lambda name, versions: []) == ([], [])
    # Both tables listed in one statement, each row under its own table (and binary).
    later = db.service_update(ctx, two['id'], {'disabled_reason': 'maintenance'})
    db.service_update(ctx, scheduler['id'], {'disabled_reason': 'maintenance'})
    del asked[:]
    services, nodes = db.compute_changes_since(ctx, COMPUTE, since, unheld=unheld)
    assert asked == [('services', [(two['id'], later['updated_at'], later['created_at'])]),
                     ('compute_nodes', [(newer['id'], newer['updated_at'],
                                         newer['created_at'])])]
    assert [dict(row) for row in services] == [later]
    assert [row['id'] for row in nodes] == [newer['id']]


# -- instances ------------------------------------------------------------------------------------

def test_instance_create_get_and_duplicate(ctx):
    inst = _instance(ctx, flavor='{"name": "m1"}', instance_metadata='{}', locked=False)
    assert inst['uuid'] and inst['deleted'] == 0 and inst['cleaned'] == 0
    assert inst['flavor'] == '{"name": "m1"}'
    assert db.instance_get_by_uuid(ctx, inst['uuid']) == inst
    with pytest.raises(exception.InstanceExists):
        _instance(ctx, uuid=inst['uuid'])
    with pytest.raises(exception.InstanceNotFound):
        db.instance_get_by_uuid(ctx, 'nope')


def test_instance_update_returns_old_and_new(ctx):
    inst = _instance(ctx)
    old, new = db.instance_update_and_get_original(ctx, inst['uuid'],
                                                   {'task_state': 'scheduling'})
    assert old == inst
    assert new['task_state'] == 'scheduling' and new['updated_at'] is not None
    with pytest.raises(exception.InstanceNotFound):
        db.instance_update_and_get_original(ctx, 'nope', {'task_state': 'x'})


def test_instance_update_returns_the_new_row_and_says_why_nothing_matched(ctx):
    inst = _instance(ctx, task_state='spawning')
    new = db.instance_update(ctx, inst['uuid'], {'vm_state': 'active', 'task_state': None},
                             expected_task_state='spawning')
    assert (new['vm_state'], new['task_state']) == ('active', None)
    assert db.instance_get_by_uuid(ctx, inst['uuid']) == new
    with pytest.raises(exception.UnexpectedTaskStateError):
        db.instance_update(ctx, inst['uuid'], {'task_state': 'x'}, expected_task_state='y')
    with pytest.raises(exception.UnexpectedVMStateError):
        db.instance_update(ctx, inst['uuid'], {'task_state': 'x'}, expected_vm_state='error')
    with pytest.raises(exception.InstanceNotFound):
        db.instance_update(ctx, 'nope', {'task_state': 'x'})
    assert db.instance_get_by_uuid(ctx, inst['uuid']) == new


@pytest.mark.parametrize('expected', ['scheduling', ['spawning', 'scheduling'],
                                      ('scheduling',)])
def test_instance_update_expected_task_state_matches(ctx, expected):
    inst = _instance(ctx, task_state='scheduling')
    _, new = db.instance_update_and_get_original(ctx, inst['uuid'], {'task_state': 'spawning'},
                                                 expected_task_state=expected)
    assert new['task_state'] == 'spawning'


def test_instance_update_expected_task_state_list_with_none(ctx):
    inst = _instance(ctx, task_state=None)
    _, new = db.instance_update_and_get_original(ctx, inst['uuid'], {'task_state': 'a'},
                                                 expected_task_state=[None, 'b'])
    assert new['task_state'] == 'a'
    with pytest.raises(exception.UnexpectedTaskStateError):
        db.instance_update_and_get_original(ctx, inst['uuid'], {'task_state': 'c'},
                                            expected_task_state=[None])


def test_instance_update_unexpected_task_state(ctx):
    inst = _instance(ctx, task_state='spawning')
    with pytest.raises(exception.UnexpectedTaskStateError) as caught:
        db.instance_update_and_get_original(ctx, inst['uuid'], {'task_state': None},
                                            expected_task_state=['scheduling'])
    assert not isinstance(caught.value, exception.UnexpectedDeletingTaskStateError)
    assert caught.value.kwargs['expected'] == ['scheduling']
    assert caught.value.kwargs['actual'] == 'spawning'
    assert db.instance_get_by_uuid(ctx, inst['uuid'])['task_state'] == 'spawning'


def test_instance_update_unexpected_deleting(ctx):
    inst = _instance(ctx, task_state=db.TASK_DELETING)
    with pytest.raises(exception.UnexpectedDeletingTaskStateError):
        db.instance_update_and_get_original(ctx, inst['uuid'], {'host': 'h2'},
                                            expected_task_state='scheduling')


def test_instance_update_unexpected_vm_state(ctx):
    inst = _instance(ctx, vm_state='active')
    with pytest.raises(exception.UnexpectedVMStateError):
        db.instance_update_and_get_original(ctx, inst['uuid'], {'host': 'h2'},
                                            expected_vm_state=['building'])
    _, new = db.instance_update_and_get_original(ctx, inst['uuid'], {'host': 'h2'},
                                                 expected_vm_state='active')
    assert new['host'] == 'h2'


def test_instance_update_expectations_inside_values(ctx):
    """Nova style: ``expected_task_state`` in values, where None means "must be None"."""
    inst = _instance(ctx, task_state='spawning')
    with pytest.raises(exception.UnexpectedTaskStateError):
        db.instance_update_and_get_original(
            ctx, inst['uuid'], {'task_state': None, 'expected_task_state': None})
    _, new = db.instance_update_and_get_original(
        ctx, inst['uuid'], {'task_state': None, 'expected_task_state': 'spawning'})
    assert new['task_state'] is None


def test_instance_update_check_is_in_the_update_statement(ctx, monkeypatch):
    """Even if the row read first looks right, the UPDATE itself re-checks the state."""
    inst = _instance(ctx, task_state='spawning')
    real_fetch = utils.fetch

    def stale_fetch(conn, table, *where, **kw):
        row = real_fetch(conn, table, *where, **kw)
        if kw.get('for_update'):
            row = dict(row, task_state='scheduling')  # what a racing reader might have seen
        return row

    with monkeypatch.context() as patch:
        patch.setattr(utils, 'fetch', stale_fetch)
        with pytest.raises(exception.UnexpectedTaskStateError):
            db.instance_update_and_get_original(ctx, inst['uuid'], {'task_state': 'x'},
                                                expected_task_state='scheduling')
    assert db.instance_get_by_uuid(ctx, inst['uuid'])['task_state'] == 'spawning'


def test_instance_host_queries(ctx):
    one = _instance(ctx)
    two = _instance(ctx, node='node2')
    _instance(ctx, host='host2')
    gone = _instance(ctx)
    db.instance_destroy(ctx, gone['uuid'])
    assert [row['id'] for row in db.instance_get_all_by_host(ctx, 'host1')] == [
        one['id'], two['id']]
    assert [row['id'] for row in db.instance_get_all_by_host_and_node(
        ctx, 'host1', 'node2')] == [two['id']]
    assert db.instance_get_uuids_by_host(ctx, 'host1') == [one['uuid'], two['uuid']]


def test_instance_destroy(ctx):
    inst = _instance(ctx)
    gone = db.instance_destroy(ctx, inst['uuid'])
    assert gone['deleted'] == inst['id'] and gone['deleted_at'] is not None
    with pytest.raises(exception.InstanceNotFound):
        db.instance_get_by_uuid(ctx, inst['uuid'])
    assert db.instance_get_by_uuid(_reading('yes'), inst['uuid'])['id'] == inst['id']
    with pytest.raises(exception.InstanceNotFound):
        db.instance_destroy(ctx, inst['uuid'])
    with pytest.raises(exception.InstanceNotFound):
        db.instance_update_and_get_original(ctx, inst['uuid'], {'host': 'x'})


def test_instance_filters(ctx):
    a = _instance(ctx, project_id='p1')
    b = _instance(ctx, project_id='p2', host='host2')
    c = _instance(ctx, project_id='p1', host=None)
    db.instance_destroy(ctx, c['uuid'])
    ids = lambda rows: sorted(row['id'] for row in rows)  # noqa: E731
    get = db.instance_get_all_by_filters
    assert ids(get(ctx, {})) == [a['id'], b['id']]
    assert ids(get(ctx, {'project_id': 'p1'})) == [a['id']]
    assert ids(get(ctx, {'host': ['host1', 'host2']})) == [a['id'], b['id']]
    assert ids(get(ctx, {'host': [None]})) == []
    assert ids(get(ctx, {'deleted': True})) == [c['id']]
    assert ids(get(_reading('yes'), {'deleted': False})) == [a['id'], b['id']]
    assert ids(get(_reading('yes'), {})) == [a['id'], b['id'], c['id']]
    with pytest.raises(exception.Invalid):
        get(ctx, {'no_such_column': 1})


def test_instance_filters_changes_since_includes_deleted(ctx):
    _instance(ctx)
    since = utils.now()
    b = _instance(ctx)
    c = _instance(ctx)
    db.instance_destroy(ctx, c['uuid'])
    rows = db.instance_get_all_by_filters(ctx, {'changes-since': since})
    assert sorted(row['id'] for row in rows) == [b['id'], c['id']]


@pytest.mark.parametrize('sort_key', ['created_at', 'host'])
@pytest.mark.parametrize('sort_dir', ['asc', 'desc'])
def test_instance_paging_with_marker(ctx, sort_key, sort_dir):
    hosts = ['h3', None, 'h1', 'h3', None, 'h2']
    for host in hosts:
        _instance(ctx, host=host)
    everything = db.instance_get_all_by_filters(ctx, {}, sort_key=sort_key, sort_dir=sort_dir)
    pages, marker = [], None
    while True:
        page = db.instance_get_all_by_filters(ctx, {}, sort_key=sort_key, sort_dir=sort_dir,
                                              limit=2, marker=marker)
        if not page:
            break
        pages.extend(page)
        marker = page[-1]['uuid']
    assert [row['id'] for row in pages] == [row['id'] for row in everything]
    assert len(everything) == len(hosts)
    if sort_key == 'host':
        assert [row['host'] for row in everything][-2:] == [None, None]


def test_instance_default_sort_newest_first(ctx):
    first, second = _instance(ctx), _instance(ctx)
    assert [row['id'] for row in db.instance_get_all_by_filters(ctx, {})] == [
        second['id'], first['id']]


def test_instance_paging_errors(ctx):
    with pytest.raises(exception.MarkerNotFound):
        db.instance_get_all_by_filters(ctx, {}, marker='nope')
    with pytest.raises(exception.Invalid):
        db.instance_get_all_by_filters(ctx, {}, sort_key='nope')
    with pytest.raises(exception.Invalid):
        db.instance_get_all_by_filters(ctx, {}, sort_dir='up')


# -- faults ---------------------------------------------------------------------------------------

def test_instance_faults_newest_first(ctx):
    first = db.instance_fault_create(ctx, {'instance_uuid': 'i1', 'code': 500, 'message': 'a',
                                           'details': 'tb', 'host': 'host1'})
    second = db.instance_fault_create(ctx, {'instance_uuid': 'i1', 'code': 400,
                                            'message': 'b'})
    other = db.instance_fault_create(ctx, {'instance_uuid': 'i2', 'code': 500, 'message': 'c'})
    found = db.instance_fault_get_by_instance_uuids(ctx, ['i1', 'i2', 'i3'])
    assert [f['id'] for f in found['i1']] == [second['id'], first['id']]
    assert found['i2'] == [other] and found['i3'] == []
    assert db.instance_fault_get_by_instance_uuids(ctx, []) == {}


# -- actions --------------------------------------------------------------------------------------

def _action_values(**kw):
    values = {'action': 'create', 'instance_uuid': 'i1', 'request_id': 'req-1',
              'user_id': 'u', 'project_id': 'p', 'start_time': utils.now()}
    values.update(kw)
    return values


def test_actions(ctx):
    first = db.action_start(ctx, _action_values())
    second = db.action_start(ctx, _action_values(action='stop', request_id='req-2'))
    assert db.action_get_by_request_id(ctx, 'i1', 'req-1') == first
    assert db.action_get_by_request_id(ctx, 'i1', 'req-9') is None
    assert [a['id'] for a in db.actions_get(ctx, 'i1')] == [second['id'], first['id']]
    finish = utils.now()
    done = db.action_finish(ctx, {'instance_uuid': 'i1', 'request_id': 'req-1',
                                  'finish_time': finish})
    assert done['id'] == first['id'] and done['finish_time'] == finish
    with pytest.raises(exception.InstanceActionNotFound):
        db.action_finish(ctx, {'instance_uuid': 'i1', 'request_id': 'req-9',
                               'finish_time': finish})


def test_action_events(ctx):
    action = db.action_start(ctx, _action_values())
    start = {'instance_uuid': 'i1', 'request_id': 'req-1', 'event': 'schedule',
             'start_time': utils.now(), 'host': 'conductor1'}
    event = db.action_event_start(ctx, start)
    assert event['action_id'] == action['id'] and event['host'] == 'conductor1'
    assert 'instance_uuid' not in event
    done = db.action_event_finish(ctx, {'instance_uuid': 'i1', 'request_id': 'req-1',
                                        'event': 'schedule', 'finish_time': utils.now(),
                                        'result': 'Error', 'traceback': 'Traceback...'})
    assert done['id'] == event['id'] and done['result'] == 'Error'
    assert done['traceback'] == 'Traceback...'
    assert db.action_get_by_request_id(ctx, 'i1', 'req-1')['message'] == 'Error'
    later = db.action_event_start(ctx, dict(start, event='build'))
    assert [e['id'] for e in db.action_events_get(ctx, action['id'])] == [
        later['id'], event['id']]
    with pytest.raises(exception.InstanceActionEventNotFound):
        db.action_event_finish(ctx, {'instance_uuid': 'i1', 'request_id': 'req-1',
                                     'event': 'nope', 'result': 'Success'})
    with pytest.raises(exception.InstanceActionNotFound):
        db.action_event_start(ctx, dict(start, request_id='req-9'))
