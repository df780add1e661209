"""The conductor's stuck-build check against real (SQLite) cell and API databases."""
import datetime
from unittest import mock

import sqlalchemy as sa
from oslo_db import exception as db_exc
from oslo_utils import timeutils

from minisched.conductor import manager as conductor_manager
from minisched.conductor import stuck_builds
from minisched import context as ms_context
from minisched.db import engines
from minisched import exception
from minisched import objects
from minisched.objects import instance_action
from tests import local_ports
from tests.unit import base
from tests.unit import fakes
from tests.unit import sqlite_databases

TIMEOUT = 600
BUILD_EVENT = 'compute_build_and_run_instance'
STUCK_MESSAGE = exception.InstanceBuildStuck(seconds=TIMEOUT).format_message()


class StuckBuildsTestCase(sqlite_databases.SqliteDatabases, base.TestCase):

    def setUp(self):
        super().setUp()
        self.use_databases()
        self.use_fake_transport()
        self.flags(group='conductor', stuck_build_timeout_seconds=TIMEOUT)
        self.checker = stuck_builds.StuckBuilds(self.conf, 'conductor1')
        self.checker.query_client = mock.Mock()

    def _instance(self, uuid, ctxt=None, age=2 * TIMEOUT, vm_state='building',
                  task_state='spawning', host='c1', event_open=True, request_id='req-1'):
        """An instance of a build that reached ``host``, last written ``age`` s ago."""
        ctxt = ctxt or self.ctxt
        instance = objects.Instance(ctxt, uuid=uuid, vm_state=vm_state, task_state=task_state,
                                    host=host, node=host and host + '-node',
                                    launched_on=host, project_id='p', user_id='u',
                                    flavor=fakes.fake_flavor(), availability_zone='az1')
        instance.create()
        actx = ms_context.RequestContext(is_admin=True, request_id=request_id)
        actx.db_connection = getattr(ctxt, 'db_connection', None)
        instance_action.InstanceAction.action_start(actx, uuid, 'create', want_result=False)
        for event in ('schedule', BUILD_EVENT):
            instance_action.InstanceActionEvent.event_start(actx, uuid, event, want_result=False,
                                                            host=host)
            if event == 'schedule' or not event_open:
                instance_action.InstanceActionEvent.event_finish_with_failure(
                    actx, uuid, event, want_result=False)
        self._age(uuid, age, ctxt)
        return instance

    def _age(self, uuid, seconds, ctxt=None):
        when = timeutils.utcnow() - datetime.timedelta(seconds=seconds)
        engine = engines.main_engine(ctxt or self.ctxt)
        with engine.begin() as conn:
            conn.execute(sa.text('UPDATE instances SET created_at = :t, updated_at = :t '
                                 'WHERE uuid = :u'), {'t': when, 'u': uuid})

    def _get(self, uuid, ctxt=None):
        return objects.Instance.get_by_uuid(ctxt or self.ctxt, uuid)

    def _faults(self, uuid, ctxt=None):
        return [f.message for f in objects.InstanceFaultList.get_by_instance_uuids(
            ctxt or self.ctxt, [uuid])]

    def _events(self, uuid, ctxt=None):
        ctxt = ctxt or self.ctxt
        action, = objects.InstanceActionList.get_by_instance_uuid(ctxt, uuid)
        events = objects.InstanceActionEventList.get_by_action(ctxt, action.id)
        return action, {(e.event, e.host): (e.result, e.details) for e in events}


class TestStuckInstances(StuckBuildsTestCase):

    def test_stuck_build_ends_in_error_with_a_fault_and_its_action_finished(self):
        self._instance(base.uuids.stuck)
        self.assertEqual([base.uuids.stuck], self.checker.run(self.ctxt))
        instance = self._get(base.uuids.stuck)
        self.assertEqual(('error', None), (instance.vm_state, instance.task_state))
        # released as a failed build: its compute's next refresh no longer counts it
        self.assertEqual((None, None, None, None), (instance.host, instance.node,
                                                    instance.launched_on,
                                                    instance.availability_zone))
        self.assertEqual([STUCK_MESSAGE], self._faults(base.uuids.stuck))
        fault, = objects.InstanceFaultList.get_by_instance_uuids(self.ctxt, [base.uuids.stuck])
        self.assertEqual(('c1', 500), (fault.host, fault.code))
        action, events = self._events(base.uuids.stuck)
        self.assertEqual('Error', action.message)
        self.assertEqual({('schedule', 'c1'): ('Success', None),
                          (BUILD_EVENT, 'c1'): ('Error', STUCK_MESSAGE)}, events)
        self.checker.query_client.delete_instance_info.assert_called_once_with(
            mock.ANY, 'c1', base.uuids.stuck)

    def test_recent_deleting_and_finished_builds_are_left_alone(self):
        self._instance(base.uuids.recent, age=TIMEOUT // 2)
        self._instance(base.uuids.deleting, task_state='deleting')
        self._instance(base.uuids.active, vm_state='active', task_state=None)
        self._instance(base.uuids.error, vm_state='error', task_state=None)
        self.assertEqual([], self.checker.run(self.ctxt))
        self.assertEqual('building', self._get(base.uuids.recent).vm_state)
        self.assertEqual('building', self._get(base.uuids.deleting).vm_state)
        for uuid in (base.uuids.recent, base.uuids.active, base.uuids.error):
            self.assertEqual([], self._faults(uuid))
        self.checker.query_client.delete_instance_info.assert_not_called()

    def test_only_one_of_several_conductors_ends_a_build(self):
        self._instance(base.uuids.stuck)
        other = stuck_builds.StuckBuilds(self.conf, 'conductor2')
        other.query_client = mock.Mock()
        self.assertEqual([base.uuids.stuck], self.checker.run(self.ctxt))
        self.assertEqual([], other.run(self.ctxt))
        self.assertEqual(1, len(self._faults(base.uuids.stuck)))

    def test_a_build_that_moved_on_since_it_was_read_is_left_alone(self):
        self._instance(base.uuids.stuck, task_state=None)
        read = self._get(base.uuids.stuck)
        # The compute's claim went through meanwhile (it writes task_state spawning).
        current = self._get(base.uuids.stuck)
        current.task_state = 'spawning'
        current.save()
        self.assertFalse(self.checker._end(self.ctxt, self.ctxt, None, read))
        self.assertEqual(('building', 'spawning'), (self._get(base.uuids.stuck).vm_state,
                                                    self._get(base.uuids.stuck).task_state))
        self.assertEqual([], self._faults(base.uuids.stuck))

    def test_without_an_open_event_the_conductor_records_its_own(self):
        self._instance(base.uuids.stuck, task_state='scheduling', host=None, event_open=False)
        self.checker.run(self.ctxt)
        action, events = self._events(base.uuids.stuck)
        self.assertEqual('Error', action.message)
        self.assertEqual(('Error', STUCK_MESSAGE), events[(stuck_builds.EVENT, 'conductor1')])
        self.assertEqual(('Success', None), events[(BUILD_EVENT, None)])
        # no host: no scheduler tracks it
        self.checker.query_client.delete_instance_info.assert_not_called()

    def test_schedulers_are_not_told_when_they_do_not_track_instances(self):
        self.flags(group='filter_scheduler', track_instance_changes=False)
        self._instance(base.uuids.stuck)
        self.checker.run(self.ctxt)
        self.checker.query_client.delete_instance_info.assert_not_called()

    def test_zero_disables_the_check(self):
        self.flags(group='conductor', stuck_build_timeout_seconds=0)
        self._instance(base.uuids.stuck)
        self.assertEqual([], self.checker.run(self.ctxt))
        self.assertEqual('building', self._get(base.uuids.stuck).vm_state)

    def test_an_api_database_that_does_not_answer_ends_the_check_with_one_warning(self):
        self._instance(base.uuids.stuck)
        self._point_api_database_at('postgresql+psycopg2://u:p@127.0.0.1:%d/api'
                                    % local_ports.closed_port())
        with self.assertLogs(stuck_builds.LOG, 'WARNING') as logs:
            self.assertEqual([], self.checker.run(self.ctxt))
        self.assertEqual(1, len(logs.records))
        message = logs.records[0].getMessage()
        self.assertIn('Could not check for stuck builds: the API database did not answer '
                      '(OperationalError: ', message)
        self.assertIn('checking again in 60 s', message)
        self.assertIsNone(logs.records[0].exc_info)
        self.assertEqual('building', self._get(base.uuids.stuck).vm_state)

    def test_an_api_database_without_its_schema_is_the_periodic_tasks_to_report(self):
        empty = self.new_cell_database('empty-api')
        with sa.create_engine(empty).begin() as conn:
            conn.execute(sa.text('DROP TABLE IF EXISTS cell_mappings'))
        self._point_api_database_at(empty)
        self.assertRaises(db_exc.DBNonExistentTable, self.checker.run, self.ctxt)

    def _point_api_database_at(self, url):
        self.flags(group='api_database', connection=url, max_retries=0)
        engines.dispose_all()
        engines.configure(self.conf)

    def test_check_spacing_follows_the_bound(self):
        self.assertEqual([-1, 1, 5, 60, 60],
                         [stuck_builds.check_spacing(t) for t in (0, 3, 20, 240, 7200)])

    def test_the_conductor_runs_the_check_as_a_periodic_task(self):
        self.flags(group='conductor', stuck_build_timeout_seconds=20)
        manager = conductor_manager.ConductorManager(self.conf, host='conductor1')
        self.assertEqual(5, manager._periodic_spacing['_fail_stuck_builds'])
        self.flags(group='conductor', stuck_build_timeout_seconds=0)
        manager = conductor_manager.ConductorManager(self.conf, host='conductor1')
        self.assertNotIn('_fail_stuck_builds', [name for name, _ in manager._periodic_tasks])


class TestDeadOwner(StuckBuildsTestCase):
    """A build whose compute service is down is ended after DEAD_OWNER_DOWN_TIMES down times
    (5 minutes), not after the full bound; one on a live compute keeps the full bound."""

    def _service(self, host, silent_seconds):
        service = objects.Service(self.ctxt, host=host, binary='minisched-compute',
                                  topic='compute', report_count=1)
        service.create()
        when = timeutils.utcnow() - datetime.timedelta(seconds=silent_seconds)
        with engines.main_engine(self.ctxt).begin() as conn:
            conn.execute(sa.text('UPDATE services SET last_seen_up = :t, created_at = :t '
                                 'WHERE host = :h'), {'t': when, 'h': host})

    def test_a_build_on_a_dead_compute_is_ended_in_minutes(self):
        self.assertEqual(300, self.checker.dead_owner_timeout)  # 5 x service_down_time 60
        self._service('dead', silent_seconds=400)
        self._service('alive', silent_seconds=5)
        self._instance(base.uuids.on_dead, host='dead', age=310)
        self._instance(base.uuids.on_alive, host='alive', age=310)
        self._instance(base.uuids.recent_on_dead, host='dead', age=200)
        self._instance(base.uuids.unplaced, host=None, task_state='scheduling', age=310)
        with self.assertLogs('minisched.conductor.stuck_builds', 'WARNING') as logs:
            self.assertEqual([base.uuids.on_dead], self.checker.run(self.ctxt))
        self.assertIn('host dead, its compute service down) with no progress for 300 s',
                      logs.output[0])
        self.assertEqual([exception.InstanceBuildStuck(seconds=300).format_message()],
                         self._faults(base.uuids.on_dead))
        for uuid in (base.uuids.on_alive, base.uuids.recent_on_dead, base.uuids.unplaced):
            self.assertEqual('building', self._get(uuid).vm_state)

    def test_the_conductors_own_outage_is_not_the_computes_death(self):
        """Silent 400 s, 370 of them while this conductor was itself cut off: up."""
        from minisched.servicegroup import outages
        self._service('c1', silent_seconds=400)
        self._instance(base.uuids.stuck, age=310)
        outages.OWN.begin(outages.REPORT, timeutils.utcnow() - datetime.timedelta(seconds=390))
        outages.OWN.end(outages.REPORT, timeutils.utcnow() - datetime.timedelta(seconds=20))
        self.assertEqual([], self.checker.run(self.ctxt))
        self.assertEqual('building', self._get(base.uuids.stuck).vm_state)


class TestCells(StuckBuildsTestCase):
    """With cells mapped: every cell is checked, the API records are completed."""

    def setUp(self):
        super().setUp()
        self.cell0 = objects.CellMapping(self.ctxt, uuid=objects.CellMapping.CELL0_UUID,
                                         name='cell0', transport_url='none:///',
                                         database_connection=self.new_cell_database('cell0'))
        self.cell0.create()
        self.cell1 = objects.CellMapping(self.ctxt, uuid=base.uuids.cell1, name='cell1',
                                         transport_url='none:///',
                                         database_connection=self.new_cell_database('cell1'))
        self.cell1.create()

    def _in(self, cell):
        with ms_context.target_cell(self.ctxt, cell) as cctxt:
            return cctxt

    def _request(self, uuid, mapped_to=None, mapping=True, age=2 * TIMEOUT):
        """A build request (with its spec and, if ``mapping``, its instance mapping)."""
        instance = objects.Instance(self.ctxt, uuid=uuid, vm_state='building',
                                    task_state='scheduling', project_id='p', user_id='u',
                                    flavor=fakes.fake_flavor())
        objects.RequestSpec(self.ctxt, instance_uuid=uuid, flavor=fakes.fake_flavor(),
                            num_instances=1, project_id='p').create()
        objects.BuildRequest(self.ctxt, instance_uuid=uuid, project_id='p',
                             instance=instance).create()
        if mapping:
            objects.InstanceMapping(self.ctxt, instance_uuid=uuid, project_id='p',
                                    user_id='u', cell_mapping=mapped_to).create()
        when = timeutils.utcnow() - datetime.timedelta(seconds=age)
        with engines.api_engine().begin() as conn:
            conn.execute(sa.text('UPDATE build_requests SET created_at = :t '
                                 'WHERE instance_uuid = :u'), {'t': when, 'u': uuid})

    def test_stuck_instance_of_a_half_written_build_gets_its_api_records_completed(self):
        # A conductor stopped after creating the instance in cell1, before mapping it.
        self._request(base.uuids.stuck)
        cctxt = self._in(self.cell1)
        self._instance(base.uuids.stuck, ctxt=cctxt, task_state='scheduling', host=None)
        self.assertEqual([base.uuids.stuck], self.checker.run(self.ctxt))
        self.assertEqual('error', self._get(base.uuids.stuck, cctxt).vm_state)
        self.assertEqual([STUCK_MESSAGE], self._faults(base.uuids.stuck, cctxt))
        mapping = objects.InstanceMapping.get_by_instance_uuid(self.ctxt, base.uuids.stuck)
        self.assertEqual(self.cell1.uuid, mapping.cell_mapping.uuid)
        self.assertRaises(exception.BuildRequestNotFound,
                          objects.BuildRequest.get_by_instance_uuid, self.ctxt,
                          base.uuids.stuck)
        objects.RequestSpec.get_by_instance_uuid(self.ctxt, base.uuids.stuck)  # kept

    def test_unprocessed_build_request_is_buried_in_cell0(self):
        self._request(base.uuids.lost)
        self._request(base.uuids.young, age=TIMEOUT // 2)
        self.assertEqual([base.uuids.lost], self.checker.run(self.ctxt))
        cctxt = self._in(self.cell0)
        instance = self._get(base.uuids.lost, cctxt)
        self.assertEqual(('error', None), (instance.vm_state, instance.task_state))
        message = exception.BuildRequestNotProcessed(seconds=TIMEOUT).format_message()
        self.assertEqual([message], self._faults(base.uuids.lost, cctxt))
        action, events = self._events(base.uuids.lost, cctxt)
        self.assertEqual(('create', 'Error'), (action.action, action.message))
        self.assertEqual({(stuck_builds.EVENT, 'conductor1'): ('Error', message)}, events)
        mapping = objects.InstanceMapping.get_by_instance_uuid(self.ctxt, base.uuids.lost)
        self.assertTrue(mapping.cell_mapping.is_cell0())
        self.assertRaises(exception.BuildRequestNotFound,
                          objects.BuildRequest.get_by_instance_uuid, self.ctxt,
                          base.uuids.lost)
        objects.BuildRequest.get_by_instance_uuid(self.ctxt, base.uuids.young)  # too young

    def test_a_conductor_that_placed_the_request_meanwhile_wins(self):
        self._request(base.uuids.placed)
        request = objects.BuildRequest.get_by_instance_uuid(self.ctxt, base.uuids.placed)
        mapping = objects.InstanceMapping.get_by_instance_uuid(self.ctxt, base.uuids.placed)
        mapping.cell_mapping = self.cell1  # the build flow maps it between our read and take
        mapping.save()
        self.assertFalse(self.checker._bury(self.ctxt, request, self.cell0))
        deleted = self._in(self.cell0).elevated(read_deleted='yes')
        self.assertTrue(self._get(base.uuids.placed, deleted).deleted)  # its copy removed
        objects.BuildRequest.get_by_instance_uuid(self.ctxt, base.uuids.placed)

    def test_build_request_without_mapping_is_removed_with_its_spec(self):
        self._request(base.uuids.half, mapping=False)
        self.assertEqual([], self.checker.run(self.ctxt))
        self.assertRaises(exception.BuildRequestNotFound,
                          objects.BuildRequest.get_by_instance_uuid, self.ctxt,
                          base.uuids.half)
        self.assertRaises(exception.RequestSpecNotFound,
                          objects.RequestSpec.get_by_instance_uuid, self.ctxt,
                          base.uuids.half)

    def test_placed_build_requests_are_left_to_their_cell(self):
        self._request(base.uuids.placed, mapped_to=self.cell1)
        self.assertEqual([], self.checker.run(self.ctxt))
        objects.BuildRequest.get_by_instance_uuid(self.ctxt, base.uuids.placed)

