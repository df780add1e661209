"""Remotable methods go through ``indirection_api`` (the conductor) when one is installed."""
import datetime
from unittest import mock

from oslo_versionedobjects import exception as ovo_exc

from minisched import context
from minisched import exception
from minisched import objects
from minisched.objects import base
from minisched.objects import service as service_obj
from tests.unit import base as test_base
from tests.unit import fakes

uuids = test_base.uuids


class TestRemotable(test_base.TestCase):

    def setUp(self):
        super().setUp()
        self.ctxt = context.get_admin_context()
        self.conductor = fakes.fake_indirection(self)

    def _service(self, **kw):
        values = dict(id=1, uuid=uuids.service, host='host1', binary='minisched-compute',
                      report_count=4)
        values.update(kw)
        service = objects.Service(self.ctxt, **values)
        service.obj_reset_changes()
        return service

    def test_instance_method_sends_the_object_and_applies_the_updates(self):
        seen = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)

        def save(ctxt, objinst, method, args, kwargs):
            self.assertIs(self.ctxt, ctxt)
            self.assertEqual({'report_count'}, objinst.obj_what_changed())
            updates = {'report_count': 5, 'last_seen_up': '2026-01-01T12:00:00Z',
                       'obj_what_changed': set()}
            return updates, None

        self.conductor.action_results[('Service', 'save')] = save
        service = self._service()
        service.report_count += 1
        self.assertIsNone(service.save())
        self.assertEqual(['Service.save'], self.conductor.methods())
        self.assertEqual(5, service.report_count)
        self.assertEqual(seen, service.last_seen_up)  # a primitive is coerced by its field
        self.assertEqual(set(), service.obj_what_changed())

    def test_dirty_set_comes_from_the_answer(self):
        self.conductor.action_results[('Service', 'save')] = (
            {'disabled': True, 'obj_what_changed': {'disabled'}}, None)
        service = self._service()
        service.save()
        self.assertTrue(service.disabled)
        self.assertEqual({'disabled'}, service.obj_what_changed())

    def test_updates_that_are_not_fields_are_ignored(self):
        self.conductor.action_results[('Service', 'save')] = (
            {'bogus': 1, 'obj_what_changed': set()}, None)
        service = self._service()
        service.save()
        self.assertFalse(hasattr(service, 'bogus'))

    def test_instance_method_arguments_and_result_pass_through(self):
        self.conductor.action_results[('Instance', 'save')] = (
            lambda ctxt, obj, method, args, kwargs: ({'obj_what_changed': set()}, 'done'))
        instance = objects.Instance(self.ctxt, uuid=uuids.instance, vm_state='active')
        self.assertEqual('done', instance.save(expected_task_state=['spawning']))
        self.assertEqual(('action', 'Instance', 'save', (), {'expected_task_state':
                                                             ['spawning']}),
                         self.conductor.calls[0])

    def test_orphaned_object_cannot_call_a_remotable_method(self):
        service = objects.Service(host='host1')
        with self.assertRaises(ovo_exc.OrphanedObjectError):
            service.save()
        self.assertEqual([], self.conductor.calls)

    def test_remote_exception_reaches_the_caller(self):
        self.conductor.action_results[('Service', 'save')] = exception.ServiceNotFound(
            service_id=1)
        with self.assertRaises(exception.ServiceNotFound):
            self._service().save()

    def test_class_method_sends_the_version_tree(self):
        answer = objects.ComputeNode(host='host1', hypervisor_hostname='node1')
        self.conductor.class_results[('ComputeNode', 'get_by_host_and_nodename')] = answer
        node = objects.ComputeNode.get_by_host_and_nodename(self.ctxt, 'host1', 'node1')
        self.assertIs(answer, node)
        self.assertIs(self.ctxt, node._context)
        kind, name, method, args, kwargs = self.conductor.calls[0]
        self.assertEqual(('class', 'ComputeNode', 'get_by_host_and_nodename',
                          ('host1', 'node1'), {}), (kind, name, method, args, kwargs))

    def test_class_method_versions_cover_child_objects(self):
        versions = {}

        def record(ctxt, objname, method, object_versions, args, kwargs):
            versions.update(object_versions)

        self.conductor.class_results[('RequestSpec', 'get_by_instance_uuid')] = record
        objects.RequestSpec.get_by_instance_uuid(self.ctxt, uuids.instance)
        self.assertEqual(base.obj_tree_get_versions('RequestSpec'), versions)
        for name in ('RequestSpec', 'Flavor', 'ImageMeta', 'ImageMetaProps', 'CellMapping'):
            self.assertEqual(getattr(objects, name).VERSION, versions[name])

    def test_list_class_method(self):
        self.conductor.class_results[('ServiceList', 'get_by_binary')] = objects.ServiceList(
            objects=[objects.Service(host='a')])
        services = objects.ServiceList.get_by_binary(self.ctxt, 'minisched-compute',
                                                     include_disabled=True)
        self.assertEqual(['a'], [s.host for s in services])
        self.assertEqual({'include_disabled': True}, self.conductor.calls[0][4])

    def test_without_indirection_the_method_runs_locally(self):
        base.MinischedObject.indirection_api = None
        row = {'id': 7, 'uuid': uuids.service, 'host': 'host1', 'binary': 'minisched-compute',
               'topic': 'compute', 'report_count': 0, 'disabled': False, 'forced_down': False,
               'version': 1, 'deleted': False}
        with mock.patch.object(service_obj.db, 'service_get_by_uuid',
                               return_value=row) as query:
            service = objects.Service.get_by_uuid(self.ctxt, uuids.service)
        query.assert_called_once_with(self.ctxt, uuids.service)
        self.assertEqual((7, 'host1'), (service.id, service.host))
        self.assertIs(self.ctxt, service._context)
        self.assertEqual([], self.conductor.calls)
