"""The remotable methods Nova's objects have, on minisched's data (SQLite databases)."""
import datetime

import sqlalchemy as sa
from oslo_utils import timeutils

from minisched import context
from minisched import exception
from minisched import objects
from minisched.db import engines
from minisched.objects import instance_action
from tests.unit import base, sqlite_databases

uuids = base.uuids


class _DatabaseCase(sqlite_databases.SqliteDatabases, base.TestCase):

    def setUp(self):
        super().setUp()
        self.use_databases()

    def _instance(self, uuid, **values):
        values.setdefault('project_id', 'p1')
        values.setdefault('user_id', 'u1')
        inst = objects.Instance(self.ctxt, uuid=uuid, **values)
        inst.create()
        return inst

    def _set(self, uuid, **values):
        with engines.main_engine(self.ctxt).begin() as conn:
            conn.execute(sa.update(sa.table('instances', sa.column('uuid'),
                                            *(sa.column(k) for k in values)))
                         .where(sa.column('uuid') == uuid).values(**values))


class TestInstance(_DatabaseCase):

    def test_get_by_id_and_fault_asked_for(self):
        inst = self._instance(uuids.a, host='h1')
        objects.InstanceFault(self.ctxt, instance_uuid=uuids.a, code=500,
                              message='first').create()
        objects.InstanceFault(self.ctxt, instance_uuid=uuids.a, code=500,
                              message='second').create()
        read = objects.Instance.get_by_id(self.ctxt, inst.id, expected_attrs=['fault'])
        self.assertEqual(uuids.a, read.uuid)
        self.assertEqual('second', read.fault.message)
        self.assertEqual(set(), read.obj_what_changed())

    def test_destroy_without_a_host_refuses_an_instance_a_compute_took(self):
        inst = self._instance(uuids.a)
        self._set(uuids.a, host='h1')
        with self.assertRaises(exception.ObjectActionError) as raised:
            inst.destroy()
        self.assertIn('host changed', str(raised.exception))
        inst.host = 'h1'
        inst.destroy()
        self.assertFalse(inst.obj_attr_is_set('id'))
        self.assertRaises(exception.InstanceNotFound, objects.Instance.get_by_uuid,
                          self.ctxt, uuids.a)

    def test_hard_delete_leaves_no_row(self):
        self._instance(uuids.a).destroy(hard_delete=True)
        self.assertEqual([], list(objects.InstanceList.get_by_filters(
            self.ctxt.elevated(read_deleted='yes'), {})))

    def test_delete_metadata_key_keeps_other_changes_unwritten(self):
        inst = self._instance(uuids.a, metadata={'a': '1', 'b': '2'})
        inst.display_name = 'unsaved'
        inst.delete_metadata_key('a')
        self.assertEqual({'b': '2'}, inst.metadata)
        self.assertEqual({'display_name'}, inst.obj_what_changed())
        read = objects.Instance.get_by_uuid(self.ctxt, uuids.a)
        self.assertEqual(({'b': '2'}, None), (read.metadata, read.display_name))

    def test_tags_of_an_instance(self):
        self._instance(uuids.a)
        objects.Tag(self.ctxt, resource_id=uuids.a, tag='blue').create()
        objects.Tag(self.ctxt, resource_id=uuids.a, tag='red').create()
        self.assertTrue(objects.Tag.exists(self.ctxt, uuids.a, 'red'))
        objects.Tag.destroy(self.ctxt, uuids.a, 'blue')
        self.assertRaises(exception.InstanceTagNotFound, objects.Tag.destroy, self.ctxt,
                          uuids.a, 'blue')
        self.assertEqual(['red'], [t.tag for t in objects.Instance.get_by_uuid(
            self.ctxt, uuids.a).tags])
        objects.TagList.create(self.ctxt, uuids.a, ['x', 'y', 'x'])
        self.assertEqual(['x', 'y'], [t.tag for t in objects.TagList.get_by_resource_id(
            self.ctxt, uuids.a)])
        objects.TagList.destroy(self.ctxt, uuids.a)
        self.assertEqual([], list(objects.TagList.get_by_resource_id(self.ctxt, uuids.a)))

    def test_drop_migration_context(self):
        inst = self._instance(uuids.a, migration_context=objects.MigrationContext(
            instance_uuid=uuids.a, migration_id=1))
        inst.drop_migration_context()
        self.assertIsNone(objects.MigrationContext.get_by_instance_uuid(self.ctxt, uuids.a))
        self.assertRaises(exception.MigrationContextNotFound,
                          objects.MigrationContext.get_by_instance_uuid, self.ctxt, uuids.b)


class TestInstanceList(_DatabaseCase):

    def test_counts_leave_out_soft_deleted_hidden_and_deleted_instances(self):
        self._instance(uuids.a, vcpus=2, memory_mb=512)
        self._instance(uuids.b, vcpus=4, memory_mb=1024, user_id='u2', vm_state='active')
        self._instance(uuids.c, vcpus=8, memory_mb=1, vm_state='soft-delete')
        self._instance(uuids.d, vcpus=8, memory_mb=1, hidden=True)
        self._instance(uuids.e, vcpus=8, memory_mb=1, host='h').destroy()
        self._instance(uuids.f, vcpus=8, memory_mb=1, project_id='p2')
        self.assertEqual({'project': {'instances': 2, 'cores': 6, 'ram': 1536},
                          'user': {'instances': 1, 'cores': 2, 'ram': 512}},
                         objects.InstanceList.get_counts(self.ctxt, 'p1', user_id='u1'))
        self.assertEqual(1, objects.InstanceList.get_count_by_vm_state(
            self.ctxt, 'p1', 'u2', 'active'))

    def test_host_queries(self):
        self._instance(uuids.a, host='h1', node='n1', instance_type_id=1)
        self._instance(uuids.b, host='h1', node='n2', instance_type_id=2)
        self._instance(uuids.c, host='h2', node='n3', instance_type_id=1)
        self.assertEqual([uuids.b], [i.uuid for i in
                                     objects.InstanceList.get_by_host_and_not_type(
                                         self.ctxt, 'h1', type_id=1)])
        self.assertEqual([uuids.a], objects.InstanceList.get_uuids_by_host_and_node(
            self.ctxt, 'h1', 'n1'))
        self.assertEqual({'h1': sorted([uuids.a, uuids.b]), 'h2': [uuids.c]},
                         {host: sorted(found) for host, found in
                          objects.InstanceList.get_uuids_by_hosts(
                              self.ctxt, ['h1', 'h2', 'h3']).items()})
        self.assertEqual(3, len(objects.InstanceList.get_all(self.ctxt)))

    def test_hung_in_rebooting(self):
        self._instance(uuids.a, task_state='rebooting')
        self._instance(uuids.b, task_state='rebooting')
        self._set(uuids.a, updated_at=timeutils.utcnow() - datetime.timedelta(seconds=600))
        self.assertEqual([uuids.a], [i.uuid for i in
                                     objects.InstanceList.get_hung_in_rebooting(self.ctxt,
                                                                                300)])

    def test_active_by_window_pages_by_project_and_uuid(self):
        begin = timeutils.utcnow() - datetime.timedelta(hours=1)
        for uuid in (uuids.a, uuids.b, uuids.c):
            self._instance(uuid, launched_at=begin)
        self._instance(uuids.d, launched_at=begin - datetime.timedelta(hours=2),
                       terminated_at=begin - datetime.timedelta(minutes=1))
        window = sorted([uuids.a, uuids.b, uuids.c])
        first = objects.InstanceList.get_active_by_window_joined(self.ctxt, begin, limit=2)
        rest = objects.InstanceList.get_active_by_window_joined(self.ctxt, begin,
                                                                marker=first[-1].uuid)
        self.assertEqual(window, [i.uuid for i in first] + [i.uuid for i in rest])

    def test_security_group_queries_are_not_supported(self):
        self.assertRaises(exception.ObjectMethodNotSupported,
                          objects.InstanceList.get_by_security_group_id, self.ctxt, 1)


class TestActions(_DatabaseCase):

    def setUp(self):
        super().setUp()
        self._instance(uuids.a)
        self.actx = context.get_admin_context()
        self.actx.request_id = 'req-1'

    def test_an_event_finishes_by_its_id_not_the_newer_one_of_the_same_name(self):
        instance_action.InstanceAction.action_start(self.actx, uuids.a, 'create')
        first = instance_action.InstanceActionEvent.event_start(self.actx, uuids.a, 'build',
                                                                host='c1')
        second = instance_action.InstanceActionEvent.event_start(self.actx, uuids.a, 'build',
                                                                 host='c2')
        first.finish_with_failure('no room', 'Traceback')
        self.assertEqual(('c1', 'Error', 'no room'),
                         (first.host, first.result, first.details))
        self.assertIsNone(instance_action.InstanceActionEvent.get_by_id(
            self.actx, second.action_id, second.id).result)
        second.finish()
        self.assertEqual('Success', instance_action.InstanceActionEvent.get_by_id(
            self.actx, second.action_id, second.id).result)
        self.assertEqual('Error', instance_action.InstanceAction.get_by_request_id(
            self.actx, uuids.a, 'req-1').message)

    def test_actions_paged_by_request_id_and_finished(self):
        for index in range(3):
            self.actx.request_id = 'req-%d' % index
            instance_action.InstanceAction.action_start(self.actx, uuids.a, 'reboot')
        instance_action.InstanceAction.action_finish(self.actx, uuids.a)
        actions = instance_action.InstanceActionList.get_by_instance_uuid(
            self.actx, uuids.a, limit=2)
        self.assertEqual(['req-2', 'req-1'], [a.request_id for a in actions])
        self.assertIsNotNone(actions[0].finish_time)
        rest = instance_action.InstanceActionList.get_by_instance_uuid(
            self.actx, uuids.a, marker='req-1')
        self.assertEqual(['req-0'], [a.request_id for a in rest])
        self.assertRaises(exception.MarkerNotFound,
                          instance_action.InstanceActionList.get_by_instance_uuid,
                          self.actx, uuids.a, marker='req-9')


class TestGroups(_DatabaseCase):

    def test_get_by_name_save_and_counts(self):
        ctxt = context.RequestContext(user_id='u1', project_id='p1')
        ctxt.db_connection = getattr(self.ctxt, 'db_connection', None)
        group = objects.InstanceGroup(ctxt, name='web', policy='affinity',
                                      user_id='u1', project_id='p1')
        group.create()
        self._instance(uuids.a, user_id='u1')
        self._instance(uuids.b, user_id='u2')
        found = objects.InstanceGroup.get_by_name(ctxt, 'web')
        found.members = [uuids.a, uuids.b]
        found.name = 'web2'
        found.save()
        self.assertEqual(('web2', sorted([uuids.a, uuids.b])),
                         (found.name, sorted(found.members)))
        group.refresh()
        self.assertEqual('web2', group.name)
        self.assertEqual(1, group.count_members_by_user('u1'))
        self.assertEqual({'project': {'server_groups': 1}, 'user': {'server_groups': 1}},
                         objects.InstanceGroupList.get_counts(ctxt, 'p1', user_id='u1'))
        found.policy = 'anti-affinity'
        self.assertRaises(exception.ObjectActionError, found.save)
        self.assertRaises(exception.InstanceGroupNotFound, objects.InstanceGroup.get_by_name,
                          ctxt, 'web')


class TestBuildRequests(_DatabaseCase):

    def _request(self, uuid, name, **values):
        instance = objects.Instance(self.ctxt, uuid=uuid, project_id='p1', user_id='u1',
                                    display_name=name, **values)
        request = objects.BuildRequest(self.ctxt, instance_uuid=uuid, project_id='p1',
                                       instance=instance)
        request.create()
        return request

    def test_get_by_filters_matches_sorts_and_pages_as_novas(self):
        self._request(uuids.a, 'web-1', vm_state='building')
        self._request(uuids.b, 'web-2', vm_state='building')
        self._request(uuids.c, 'db-1', vm_state='building')
        found = objects.BuildRequestList.get_by_filters(
            self.ctxt, {'display_name': '^web', 'vm_state': ['building']},
            sort_keys=['display_name'], sort_dirs=['asc'])
        self.assertEqual(['web-1', 'web-2'], [r.instance.display_name for r in found])
        page = objects.BuildRequestList.get_by_filters(
            self.ctxt, {}, sort_keys=['display_name'], sort_dirs=['asc'], marker=uuids.c,
            limit=1)
        self.assertEqual(['web-1'], [r.instance.display_name for r in page])
        self.assertEqual([], list(objects.BuildRequestList.get_by_filters(
            self.ctxt, {'deleted': True})))
        self.assertRaises(exception.MarkerNotFound, objects.BuildRequestList.get_by_filters,
                          self.ctxt, {}, marker=uuids.nowhere)

    def test_read_back_with_empty_mappings_and_tags(self):
        request = self._request(uuids.a, 'web-1')
        read = objects.BuildRequest.get_by_instance_uuid(self.ctxt, request.instance_uuid)
        self.assertEqual(([], []), (list(read.block_device_mappings), list(read.tags)))


class TestWithoutTheirTables(base.TestCase):
    """Key pairs and block device mappings: answered as Nova's empty tables would."""

    def test_key_pairs(self):
        ctxt = context.get_admin_context()
        self.assertRaises(exception.KeypairNotFound, objects.KeyPair.get_by_name, ctxt,
                          'u1', 'key1')
        self.assertEqual((0, []), (objects.KeyPairList.get_count_by_user(ctxt, 'u1'),
                                   list(objects.KeyPairList.get_by_user(ctxt, 'u1'))))
        self.assertRaises(exception.ObjectMethodNotSupported,
                          objects.KeyPair(ctxt, name='key1', type='ssh').create)

    def test_block_device_mappings(self):
        ctxt = context.get_admin_context()
        self.assertEqual([], list(objects.BlockDeviceMappingList.get_by_instance_uuid(
            ctxt, uuids.a)))
        self.assertRaises(exception.VolumeBDMNotFound, objects.BlockDeviceMapping.get_by_volume,
                          ctxt, 'vol1')
        self.assertRaises(exception.ObjectMethodNotSupported,
                          objects.BlockDeviceMapping(ctxt, volume_id='vol1').save)
