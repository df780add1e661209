"""Forged contexts on the bus: the conductor runs object calls as whoever the message says,
and the database API's checks stop a non-admin context at its own project's rows.

A client on the conductor topic (as a compute would be) sends ``object_class_action_versions``
and ``object_action`` with a user context of another project: its reads find nothing, its
writes are refused (InstanceNotFound for another project's instance, Forbidden for a service
record), nothing changes in the database, the conductor logs each refusal at WARNING without
the token, and then serves the instance's owner and an admin as before. And the services,
which act as admin for their own records, still build and delete a non-admin user's instance
with the user's context.
"""
import uuid

import pytest

from minisched import context as ms_context
from minisched import exception
from minisched import objects
from minisched.objects import base as objects_base
from tests.functional import build_helpers
from tests.functional import resilience

pytestmark = [pytest.mark.functional, pytest.mark.both_backends, pytest.mark.timeout(120)]

objects.register_all()

HOST = 'c1'
TOKEN = 'tok-%s' % uuid.uuid4().hex


def _class_call(client, ctxt, objname, objmethod, *args, **kwargs):
    return client.call(ctxt, 'object_class_action_versions', objname=objname,
                       objmethod=objmethod,
                       object_versions=objects_base.obj_tree_get_versions(objname),
                       args=list(args), kwargs=kwargs)


def _object_call(client, ctxt, objinst, objmethod, **kwargs):
    updates, result = client.call(ctxt, 'object_action', objinst=objinst,
                                  objmethod=objmethod, args=[], kwargs=kwargs)
    return updates, result


def _new_instance(owner):
    return objects.Instance(uuid=str(uuid.uuid4()), host=HOST, node=HOST, vm_state='active',
                            task_state=None, project_id=owner.project_id,
                            user_id=owner.user_id, memory_mb=64, vcpus=1, root_gb=1,
                            ephemeral_gb=0)


def test_another_projects_context_is_refused_and_the_conductor_serves_on(cluster):
    cluster.start_conductor()
    owner = ms_context.RequestContext(user_id='alice', project_id='p1')
    intruder = ms_context.RequestContext(user_id='mallory', project_id='p2', auth_token=TOKEN)
    admin = ms_context.get_admin_context()
    raw = resilience.RawClients(cluster)
    try:
        client = raw.object_client('conductor', '3.0')
        # The owner makes its instance through the conductor: a call of its own project.
        instance = _new_instance(owner)
        _object_call(client, owner, instance, 'create')
        uuid_ = instance.uuid
        service, = _class_call(client, admin, 'ServiceList', 'get_all')
        assert service.binary == 'minisched-conductor' and not service.disabled

        # Reads: another project's instance does not exist for the intruder.
        with pytest.raises(exception.InstanceNotFound):
            _class_call(client, intruder, 'Instance', 'get_by_uuid', uuid_)
        assert list(_class_call(client, intruder, 'InstanceList', 'get_by_host', HOST)) == []
        assert list(_class_call(client, intruder, 'InstanceList', 'get_by_filters', {})) == []

        # Writes: an instance as the owner's client would send it, and a service record.
        forged = _class_call(client, admin, 'Instance', 'get_by_uuid', uuid_)
        forged.vm_state = 'error'
        with pytest.raises(exception.InstanceNotFound):
            _object_call(client, intruder, forged, 'save')
        with pytest.raises(exception.InstanceNotFound):
            _object_call(client, intruder, forged, 'destroy')
        service.disabled = True
        service.disabled_reason = 'forged'
        with pytest.raises(exception.Forbidden):
            _object_call(client, intruder, service, 'save')
        with pytest.raises(exception.Forbidden):
            _object_call(client, intruder, service, 'destroy')

        # Nothing changed.
        row, = cluster.query('SELECT vm_state, deleted FROM instances WHERE uuid = :u', u=uuid_)
        assert row == {'vm_state': 'active', 'deleted': 0}
        row, = cluster.query('SELECT disabled, disabled_reason, deleted FROM services')
        assert (bool(row['disabled']), row['disabled_reason'], row['deleted']) == (
            False, None, 0)

        # Every refusal was logged, with who asked and without the token or a traceback.
        resilience.wait_log(cluster, 'conductor', 'Refused', count=5)
        log = cluster.log('conductor')
        for what in ('Instance.get_by_uuid', 'Instance.save', 'Instance.destroy',
                     'Service.save', 'Service.destroy'):
            assert 'Refused %s to project p2, user mallory' % what in log, what
        assert 'WARNING' in log.split('Refused Service.save')[0].splitlines()[-1]
        assert TOKEN not in log and 'Traceback' not in log
        # One line each, the reason last (not followed by the exception again).
        assert 'user mallory: User does not have admin privileges\n' in log

        # The same conductor serves the owner's own calls and an admin's.
        mine = _class_call(client, owner, 'Instance', 'get_by_uuid', uuid_)
        mine.task_state = 'deleting'
        _object_call(client, owner, mine, 'save')
        assert [i.uuid for i in _class_call(client, owner, 'InstanceList', 'get_by_host',
                                            HOST)] == [uuid_]
        service.disabled_reason = 'maintenance'
        _object_call(client, admin, service, 'save')
        row, = cluster.query('SELECT disabled, disabled_reason FROM services')
        assert (bool(row['disabled']), row['disabled_reason']) == (True, 'maintenance')
        row, = cluster.query('SELECT task_state FROM instances WHERE uuid = :u', u=uuid_)
        assert row == {'task_state': 'deleting'}
    finally:
        raw.close()
    assert cluster.processes['conductor'].popen.poll() is None


def test_a_users_build_and_delete_run_with_its_own_context(request, cluster):
    build_helpers.start(cluster, {'c1': {}})
    client = build_helpers.Client(cluster)
    request.addfinalizer(client.close)
    flavor = client.flavor('tiny', vcpus=1, memory_mb=64, root_gb=1)  # as admin
    client.context = lambda: ms_context.RequestContext(user_id='alice', project_id='p1')
    uuid_, = client.boot(flavor)
    instance = client.wait_built([uuid_])[uuid_]
    assert (instance.vm_state, instance.host, instance.project_id) == ('active', 'c1', 'p1')
    assert [(e.event, e.result) for e in client.events(uuid_)] == [
        ('schedule', 'Success'), ('compute_build_and_run_instance', 'Success')]
    # Another user sees neither the instance nor its mapping.
    client.context = lambda: ms_context.RequestContext(user_id='mallory', project_id='p2')
    with pytest.raises(exception.InstanceMappingNotFound):
        client.api.get(client.context(), uuid_)
    assert client.api.get_all(client.context()) == []
    client.context = lambda: ms_context.RequestContext(user_id='alice', project_id='p1')
    client.delete(uuid_)
    client.wait_deleted([uuid_])
    assert 'Refused' not in cluster.log('conductor') + cluster.log('c1')


class _StringAdminContext(ms_context.RequestContext):
    """A context whose sender writes ``is_admin`` as a string, as a careless client would."""

    def to_dict(self):
        values = super().to_dict()
        values['is_admin'] = 'false'
        return values


def test_server_groups_cell_mappings_and_typed_contexts_over_the_bus(cluster):
    """A string ``is_admin`` is refused, not read as True; server groups are their project's;
    cell mappings (whose URLs hold passwords) are an admin's."""
    cluster.start_conductor()
    admin = ms_context.get_admin_context()
    owner = ms_context.RequestContext(user_id='alice', project_id='p1')
    intruder = ms_context.RequestContext(user_id='mallory', project_id='p2')
    anonymous = ms_context.RequestContext()
    raw = resilience.RawClients(cluster)
    try:
        client = raw.object_client('conductor', '3.0')
        with pytest.raises(exception.Invalid, match='is_admin is a str'):
            _class_call(client, _StringAdminContext(user_id='u', project_id='p'),
                        'CellMappingList', 'get_all')
        for ctxt in (anonymous, owner):
            with pytest.raises(exception.AdminRequired):
                _class_call(client, ctxt, 'CellMappingList', 'get_all')
        _class_call(client, admin, 'CellMappingList', 'get_all')  # an admin's: answered

        group = objects.InstanceGroup(name='g', policy='anti-affinity', project_id='p1',
                                      user_id='alice', members=['i1'])
        _object_call(client, owner, group, 'create')
        group_uuid = cluster.query('SELECT uuid FROM instance_groups')[0]['uuid']
        assert list(_class_call(client, intruder, 'InstanceGroupList', 'get_all')) == []
        for ctxt in (intruder, anonymous):
            with pytest.raises((exception.InstanceGroupNotFound, exception.Forbidden)):
                _class_call(client, ctxt, 'InstanceGroup', 'add_members', group_uuid, ['i9'])
            with pytest.raises((exception.InstanceGroupNotFound, exception.Forbidden)):
                _class_call(client, ctxt, 'InstanceGroup', 'get_by_uuid', group_uuid)
        with pytest.raises(exception.Forbidden):
            _class_call(client, anonymous, 'InstanceGroupList', 'get_all')
        forged = _class_call(client, admin, 'InstanceGroup', 'get_by_uuid', group_uuid)
        with pytest.raises(exception.InstanceGroupNotFound):
            _object_call(client, intruder, forged, 'destroy')
        rows = cluster.query('SELECT g.uuid, m.instance_uuid FROM instance_groups g '
                             'JOIN instance_group_member m ON m.group_id = g.id')
        assert rows == [{'uuid': group_uuid, 'instance_uuid': 'i1'}]
        mine, = _class_call(client, owner, 'InstanceGroupList', 'get_all')
        assert mine.uuid == group_uuid and mine.members == ['i1']
        resilience.wait_log(cluster, 'conductor', 'is_admin is a str')
    finally:
        raw.close()
    assert cluster.processes['conductor'].popen.poll() is None
