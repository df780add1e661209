"""compute_task at Nova 34's 1.26: the methods minisched does not implement are answered with
NotSupported naming the method (and one ERROR line), never dropped or refused as malformed."""
import logging
from unittest import mock

import oslo_messaging as messaging

from minisched.conductor import compute_task
from minisched.conductor import unsupported
from minisched import exception
from minisched.messaging import monitored_dispatcher
from minisched.messaging import wire
from minisched import rpc
from tests.unit import base


class UnsupportedTasksTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.use_fake_transport()
        self.dispatcher = monitored_dispatcher.MonitoredDispatcher(
            [compute_task.ComputeTaskManager(self.conf, 'conductor1')], rpc.get_serializer(),
            messaging.DefaultRPCAccessPolicy, outgoing=wire.PROFILES[wire.NOVA].outgoing)

    def _send(self, method, **args):
        incoming = mock.Mock(ctxt={'request_id': 'req-1'}, client_timeout=None, message={
            'method': method, 'namespace': 'compute_task', 'version': '1.26', 'args': args})
        with self.assertRaises(messaging.ExpectedException) as raised:
            self.dispatcher.dispatch(incoming)
        return raised.exception.exc_info[1]

    def test_the_endpoint_is_at_1_26(self):
        self.assertEqual('1.26', compute_task.ComputeTaskManager.target.version)

    def test_each_unimplemented_method_answers_not_supported_naming_it(self):
        for method in unsupported.METHODS:
            with self.assertLogs('minisched.conductor.unsupported', logging.ERROR) as logs:
                error = self._send(method, instance={'nova_object.data': {'uuid': 'u-1'}})
            self.assertEqual(('nova.exception', 'NotSupported'),
                             (type(error).__module__, type(error).__name__))
            self.assertIn('compute_task.%s is not supported' % method, str(error))
            self.assertIn('u-1', logs.output[0])
            self.assertIn('req-1', logs.output[0])

    def test_objects_minisched_lacks_do_not_turn_the_answer_into_a_refusal(self):
        migration = {'nova_object.name': 'Migration', 'nova_object.namespace': 'nova',
                     'nova_object.version': '1.7', 'nova_object.data': {}}
        with self.assertLogs('minisched.conductor.unsupported', logging.ERROR):
            error = self._send('confirm_snapshot_based_resize', instance=None,
                               migration=migration)
        self.assertEqual('NotSupported', type(error).__name__)

    def test_minischeds_own_exception_names_the_method(self):
        error = exception.NotSupported(method='compute_task.attach_volume', reason='r')
        self.assertEqual('compute_task.attach_volume is not supported by minisched: r',
                         error.format_message())
