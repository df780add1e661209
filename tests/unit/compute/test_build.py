"""A build through an outage: a compute (fake driver) over real SQLite databases, with the
conductor's answers replaced, call by call, by the errors an outage brings."""
from unittest import mock

from minisched.compute import build
from minisched.compute import manager as compute_manager
from minisched import context as ms_context
from minisched import exception
from minisched import objects
from minisched.objects import instance_action
from minisched.objects import instance_fault
from minisched import utils
from tests.unit.conductor import test_db_errors
from tests.unit import base
from tests.unit import fakes
from tests.unit import sqlite_databases

HOST = 'c1'
NODE = 'c1'
EVENT = build.EVENT


def _outage(times):
    """The errors ``times`` conductor calls get while the database is away."""
    return [exception.DBTransientError(reason='OperationalError: connection refused')] * times


class BuildTestCase(sqlite_databases.SqliteDatabases, base.TestCase):

    def setUp(self):
        super().setUp()
        self.use_databases()
        self.use_fake_transport()
        self.flags(host=HOST, long_rpc_timeout=60)
        self.flags(group='fake_driver', vcpus=8, memory_mb=8192, local_gb=100)
        self.manager = compute_manager.ComputeManager(self.conf, host=HOST)
        self.manager.init_host()
        self.manager.update_available_resource(self.ctxt, startup=True)
        self.clock = test_db_errors.FakeClock()
        patcher = mock.patch.object(utils, 'time', self.clock)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.rctxt = ms_context.RequestContext(is_admin=True, request_id='req-build')

    def _instance(self, uuid=base.uuids.instance, **kw):
        values = dict(uuid=uuid, vm_state='building', task_state='scheduling',
                      project_id='p', user_id='u', flavor=fakes.fake_flavor(memory_mb=1024))
        values.update(kw)
        instance = objects.Instance(self.rctxt, **values)
        instance.create()
        instance_action.InstanceAction.action_start(self.rctxt, uuid, 'create',
                                                    want_result=False)
        return instance

    def _fail_calls(self, cls, method, errors):
        """The next calls of ``cls.method`` raise ``errors`` (one each), then run."""
        real = getattr(cls, method)
        errors = list(errors)

        def flaky(*args, **kwargs):
            if errors:
                raise errors.pop(0)
            return real(*args, **kwargs)
        patcher = mock.patch.object(cls, method, flaky)
        patcher.start()
        self.addCleanup(patcher.stop)
        return errors

    def _build(self, instance):
        return self.manager.builder.build(self.rctxt, instance, {}, None, {}, NODE, None, [])

    def _state(self, uuid=base.uuids.instance):
        instance = objects.Instance.get_by_uuid(self.ctxt, uuid)
        return instance.vm_state, instance.task_state, instance.host

    def _faults(self, uuid=base.uuids.instance):
        return [f.message for f in objects.InstanceFaultList.get_by_instance_uuids(
            self.ctxt, [uuid])]

    def _events(self, uuid=base.uuids.instance):
        action, = objects.InstanceActionList.get_by_instance_uuid(self.ctxt, uuid)
        return [(e.event, e.host, e.result) for e in
                objects.InstanceActionEventList.get_by_action(self.ctxt, action.id)]

    def _memory_used(self):
        return self.manager.rt.compute_nodes[NODE].memory_mb_used


class TestBuildThroughAnOutage(BuildTestCase):

    def test_saves_claim_and_events_are_retried_until_the_database_is_back(self):
        instance = self._instance()
        saves = self._fail_calls(objects.Instance, 'save', _outage(3))
        events = self._fail_calls(instance_action.InstanceActionEvent,
                                  'finish_with_failure', _outage(2))
        self.assertEqual(build.ACTIVE, self._build(instance))
        self.assertEqual(([], []), (saves, events))
        self.assertEqual(('active', None, HOST), self._state())
        self.assertEqual([(EVENT, HOST, 'Success')], self._events())
        self.assertEqual([1, 2, 4, 1, 2], self.clock.sleeps)  # backoff per write

    def test_failure_record_is_retried_too(self):
        self.flags(group='fake_driver', spawn_failure='abort')
        instance = self._instance()
        faults = self._fail_calls(instance_fault.InstanceFault, 'create', _outage(2))
        self.assertEqual(build.FAILED, self._build(instance))
        self.assertEqual([], faults)
        self.assertEqual(('error', None, None), self._state())
        self.assertEqual(['Build of instance %s aborted: fake driver told to abort'
                          % instance.uuid], self._faults())
        self.assertEqual([(EVENT, HOST, 'Error')], self._events())

    def test_writes_that_never_get_through_leave_the_build_to_the_conductor(self):
        self.flags(long_rpc_timeout=10)
        instance = self._instance()
        self._build_until_spawned(instance)
        # Nothing more could be written: BUILDING, for the conductor's stuck-build check.
        self.assertEqual(('building', 'spawning', HOST), self._state())
        self.assertEqual([], self._faults())
        self.assertEqual([(EVENT, HOST, None)], self._events())

    def _build_until_spawned(self, instance):
        real_spawn = self.manager.driver.spawn

        def spawn_then_outage(*args, **kwargs):
            real_spawn(*args, **kwargs)
            for cls, method in ((objects.Instance, 'save'),
                                (instance_fault.InstanceFault, 'create'),
                                (instance_action.InstanceActionEvent,
                                 'finish_with_failure')):
                self._fail_calls(cls, method, _outage(100))
        with mock.patch.object(self.manager.driver, 'spawn', spawn_then_outage):
            self.assertEqual(build.FAILED, self._build(instance))

    def test_messaging_timeouts_are_still_retried(self):
        import oslo_messaging as messaging
        instance = self._instance()
        self._fail_calls(objects.Instance, 'save', [messaging.MessagingTimeout('t')] * 2)
        self.assertEqual(build.ACTIVE, self._build(instance))
        self.assertEqual([1, 2], self.clock.sleeps)

    def test_every_give_up_of_the_message_bus_is_retried(self):
        """oslo.messaging gives up reconnecting (calls are prepared with a bounded retry
        count), or a kombu/py-amqp/socket error escapes it: each is retried, on every
        write of the build, fault and events included, and the build ends with its fault."""
        import amqp.exceptions
        import kombu.exceptions
        import oslo_messaging as messaging
        gave_up = [messaging.MessageDeliveryFailure(
                       'Unable to connect to AMQP server on 127.0.0.1:5672 after 8 tries'),
                   kombu.exceptions.OperationalError('[Errno 111] Connection refused'),
                   amqp.exceptions.RecoverableConnectionError('connection already closed'),
                   ConnectionResetError(104, 'Connection reset by peer')]
        self.flags(group='fake_driver', spawn_failure='abort')
        instance = self._instance()
        saves = self._fail_calls(objects.Instance, 'save', gave_up)
        faults = self._fail_calls(instance_fault.InstanceFault, 'create', gave_up[:2])
        events = self._fail_calls(instance_action.InstanceActionEvent,
                                  'finish_with_failure', gave_up[2:])
        with self.assertLogs('minisched.compute.build', 'WARNING') as logs:
            self.assertEqual(build.FAILED, self._build(instance))
        self.assertEqual(([], [], []), (saves, faults, events))
        self.assertEqual(('error', None, None), self._state())
        self.assertEqual(['Build of instance %s aborted: fake driver told to abort'
                          % instance.uuid], self._faults())
        self.assertEqual([(EVENT, HOST, 'Error')], self._events())
        self.assertIn('The message bus is unreachable: MessageDeliveryFailure: Unable to '
                      'connect to AMQP server', logs.output[0])
        self.assertFalse(any('Traceback' in line for line in logs.output))

    def test_a_remote_error_is_not_retried(self):
        """The conductor answered: its refusal is not an outage."""
        import oslo_messaging as messaging
        instance = self._instance()
        self._fail_calls(objects.Instance, 'save', [messaging.RemoteError('Forbidden')] * 5)
        self.assertEqual(build.FAILED, self._build(instance))
        self.assertEqual([], self.clock.sleeps)


class TestBuildEndedElsewhere(BuildTestCase):
    """The conductor's stuck-build check ended the build while it was still spawning."""

    def _end_during_spawn(self, instance):
        real_spawn = self.manager.driver.spawn

        def spawn_and_be_ended(*args, **kwargs):
            real_spawn(*args, **kwargs)
            current = objects.Instance.get_by_uuid(self.ctxt, instance.uuid)
            current.vm_state, current.task_state, current.host = 'error', None, None
            current.save()
        return mock.patch.object(self.manager.driver, 'spawn', spawn_and_be_ended)

    def test_compute_removes_the_guest_gives_the_claim_back_and_writes_nothing(self):
        instance = self._instance()
        used_before = self._memory_used()
        with self._end_during_spawn(instance):
            self.assertEqual(build.SUPERSEDED, self._build(instance))
        self.assertEqual(('error', None, None), self._state())
        self.assertEqual([], self._faults())
        self.assertEqual([(EVENT, HOST, None)], self._events())  # left to who ended it
        self.assertNotIn(instance.uuid, self.manager.driver.list_instances())
        self.assertEqual(used_before, self._memory_used())
        self.assertNotIn(instance.uuid, self.manager.rt.tracked_instances)

    def test_a_build_ended_before_it_started_is_not_built(self):
        instance = self._instance(vm_state='error', task_state=None)
        self.assertEqual(build.DUPLICATE, self._build(instance))
        self.assertEqual([], self.manager.driver.list_instances())
        # Its event says so: a second Success would count the instance as built twice.
        self.assertEqual([(EVENT, HOST, 'Error')], self._events())


class TestInitInstance(BuildTestCase):
    """A compute that restarts finds the build it was running: Nova's ERROR, with a fault."""

    def _interrupted(self):
        instance = self._instance(task_state='spawning', host=HOST, node=NODE)
        instance_action.InstanceActionEvent.event_start(self.rctxt, instance.uuid, EVENT,
                                                        want_result=False, host=HOST)
        return objects.Instance.get_by_uuid(self.ctxt, instance.uuid)

    def test_interrupted_build_ends_in_error_with_a_fault_and_its_event_finished(self):
        self.manager._init_instance(self._interrupted())
        self.assertEqual(('error', None, HOST), self._state())  # keeps its host, as in Nova
        message = exception.InstanceBuildInterrupted().format_message()
        self.assertEqual([message], self._faults())
        self.assertEqual([(EVENT, HOST, 'Error')], self._events())

    def test_without_a_database_the_build_is_left_to_the_conductor(self):
        instance = self._interrupted()
        self._fail_calls(instance_fault.InstanceFault, 'create', _outage(1))
        self.manager._init_instance(instance)
        self.assertEqual(('building', 'spawning', HOST), self._state())
        self.assertEqual([(EVENT, HOST, None)], self._events())


class TestInitInstanceDeleting(BuildTestCase):
    """A compute that restarts finds an instance left DELETING (it stopped while deleting
    it, or the API's cast never reached it): it deletes it again, as Nova's compute does."""

    def setUp(self):
        super().setUp()
        instance = self._instance()
        self.assertEqual(build.ACTIVE, self._build(instance))
        self.used_by_none = self._memory_used() - 1024
        instance = objects.Instance.get_by_uuid(self.ctxt, instance.uuid)
        instance.task_state = 'deleting'
        instance.save()

    def _restart(self):
        """A new manager for the same host; its schedulers' client is watched."""
        manager = compute_manager.ComputeManager(self.conf, host=HOST)
        manager.query_client = mock.Mock()
        manager.init_host()
        return manager

    def test_the_deletion_is_finished_at_start_up(self):
        with self.assertLogs('minisched.compute.manager', 'INFO') as logs:
            manager = self._restart()
        self.assertIn('Restarting the deletion now', logs.output[0])
        self.assertRaises(exception.InstanceNotFound, objects.Instance.get_by_uuid, self.ctxt,
                          base.uuids.instance)
        # The schedulers are told it is gone, and not told of it as one of the host's.
        manager.query_client.delete_instance_info.assert_called_once_with(
            mock.ANY, HOST, base.uuids.instance)
        manager.query_client.update_instance_info.assert_not_called()
        manager.update_available_resource(self.ctxt, startup=True)
        self.assertEqual(self.used_by_none,
                         manager.rt.compute_nodes[NODE].memory_mb_used)

    def test_a_later_terminate_of_the_same_instance_is_not_an_error(self):
        # The API's cast, still queued when the compute restarted, arrives after it.
        instance = objects.Instance.get_by_uuid(self.ctxt, base.uuids.instance)
        manager = self._restart()
        manager.terminate_instance(self.rctxt, instance)
        action, = objects.InstanceActionList.get_by_instance_uuid(
            self.ctxt.elevated(read_deleted='yes'), base.uuids.instance)
        results = {e.event: e.result for e in objects.InstanceActionEventList.get_by_action(
            self.ctxt.elevated(read_deleted='yes'), action.id)}
        self.assertEqual('Success', results['compute_terminate_instance'])

    def test_without_the_conductor_the_instance_is_left_deleting(self):
        self._fail_calls(objects.Instance, 'save', _outage(1))
        manager = self._restart()
        self.assertEqual(('active', 'deleting', HOST), self._state())
        manager.query_client.delete_instance_info.assert_not_called()

    def test_a_deletion_that_fails_leaves_the_instance_in_error(self):
        self._fail_calls(objects.Instance, 'destroy', [RuntimeError('boom')])
        with self.assertLogs('minisched.compute.manager', 'ERROR'):
            self._restart()
        self.assertEqual(('error', None, HOST), self._state())  # a new delete finishes it
