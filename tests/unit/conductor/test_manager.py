"""ConductorManager runs remoted object methods against a real (SQLite) database.

Only remotable methods of registered classes may run; every bad request comes back as an
``ExpectedException`` whose ``exc_info`` holds the precise minisched exception, which the RPC
layer sends to the caller without a server-side traceback.
"""
import sqlite3
from unittest import mock

import oslo_messaging as messaging

from minisched.conductor import manager as conductor_manager
from minisched import context
from minisched.db import engines
from minisched import exception
from minisched import objects
from minisched.objects import base as objects_base
from tests.unit import base
from tests.unit import fakes
from tests.unit import sqlite_databases

COMPUTE = 'minisched-compute'


class TestConductorManager(sqlite_databases.SqliteDatabases, base.TestCase):

    def setUp(self):
        super().setUp()
        self.use_databases()
        self.use_fake_transport()  # the manager builds RPC clients and a notifier
        self.conductor = conductor_manager.ConductorManager(self.conf, host='conductor1')
        self.ctxt = context.get_admin_context()
        self.versions = objects_base.obj_tree_get_versions

    def _create_service(self, host='host1', **kw):
        service = objects.Service(self.ctxt, host=host, binary=COMPUTE, topic='compute',
                                  report_count=0, **kw)
        service.create()
        return service

    def _class_action(self, objname, method, args=(), kwargs=None, versions=None):
        return self.conductor.object_class_action_versions(
            self.ctxt, objname, method, versions or self.versions(objname), args, kwargs or {})

    def _assert_expected(self, error_class, call, *args, **kwargs):
        """``call`` raises ExpectedException carrying an ``error_class`` instance."""
        with self.assertRaises(messaging.ExpectedException) as ctx:
            call(*args, **kwargs)
        exc_type, exc_value, _tb = ctx.exception.exc_info
        self.assertIs(error_class, exc_type, exc_value)
        self.assertIsInstance(exc_value, error_class)
        return exc_value


class TestObjectAction(TestConductorManager):

    def test_create_returns_the_database_values_and_a_clean_object(self):
        service = objects.Service(self.ctxt, host='host1', binary=COMPUTE, topic='compute',
                                  report_count=0)
        updates, result = self.conductor.object_action(self.ctxt, service, 'create', (), {})
        self.assertIsNone(result)
        self.assertEqual(set(), updates.pop('obj_what_changed'))
        for name in ('id', 'uuid', 'version', 'created_at', 'disabled', 'forced_down'):
            self.assertIn(name, updates)
        self.assertIsInstance(updates['created_at'], str)  # field primitives, for the wire
        stored = objects.Service.get_by_host_and_binary(self.ctxt, 'host1', COMPUTE)
        self.assertEqual(updates['id'], stored.id)

    def test_state_report_save_returns_report_count_and_last_seen_up(self):
        service = self._create_service()
        self.assertIsNone(service.last_seen_up)
        service.report_count += 1
        updates, result = self.conductor.object_action(self.ctxt, service, 'save', (), {})
        self.assertIsNone(result)
        self.assertEqual(set(), updates['obj_what_changed'])
        self.assertIsNotNone(updates['last_seen_up'])
        # only what the call changed goes back: the caller already has its own edits
        self.assertNotIn('report_count', updates)
        self.assertNotIn('host', updates)
        self.assertEqual(1, objects.Service.get_by_id(self.ctxt, service.id).report_count)

    def test_fields_still_dirty_after_the_call_are_reported(self):
        flavor = objects.Flavor(self.ctxt, name='m1.tiny', flavorid='1', memory_mb=512,
                                vcpus=1, root_gb=1, ephemeral_gb=0, swap=0, disabled=False,
                                is_public=True, extra_specs={})
        flavor.create()
        flavor.description = 'local edit, not saved by save_extra_specs'
        updates, result = self.conductor.object_action(
            self.ctxt, flavor, 'save_extra_specs', (), {'to_add': {'hw:cpu_policy': 'shared'}})
        self.assertIsNone(result)
        self.assertEqual({'hw:cpu_policy': 'shared'}, updates['extra_specs'])
        self.assertEqual({'description'}, updates['obj_what_changed'])

    def test_values_changed_in_place_are_told_from_the_values_before(self):
        # The diff's snapshot copies what a method could change in place, as obj_clone did.
        flavor = objects.Flavor(self.ctxt, name='m1.tiny', flavorid='1', memory_mb=512,
                                extra_specs={'a': '1'})
        before = conductor_manager._field_values(flavor)
        flavor.extra_specs['a'] = '2'
        flavor.memory_mb = 1024
        self.assertEqual(({'a': '1'}, 512), (before['extra_specs'], before['memory_mb']))
        self.assertNotIn('vcpus', before)  # unset fields stay unset (no lazy load)

    def _building_instance(self):
        flavor = objects.Flavor(id=1, name='m1.tiny', flavorid='1', memory_mb=512, vcpus=1,
                                root_gb=1, ephemeral_gb=0, swap=0, extra_specs={})
        instance = objects.Instance(self.ctxt, project_id='p', user_id='u', vm_state='building',
                                    flavor=flavor, system_metadata={})
        instance.create()
        return instance

    def test_save_sends_back_no_nested_object_it_left_alone(self):
        # Nova's diff compares a deep copy: objects have no equality, so every save sent
        # the flavor back. The caller has it: only what the method changed goes back.
        instance = self._building_instance()
        flavor = instance.flavor
        instance.vm_state = 'active'
        updates, _result = self.conductor.object_action(self.ctxt, instance, 'save', (), {})
        self.assertIs(flavor, instance.flavor)
        self.assertNotIn('flavor', updates)
        self.assertNotIn('vm_state', updates)
        self.assertIn('updated_at', updates)

    def test_nested_object_replaced_or_changed_by_the_method_is_sent_back(self):
        instance = self._building_instance()
        instance.flavor.memory_mb = 1024  # a change the save writes, then marks clean
        updates, _result = self.conductor.object_action(self.ctxt, instance, 'save', (), {})
        self.assertEqual(1024, updates['flavor']['minisched_object.data']['memory_mb'])
        self.assertEqual(1024, objects.Instance.get_by_uuid(
            self.ctxt, instance.uuid).flavor.memory_mb)
        updates, _result = self.conductor.object_action(self.ctxt, instance, 'refresh', (), {})
        self.assertIn('flavor', updates)  # a new object read from the database

    def test_method_result_is_returned(self):
        group = objects.InstanceGroup(self.ctxt, name='g', policy='affinity', members=[])
        group.create()
        updates, result = self.conductor.object_action(self.ctxt, group, 'get_hosts', (), {})
        self.assertEqual([], result)
        self.assertEqual(set(), updates['obj_what_changed'])

    def test_database_error_is_expected_with_its_class(self):
        service = self._create_service()
        service.destroy()
        service.report_count = 5
        error = self._assert_expected(exception.ServiceNotFound, self.conductor.object_action,
                                      self.ctxt, service, 'save', (), {})
        self.assertIn(str(service.id), str(error))

    def test_non_remotable_methods_are_refused(self):
        service = self._create_service()
        for method in ('obj_reset_changes', '_from_db_object', 'obj_load_attr', 'no_such',
                       '__class__', None, 'get_by_id'):  # a class method is no object action
            error = self._assert_expected(exception.InvalidObjectRequest,
                                          self.conductor.object_action,
                                          self.ctxt, service, method, (), {})
            self.assertIn('no remotable method', str(error))

    def test_bad_kwargs_are_invalid(self):
        service = self._create_service()
        for args, kwargs in (((), {'bogus': 1}), ((), ['not', 'a', 'dict']), ((1, 2), {})):
            error = self._assert_expected(exception.InvalidObjectRequest,
                                          self.conductor.object_action,
                                          self.ctxt, service, 'save', args, kwargs)
            self.assertIn('Invalid object request', str(error))

    def test_non_object_is_invalid(self):
        self._assert_expected(exception.InvalidObjectRequest, self.conductor.object_action,
                              self.ctxt, {'host': 'host1'}, 'save', (), {})


class TestObjectClassAction(TestConductorManager):

    def test_returns_an_object_at_the_current_version(self):
        created = self._create_service()
        service = self._class_action('Service', 'get_by_host_and_binary', ('host1', COMPUTE))
        self.assertIsInstance(service, objects.Service)
        self.assertEqual((created.id, created.uuid), (service.id, service.uuid))

    def test_older_requested_version_gets_a_backported_primitive(self):
        self._create_service()
        versions = dict(self.versions('Service'), Service='1.20')
        primitive = self._class_action('Service', 'get_by_host_and_binary', ('host1', COMPUTE),
                                       versions=versions)
        self.assertEqual('1.20', primitive['minisched_object.version'])
        self.assertNotIn('uuid', primitive['minisched_object.data'])
        self.assertEqual('host1', primitive['minisched_object.data']['host'])

    def test_list_and_kwargs(self):
        self._create_service('host1')
        self._create_service('host2', disabled=True)
        enabled = self._class_action('ServiceList', 'get_by_binary', (COMPUTE,))
        every = self._class_action('ServiceList', 'get_by_binary', (COMPUTE,),
                                   {'include_disabled': True})
        self.assertEqual(['host1'], [s.host for s in enabled])
        self.assertEqual(['host1', 'host2'], sorted(s.host for s in every))

    def test_plain_results_pass_through(self):
        self.assertIsNone(self._class_action('Service', 'get_by_host_and_binary',
                                             ('nowhere', COMPUTE)))
        self._create_service()
        self.assertEqual(objects.service.SERVICE_VERSION,
                         self._class_action('Service', 'get_minimum_version', (COMPUTE,)))

    def test_not_found_is_expected_with_its_class(self):
        error = self._assert_expected(exception.ServiceNotFound, self._class_action,
                                      'Service', 'get_by_id', (12345,))
        self.assertEqual(12345, error.kwargs['service_id'])

    def test_unknown_class_is_unsupported(self):
        error = self._assert_expected(exception.UnsupportedObjectError, self._class_action,
                                      'Bogus', 'get_by_id', (1,), versions={'Bogus': '1.0'})
        self.assertIn('Bogus', str(error))

    def test_unsupported_versions_are_incompatible(self):
        for version in ('1.99', '2.0', '0.1'):
            error = self._assert_expected(
                exception.IncompatibleObjectVersion, self._class_action,
                'Service', 'get_by_id', (1,), versions={'Service': version})
            self.assertEqual(version, error.kwargs['objver'])
            self.assertIn('1.22', str(error))

    def test_versions_without_the_class_are_invalid(self):
        for versions in ({'ComputeNode': '1.19'}, ['Service']):
            self._assert_expected(exception.InvalidObjectRequest,
                                  self.conductor.object_class_action_versions,
                                  self.ctxt, 'Service', 'get_by_id', versions, (1,), {})

    def test_non_remotable_class_methods_are_refused(self):
        # ``create`` is remotable, but an instance method: not a class action
        for method in ('obj_from_primitive', 'obj_class_from_name', '_from_db_object',
                       'create', 'missing'):
            self._assert_expected(exception.InvalidObjectRequest, self._class_action,
                                  'Service', method, (1,))

    def test_bad_arguments_are_invalid(self):
        for args, kwargs in (((), {}), (('h',), {'binary': COMPUTE, 'bogus': 1}),
                             (('h', COMPUTE), 'kwargs')):
            self._assert_expected(exception.InvalidObjectRequest,
                                  self.conductor.object_class_action_versions, self.ctxt,
                                  'Service', 'get_by_host_and_binary',
                                  self.versions('Service'), args, kwargs)


class TestObjectBackport(TestConductorManager):

    def test_backport_to_the_requested_versions(self):
        service = self._create_service()
        primitive = self.conductor.object_backport_versions(
            self.ctxt, service, {'Service': '1.20'})
        self.assertEqual('1.20', primitive['minisched_object.version'])
        self.assertNotIn('uuid', primitive['minisched_object.data'])

    def test_backport_of_a_child_follows_the_manifest(self):
        destination = objects.Destination(
            host='host1', cell=objects.CellMapping(uuid=base.uuids.cell, disabled=True))
        primitive = self.conductor.object_backport_versions(
            self.ctxt, destination, {'Destination': '1.1', 'CellMapping': '1.0'})
        cell = primitive['minisched_object.data']['cell']
        self.assertEqual(('1.1', '1.0'), (primitive['minisched_object.version'],
                                          cell['minisched_object.version']))
        self.assertNotIn('disabled', cell['minisched_object.data'])


class TestTransientDatabaseErrors(TestConductorManager):
    """A database that is locked (as a server that is away) answers DBTransientError."""

    def setUp(self):
        super().setUp()
        # No waiting for the lock: SQLite's busy timeout and sqlite3's own are both 0.
        patcher = mock.patch.object(engines, 'SQLITE_BUSY_TIMEOUT_MS', 0)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.flags(group='database', connection_parameters='timeout=0')
        engines.configure(self.conf)
        engines.dispose_all()

    def setup_lock(self):
        engines.dispose_all()  # pooled connections would keep the lock from being taken
        holder = sqlite3.connect(self.main_url[len('sqlite:///'):], isolation_level=None)
        self.addCleanup(holder.close)
        holder.execute('PRAGMA locking_mode=EXCLUSIVE')
        holder.execute('BEGIN EXCLUSIVE')
        return holder

    def test_locked_database_is_answered_as_transient_and_logged_once(self):
        self._create_service()
        self.setup_lock()
        with self.assertLogs(conductor_manager.LOG, 'WARNING') as logs:
            error = self._assert_expected(exception.DBTransientError, self._class_action,
                                          'Service', 'get_by_host_and_binary',
                                          ('host1', COMPUTE))
        self.assertIn('database is locked', error.format_message())
        self.assertEqual(1, len(logs.records))
        message = logs.records[0].getMessage()
        self.assertIn('Service.get_by_host_and_binary', message)
        self.assertIsNone(logs.records[0].exc_info)

    def test_object_action_on_a_locked_database_is_transient_too(self):
        instance = objects.Instance(self.ctxt, uuid=base.uuids.instance, vm_state='building',
                                    flavor=fakes.fake_flavor())
        instance.create()
        self.setup_lock()
        # A read: writes first retry a lock for seconds (``minisched.db.utils.writer``).
        self._assert_expected(exception.DBTransientError, self.conductor.object_action,
                              self.ctxt, instance, 'refresh', (), {})

    def test_other_database_errors_reach_the_caller_as_they_are(self):
        # A missing table is a bug: not transient, raised unchanged (a RemoteError for the
        # caller, logged with its traceback by oslo.messaging).
        from oslo_db import exception as db_exc
        with mock.patch('minisched.db.main.api.service_get_by_host_and_binary',
                        side_effect=db_exc.DBNonExistentTable('services')):
            self.assertRaises(db_exc.DBNonExistentTable, self._class_action, 'Service',
                              'get_by_host_and_binary', ('host1', COMPUTE))
