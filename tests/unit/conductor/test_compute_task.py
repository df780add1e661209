"""The conductor's build casts from a client that bypassed compute.api (issue 26).

A build whose values do not fit their columns ends in ERROR in cell0 with a fault naming the
field, its build request gone, the scheduler never asked; arguments of the wrong type are
logged with the request id and dropped. SQLite keeps over-long strings, so these tests
check what is written, not that the database refused it (see the functional tests).
"""
import threading
from unittest import mock
import warnings

from oslo_db import exception as db_exc
import psycopg2
from sqlalchemy import exc as sa_exc

from minisched.conductor import compute_task
from minisched.conductor import db_errors
from minisched import context
from minisched.db.api import api as api_db
from minisched import exception
from minisched.objects import build_request as build_request_obj
from minisched.objects import instance as instance_obj
from minisched.objects import instance_action
from minisched.objects import instance_fault
from minisched.objects import instance_mapping as instance_mapping_obj
from minisched.objects import request_spec as request_spec_obj
from tests.unit import base, fakes, sqlite_databases

uuids = base.uuids


class ComputeTaskTestCase(sqlite_databases.SqliteDatabases, base.TestCase):

    def setUp(self):
        super().setUp()
        self.use_databases()
        self.use_fake_transport()
        self.ctxt = context.RequestContext(user_id='u', project_id='p', is_admin=True)
        # The endpoint the conductor registers: its retry wrapper sees the malformed
        # arguments first.
        self.manager = db_errors.ComputeTaskManager(self.conf, 'conductor1')
        self.select = mock.patch.object(self.manager.query_client, 'select_destinations',
                                        side_effect=AssertionError('scheduler asked')).start()
        self.addCleanup(mock.patch.stopall)

    def write_build(self, **instance_values):
        """What a client of its own writes before casting: build request, spec, mapping."""
        values = dict(uuid=uuids.instance, project_id='p', user_id='u', display_name='web',
                      hostname='web', vm_state=instance_obj.BUILDING,
                      task_state=instance_obj.SCHEDULING, flavor=fakes.fake_flavor(),
                      metadata={}, system_metadata={})
        values.update(instance_values)
        instance = instance_obj.Instance(self.ctxt, **values)
        spec = request_spec_obj.RequestSpec(
            self.ctxt, instance_uuid=instance.uuid, flavor=fakes.fake_flavor(),
            availability_zone=instance.availability_zone if 'availability_zone' in instance
            else None, project_id='p', user_id='u', scheduler_hints={}, num_instances=1)
        spec.create()
        build_request = build_request_obj.BuildRequest(
            self.ctxt, instance_uuid=instance.uuid, project_id='p', instance=instance)
        build_request.create()
        instance_mapping_obj.InstanceMapping(self.ctxt, instance_uuid=instance.uuid,
                                             project_id='p', user_id='u',
                                             cell_mapping=None).create()
        return build_request, spec

    def schedule_and_build(self, build_requests, request_specs, image=None):
        with self.assertLogs(compute_task.LOG, 'WARNING') as logs:
            self.manager.schedule_and_build_instances(
                self.ctxt, build_requests, request_specs, image or {}, admin_password=None,
                injected_files=[], requested_networks=None, block_device_mapping=[])
        return '\n'.join(logs.output)

    def fault(self, uuid=uuids.instance):
        fault, = instance_fault.InstanceFaultList.get_by_instance_uuids(self.ctxt, [uuid])
        return fault


class TestScheduleAndBuildRefusals(ComputeTaskTestCase):

    def assertBuriedNaming(self, field):
        instance = instance_obj.Instance.get_by_uuid(self.ctxt, uuids.instance)
        self.assertEqual((instance_obj.ERROR, None), (instance.vm_state, instance.task_state))
        fault = self.fault()
        self.assertEqual(400, fault.code)
        self.assertTrue(fault.message.startswith('Invalid input for field/attribute %s.'
                                                 % field), fault.message)
        self.assertEqual([], build_request_obj.BuildRequestList.get_all(self.ctxt).objects)
        self.assertFalse(self.select.called)
        return instance

    def test_a_300_character_name_ends_in_error_naming_the_field(self):
        build_request, spec = self.write_build(display_name='n' * 300)
        log = self.schedule_and_build([build_request], [spec])
        self.assertIn('Refused schedule_and_build_instances (request %s)'
                      % self.ctxt.request_id, log)
        self.assertIn('display_name cut to fit', log)
        instance = self.assertBuriedNaming('display_name')
        self.assertEqual('n' * 255, instance.display_name)  # cut, so that cell0 holds it
        self.assertIn('300 characters long, more than the 255 of column '
                      'instances.display_name', self.fault().message)

    def test_a_300_character_zone_ends_in_error_naming_the_field(self):
        build_request, spec = self.write_build(availability_zone='z' * 300)
        self.schedule_and_build([build_request], [spec])
        self.assertEqual('z' * 255,
                         self.assertBuriedNaming('availability_zone').availability_zone)

    def test_a_spec_zone_too_long_ends_in_error(self):
        build_request, spec = self.write_build()
        spec.availability_zone = 'z' * 300
        self.schedule_and_build([build_request], [spec])
        self.assertBuriedNaming('request_spec.availability_zone')

    def test_specs_of_the_wrong_type_end_in_error(self):
        build_request, _spec = self.write_build()
        for specs in ('garbage', [{'flavor': 1}]):
            with self.subTest(specs=specs):
                self.schedule_and_build([build_request], specs)
        self.assertBuriedNaming('request_specs')

    def test_build_requests_of_the_wrong_type_are_logged_and_dropped(self):
        self.write_build()
        for build_requests in ('garbage', [{'instance_uuid': uuids.instance}], None):
            with self.subTest(build_requests=build_requests):
                log = self.schedule_and_build(build_requests, [])
                self.assertIn('Refused schedule_and_build_instances', log)
                self.assertIn('field/attribute build_requests', log)
        self.assertEqual(1, len(build_request_obj.BuildRequestList.get_all(self.ctxt)))

    def test_an_instance_whose_uuid_no_cell_holds_is_dropped_with_its_rows(self):
        build_request, spec = self.write_build(display_name='n' * 300)
        with warnings.catch_warnings():  # oslo.versionedobjects warns of a non-UUID uuid
            warnings.simplefilter('ignore', FutureWarning)
            build_request.instance.uuid = 'u' * 40
        log = self.schedule_and_build([build_request], [spec])
        self.assertIn('ERROR:%s:Instance uuid %r cannot be recorded in a cell'
                      % (compute_task.LOG.name, 'u' * 40), log)
        self.assertEqual([], build_request_obj.BuildRequestList.get_all(self.ctxt).objects)
        self.assertRaises(exception.InstanceMappingNotFound,
                          instance_mapping_obj.InstanceMapping.get_by_instance_uuid,
                          self.ctxt, uuids.instance)
        self.assertRaises(exception.RequestSpecNotFound,
                          request_spec_obj.RequestSpec.get_by_instance_uuid, self.ctxt,
                          uuids.instance)

    def test_a_context_too_long_for_the_action_record_is_cut_for_it(self):
        build_request, spec = self.write_build(display_name='n' * 300)
        self.ctxt.request_id = 'req-' + 'r' * 300
        self.schedule_and_build([build_request], [spec])
        self.assertBuriedNaming('context.request_id')
        action, = instance_action.InstanceActionList.get_by_instance_uuid(self.ctxt,
                                                                          uuids.instance)
        self.assertEqual(('create', self.ctxt.request_id[:255]),
                         (action.action, action.request_id))


class TestBuildInstancesRefusals(ComputeTaskTestCase):

    def test_an_instance_too_long_for_its_columns_is_set_to_error(self):
        instance = instance_obj.Instance(self.ctxt, uuid=uuids.instance, project_id='p',
                                         user_id='u', display_name='web',
                                         vm_state=instance_obj.BUILDING, metadata={},
                                         system_metadata={}, flavor=fakes.fake_flavor())
        instance.create()
        instance.display_name = 'n' * 300
        with self.assertLogs(compute_task.LOG, 'WARNING') as logs:
            self.manager.build_instances(
                self.ctxt, [instance], {}, {}, None, [], None, [],
                request_spec=request_spec_obj.RequestSpec(), host_lists=None)
        self.assertIn('Refused build_instances', '\n'.join(logs.output))
        stored = instance_obj.Instance.get_by_uuid(self.ctxt, uuids.instance)
        self.assertEqual((instance_obj.ERROR, 'n' * 255), (stored.vm_state, stored.display_name))
        self.assertTrue(self.fault().message.startswith(
            'Invalid input for field/attribute display_name.'))

    def test_instances_of_the_wrong_type_are_logged_and_dropped(self):
        for instances in ('garbage', [], [{'uuid': uuids.instance}]):
            with self.subTest(instances=instances):
                with self.assertLogs(compute_task.LOG, 'WARNING') as logs:
                    self.manager.build_instances(self.ctxt, instances, {}, {}, None, [], None,
                                                 [], request_spec=None, host_lists=None)
                self.assertIn('field/attribute instances', '\n'.join(logs.output))


class TestBuildInstancesDatabaseErrors(ComputeTaskTestCase):
    """A transient database error while build_instances schedules is the task's to retry
    (as the adoption of orphans reaches it too), never the build's failure."""

    def _build(self):
        instance = instance_obj.Instance(self.ctxt, uuid=uuids.instance, project_id='p',
                                         user_id='u', display_name='web',
                                         vm_state=instance_obj.BUILDING,
                                         task_state=instance_obj.SCHEDULING, metadata={},
                                         system_metadata={}, flavor=fakes.fake_flavor())
        instance.create()
        with self.assertLogs(db_errors.LOG, 'ERROR') as logs:
            self.manager.build_instances(
                self.ctxt, [instance], {}, {}, None, [], None, [],
                request_spec=request_spec_obj.RequestSpec(flavor=fakes.fake_flavor()),
                host_lists=None)
        return '\n'.join(logs.output)

    def test_past_the_bound_the_fault_names_the_database(self):
        self.flags(db_retry_timeout_seconds=0, group='conductor')
        error = sa_exc.OperationalError('SELECT', {}, psycopg2.OperationalError('refused'))
        error.orig.minisched_database = 'the API database'
        with mock.patch.object(compute_task.scheduler_utils, 'setup_instance_group',
                               side_effect=error):
            log = self._build()
        message = ('The API database was unavailable for 0 seconds: OperationalError: '
                   '(psycopg2.OperationalError) refused')
        self.assertIn('Giving up building %s: %s' % (uuids.instance, message), log)
        stored = instance_obj.Instance.get_by_uuid(self.ctxt, uuids.instance)
        self.assertEqual(instance_obj.ERROR, stored.vm_state)
        self.assertEqual(message, self.fault().message)


class _KilledConductorCase(ComputeTaskTestCase):
    """A conductor killed half-way through a build cast: the instance is in its cell."""

    created_by_a_killed_conductor = True

    def setUp(self):
        super().setUp()
        from minisched.objects import selection as selection_obj
        self.select.side_effect = None
        self.select.return_value = [[selection_obj.Selection(
            compute_node_uuid=uuids.node, service_host='c1', nodename='c1',
            cell_uuid=uuids.cell, limits=None, allocation_request=None,
            allocation_request_version=None)]]
        # The build message to the compute is what this delivery sends at the end.
        self.cast = mock.patch.object(self.manager, '_cast_build').start()
        self.build_request, self.spec = self.write_build()
        if self.created_by_a_killed_conductor:
            # What the killed conductor did: the instance is in its cell, nothing more.
            self.build_request.instance.obj_clone().create()
        mock.patch.object(compute_task, 'TAKE_OVER_AFTER_SECONDS', 0.5).start()

    def deliver(self, redelivered):
        from minisched.messaging import admission as rpc_admission
        rpc_admission._running.redelivered = redelivered
        self.addCleanup(setattr, rpc_admission._running, 'redelivered', False)
        self.manager.schedule_and_build_instances(
            self.ctxt, [self.build_request], [self.spec], {}, admin_password=None,
            injected_files=[], requested_networks=None, block_device_mapping=[])


class TestRedeliveredBuild(_KilledConductorCase):
    """A conductor killed between creating an instance and mapping it: RabbitMQ delivers the
    cast again (its ``redelivered`` flag), and that delivery takes the build over."""

    def test_a_redelivered_cast_takes_the_unfinished_build_over(self):
        with self.assertLogs(compute_task.LOG, 'WARNING') as logs:
            self.deliver(redelivered=True)
        self.assertIn('takes the build over', '\n'.join(logs.output))
        instance = self.cast.call_args[0][1]
        self.assertEqual(uuids.instance, instance.uuid)
        self.assertEqual([], build_request_obj.BuildRequestList.get_all(self.ctxt).objects)
        self.assertEqual(1, len(instance_obj.InstanceList.get_by_filters(self.ctxt, {})))

    def test_another_copy_of_a_live_delivery_stops(self):
        self.deliver(redelivered=False)
        self.assertFalse(self.cast.called)
        # The build is left to the delivery that created the instance.
        self.assertEqual(1, len(build_request_obj.BuildRequestList.get_all(self.ctxt)))

    def test_a_redelivered_cast_leaves_the_build_to_a_live_conductor_that_maps_it(self):
        # A conductor that only lost its connection (a broker restart) goes on: it maps the
        # instance it created, and the copy RabbitMQ delivered again stops.
        mapper = threading.Timer(0.2, api_db.build_request_take,
                                 (self.ctxt, uuids.instance, None))
        mapper.start()
        self.addCleanup(mapper.join)
        self.deliver(redelivered=True)
        self.assertFalse(self.cast.called)
        self.assertEqual(1, len(instance_obj.InstanceList.get_by_filters(self.ctxt, {})))


class TestOrphanedPlacedBuild(_KilledConductorCase):
    """A conductor killed after it placed an instance (created, mapped, build request gone)
    and before it cast the build: the delivery RabbitMQ makes again schedules and builds it."""

    def setUp(self):
        super().setUp()
        # The killed conductor went one step further: it mapped the instance.
        self.assertEqual(api_db.TAKEN, api_db.build_request_take(self.ctxt, uuids.instance,
                                                                 None))
        self.build = mock.patch.object(self.manager.compute_rpcapi,
                                       'build_and_run_instance').start()

    def test_a_redelivered_cast_builds_an_instance_no_compute_claimed(self):
        with self.assertLogs(compute_task.LOG, 'WARNING') as logs:
            self.deliver(redelivered=True)
        self.assertIn('this one schedules and builds it again', '\n'.join(logs.output))
        self.assertEqual(1, self.select.call_count)
        self.assertEqual([uuids.instance], self.select.call_args[0][2])
        kwargs = self.build.call_args.kwargs
        self.assertEqual((uuids.instance, 'c1', 'c1'),
                         (kwargs['instance'].uuid, kwargs['host'], kwargs['node']))
        self.assertEqual(1, kwargs['filter_properties']['retry']['num_attempts'])
        self.assertFalse(self.cast.called)  # not the path of a build request still there
        self.assertEqual(1, len(instance_obj.InstanceList.get_by_filters(self.ctxt, {})))

    def test_the_compute_is_given_the_security_groups_by_uuid_or_name(self):
        from minisched.objects import security_group as security_group_obj
        groups = security_group_obj.SecurityGroupList.from_names(['default'])
        groups.objects.append(security_group_obj.SecurityGroup(name='web', uuid=uuids.web))
        self.spec.security_groups = groups
        self.spec.save()  # what the API stored
        with self.assertLogs(compute_task.LOG, 'WARNING'):
            self.deliver(redelivered=True)
        self.assertEqual(['default', uuids.web], self.build.call_args.kwargs['security_groups'])

    def test_a_build_a_compute_claimed_meanwhile_is_left_to_it(self):
        def claim():
            instance = instance_obj.Instance.get_by_uuid(self.ctxt, uuids.instance)
            instance.host, instance.task_state = 'c2', instance_obj.SPAWNING
            instance.save()
        claimer = threading.Timer(0.2, claim)
        claimer.start()
        self.addCleanup(claimer.join)
        self.deliver(redelivered=True)
        self.assertFalse(self.select.called)
        self.assertFalse(self.build.called)

    def test_a_first_delivery_never_rebuilds_what_another_placed(self):
        self.deliver(redelivered=False)
        self.assertFalse(self.select.called)
        self.assertFalse(self.build.called)


class TestRunAgainAfterADatabaseError(_KilledConductorCase):
    """The database goes away after the instance was created in its cell: the conductor
    runs the cast again (db_errors), and that run finishes the build the first one began."""

    created_by_a_killed_conductor = False

    def setUp(self):
        super().setUp()
        take = api_db.build_request_take
        self.takes = []

        def take_after_an_outage(*args):
            self.takes.append(args[1])
            if len(self.takes) == 1:
                raise db_exc.DBConnectionError('the database went away')
            return take(*args)

        mock.patch.object(api_db, 'build_request_take', take_after_an_outage).start()
        mock.patch.object(compute_task, 'TAKE_OVER_AFTER_SECONDS', 3600).start()

    def test_the_second_run_takes_over_what_the_first_created_at_once(self):
        self.deliver(redelivered=False)
        self.assertEqual([uuids.instance, uuids.instance], self.takes)
        instance = self.cast.call_args[0][1]
        self.assertEqual(uuids.instance, instance.uuid)
        self.assertEqual(1, self.cast.call_count)
        self.assertEqual([], build_request_obj.BuildRequestList.get_all(self.ctxt).objects)
        self.assertEqual(1, len(instance_obj.InstanceList.get_by_filters(self.ctxt, {})))

    def test_only_a_run_again_or_a_redelivery_takes_over(self):
        self.assertIsNone(compute_task.again())
        with compute_task.run_again():
            self.assertEqual(('retry', 0), (compute_task.again(),
                                            compute_task._take_over_wait()))
            with compute_task.run_again():  # a build_instances run again within it
                pass
            self.assertEqual('retry', compute_task.again())
        self.assertIsNone(compute_task.again())
        from minisched.messaging import admission
        admission._running.redelivered = True
        self.addCleanup(setattr, admission._running, 'redelivered', False)
        self.assertEqual(('redelivered', 3600), (compute_task.again(),
                                                 compute_task._take_over_wait()))
