"""The wire profiles (minisched.messaging.wire): Nova's object namespace both ways, errors
under nova.exception's names and back, and the defaults each profile gives oslo.messaging.

Errors go through oslo.messaging's own (de)serialization of failures, the code its rabbit
driver runs; the broker path is in tests/functional/test_nova_client.py.
"""
import os
import subprocess
import sys
import tempfile
from unittest import mock

import oslo_messaging as messaging
from oslo_messaging._drivers import amqp as _amqp
from oslo_messaging._drivers import common as driver_common

from minisched import context
from minisched import exception
from minisched import objects
from minisched import rpc
from minisched.messaging import monitored_dispatcher
from minisched.messaging import wire
from tests.unit import base

NOVA = wire.PROFILES[wire.NOVA]


def _selection(host):
    return objects.Selection(
        service_host=host, nodename=host, compute_node_uuid=base.uuids.node,
        cell_uuid=base.uuids.cell, limits=objects.SchedulerLimits(vcpu=4),
        allocation_request=None, allocation_request_version=None)


def _sent(error):
    """The failure text the rabbit driver sends for ``error`` under the Nova profile."""
    try:
        raise error
    except Exception:
        return driver_common.serialize_remote_exception(NOVA.outgoing(sys.exc_info()))


class NamespaceSerializerTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.ctxt = context.get_admin_context()
        patcher = mock.patch.object(rpc, 'PROFILE', NOVA)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.serializer = rpc.get_serializer()

    def test_objects_leave_in_novas_namespace_at_every_depth(self):
        sent = self.serializer.serialize_entity(self.ctxt, [[_selection('h1')]])
        primitive = sent[0][0]
        self.assertEqual('nova', primitive['nova_object.namespace'])
        self.assertEqual('Selection', primitive['nova_object.name'])
        limits = primitive['nova_object.data']['limits']
        self.assertEqual({'nova_object.name', 'nova_object.namespace', 'nova_object.version',
                          'nova_object.data', 'nova_object.changes'}, set(limits))
        self.assertNotIn('minisched_object', repr(sent))

    def test_novas_primitives_load_as_minisched_objects(self):
        sent = self.serializer.serialize_entity(self.ctxt, (_selection('h1'), {'k': [1]}))
        loaded = self.serializer.deserialize_entity(self.ctxt, sent)
        self.assertIsInstance(loaded[0], objects.Selection)
        self.assertEqual('h1', loaded[0].service_host)
        self.assertEqual(4, loaded[0].limits.vcpu)
        self.assertEqual({'k': [1]}, loaded[1])

    def test_another_projects_namespace_is_refused_not_renamed(self):
        sent = self.serializer.serialize_entity(self.ctxt, _selection('h1'))
        sent['nova_object.namespace'] = 'cinder'
        self.assertRaises(exception.UnsupportedObjectError,
                          self.serializer.deserialize_entity, self.ctxt, sent)

    def test_plain_values_pass_unchanged(self):
        for value in (None, 3, 'x', [1, 'a'], {'nova': 'nova_object.name'}):
            self.assertEqual(value, self.serializer.deserialize_entity(self.ctxt, value))


class NovaErrorsTestCase(base.TestCase):

    def test_errors_nova_has_travel_under_their_own_name_from_nova_exception(self):
        sent = _sent(exception.NoValidHost(reason='ram rejected 3 of 3'))
        self.assertIn('"module": "nova.exception"', sent)
        self.assertIn('"class": "NoValidHost"', sent)
        self.assertIn('"reason": "ram rejected 3 of 3"', sent)

    def test_errors_nova_lacks_travel_as_their_nearest_ancestor_nova_has(self):
        self.assertEqual('Invalid', wire.nova_name(exception.InvalidObjectRequest))
        self.assertEqual('MaxRetriesExceeded', wire.nova_name(exception.MaxRetriesExceeded))
        self.assertEqual('NovaException', wire.nova_name(exception.DBTransientError))
        self.assertEqual('NotSupported', wire.nova_name(exception.NotSupported))
        self.assertIn('"class": "Invalid"', _sent(exception.InvalidObjectRequest(reason='x')))

    def test_every_minisched_error_has_a_name_from_the_checked_list(self):
        for cls in vars(exception).values():
            if isinstance(cls, type) and issubclass(cls, exception.MinischedException):
                name = wire.nova_name(cls)
                self.assertIn(name, wire.NOVA_EXCEPTIONS | {'NovaException'}, cls)

    def test_builtin_and_library_errors_travel_as_they_are(self):
        self.assertIn('"module": "builtins"', _sent(ValueError('bad')))

    def test_minischeds_client_rebuilds_its_own_class_and_arguments(self):
        for error in (exception.DBTransientError(reason='deadlock'),
                      exception.NoValidHost(reason='none'),
                      exception.InstanceNotFound(instance_id=base.uuids.instance)):
            remote = driver_common.deserialize_remote_exception(_sent(error),
                                                                rpc.ALLOWED_EXMODS)
            self.assertIsInstance(remote, messaging.RemoteError)  # nova.exception not allowed
            rebuilt = NOVA.rebuild(remote)
            self.assertIs(type(error), type(rebuilt))
            self.assertEqual(error.format_message(), rebuilt.format_message())
            self.assertEqual(error.kwargs, rebuilt.kwargs)

    def test_a_remote_error_without_note_is_rebuilt_by_its_class_name(self):
        rebuilt = NOVA.rebuild(messaging.RemoteError('NoValidHost', 'No valid host', []))
        self.assertIsInstance(rebuilt, exception.NoValidHost)
        unknown = messaging.RemoteError('KeyError', 'x', [])
        self.assertIs(unknown, NOVA.rebuild(unknown))

    def test_the_dispatcher_sends_what_the_profile_makes_of_an_error(self):
        class Endpoint:
            target = messaging.Target(version='1.0')

            def take(self, ctxt):
                raise exception.NoValidHost(reason='nothing fits')

        dispatcher = monitored_dispatcher.MonitoredDispatcher(
            [Endpoint()], None, messaging.DefaultRPCAccessPolicy, outgoing=NOVA.outgoing)
        incoming = mock.Mock(ctxt={}, message={'method': 'take', 'args': {},
                                                'version': '1.0'}, client_timeout=None)
        with self.assertRaises(messaging.ExpectedException) as raised:
            dispatcher.dispatch(incoming)
        error = raised.exception.exc_info[1]
        self.assertEqual(('nova.exception', 'NoValidHost'),
                         (type(error).__module__, type(error).__name__))


class ProfileDefaultsTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        # The rabbit driver's options, which the fake transport does not register.
        self.conf.register_opts(_amqp.amqp_opts, group='oslo_messaging_rabbit')
        self.addCleanup(wire.PROFILES[wire.MINISCHED].set_defaults)

    def _init(self, *lines):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        path = os.path.join(folder.name, 'minisched.conf')
        with open(path, 'w') as f:
            f.write('\n'.join(lines) + '\n')
        self.conf(['--config-file', path], project='minisched', default_config_files=[],
                  default_config_dirs=[])
        rpc.init(self.conf, url='fake://')
        self.addCleanup(rpc.cleanup)

    def test_nova_profile_sets_novas_exchange_and_transient_queues(self):
        self._init('[DEFAULT]', 'wire_profile = nova')
        self.assertIs(NOVA, rpc.PROFILE)
        self.assertEqual('nova', self.conf.control_exchange)
        self.assertFalse(self.conf.oslo_messaging_rabbit.amqp_durable_queues)

    def test_an_option_set_in_a_file_wins_over_the_profile(self):
        self._init('[DEFAULT]', 'wire_profile = nova', '[oslo_messaging_rabbit]',
                   'amqp_durable_queues = True')
        self.assertEqual('nova', self.conf.control_exchange)
        self.assertTrue(self.conf.oslo_messaging_rabbit.amqp_durable_queues)

    def test_minisched_profile_keeps_its_exchange_and_durable_queues(self):
        self._init('[DEFAULT]')
        self.assertEqual('minisched', rpc.PROFILE.name)
        self.assertEqual('minisched', self.conf.control_exchange)
        self.assertTrue(self.conf.oslo_messaging_rabbit.amqp_durable_queues)


#: A command's start as minisched-manage's: options parsed without RPC, then the rpc tap's
#: reading of the exchange (in a process of its own: parse_args fills the global CONF).
_MANAGE_START = """
import subprocess
import sys
from minisched import config
from minisched.cmd import manage_rpc
config.parse_args(['minisched-manage', '--config-file', sys.argv[1]], init_rpc=False)
print(manage_rpc.transport_settings(config.CONF)[1])
"""


class ParseArgsTestCase(base.TestCase):

    def test_commands_without_rpc_read_the_profiles_exchange(self):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        path = os.path.join(folder.name, 'minisched.conf')
        with open(path, 'w') as f:
            f.write('[DEFAULT]\nwire_profile = nova\n'
                    'transport_url = rabbit://guest:guest@127.0.0.1:5672/\n')
        out = subprocess.run([sys.executable, '-c', _MANAGE_START, path], capture_output=True,
                             text=True, timeout=120)
        self.assertEqual(0, out.returncode, out.stderr[-2000:])
        self.assertEqual('nova', out.stdout.strip().splitlines()[-1])
