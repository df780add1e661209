"""The compute RPC API as Nova 34 keeps it: the client sends 6.0, or the 5.x message under an
``[upgrade_levels] compute`` cap (a version, a release name or ``auto``); the server takes
6.x on the manager and 5.x through its second endpoint.

A real RPC server on oslo.messaging's in-memory transport receives each cast.
"""
import queue
from unittest import mock

import oslo_messaging as messaging

from minisched.compute import manager
from minisched.compute import rpcapi
from minisched import context
from minisched import objects
from minisched.objects import service as service_obj
from minisched import rpc
from minisched import version
from tests.unit import base


class _Manager:
    """What the endpoints hand on: the 6.x method's arguments, by name."""

    target = messaging.Target(version='6.5')

    def __init__(self):
        self.builds = queue.Queue()

    def build_and_run_instance(self, context, instance, image, request_spec,
                               filter_properties, accel_uuids, admin_password=None,
                               injected_files=None, requested_networks=None,
                               security_groups=None, block_device_mapping=None, node=None,
                               limits=None, host_list=None):
        self.builds.put(dict(instance=instance, accel_uuids=accel_uuids, node=node,
                             limits=limits))

    def terminate_instance(self, context, instance, bdms=None):
        self.builds.put(dict(terminated=instance))

    def set_host_enabled(self, context, enabled):
        return 'enabled' if enabled else 'disabled'


class ComputeRPCAPITestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.use_fake_transport()
        self.manager = _Manager()
        self.sent = []
        server = rpc.get_server(messaging.Target(topic='compute', server='h1'),
                                [self.manager, manager._ComputeV5Proxy(self.manager)])
        # Each message's version, as the server's dispatcher sees it.
        dispatch = server.dispatcher.dispatch

        def recording(incoming):
            self.sent.append(incoming.message.get('version'))
            return dispatch(incoming)

        server.dispatcher.dispatch = recording
        server.start()
        self.addCleanup(server.wait)
        self.addCleanup(server.stop)
        self.ctxt = context.get_admin_context()

    def _build(self, cap, accel_uuids=('a1',)):
        self.flags(group='upgrade_levels', compute=cap)
        api = rpcapi.ComputeAPI(self.conf)
        api.build_and_run_instance(self.ctxt, instance='i1', host='h1', image={},
                                   request_spec=None, filter_properties={}, node='n1',
                                   limits=None, accel_uuids=list(accel_uuids))
        return self.manager.builds.get(timeout=5), self.sent[-1]

    def test_uncapped_builds_go_at_6_0_with_accel_uuids(self):
        received, sent = self._build(None)
        self.assertEqual('6.0', sent)
        self.assertEqual(['a1'], received['accel_uuids'])
        self.assertEqual('n1', received['node'])

    def test_a_5_11_cap_sends_the_5_x_message_through_the_second_endpoint(self):
        received, sent = self._build('5.11')
        self.assertEqual('5.11', sent)
        self.assertEqual(['a1'], received['accel_uuids'])

    def test_an_older_release_drops_accel_uuids_at_5_0(self):
        received, sent = self._build('rocky')
        self.assertEqual('5.0', sent)
        self.assertIsNone(received['accel_uuids'])

    def test_novas_release_aliases_of_6_x_send_6_0(self):
        for release in ('wallaby', 'epoxy', 'hibiscus'):
            self.assertEqual('6.0', self._build(release)[1], release)

    def test_auto_caps_at_the_oldest_computes_service_version(self):
        with mock.patch.object(service_obj.Service, 'get_minimum_version',
                               return_value=50) as oldest:
            received, sent = self._build('auto')
        oldest.assert_called_once_with(mock.ANY, 'minisched-compute')
        self.assertEqual('5.11', sent)  # service version 50: compute RPC 5.11

    def test_auto_without_computes_sends_the_current_version(self):
        with mock.patch.object(service_obj.Service, 'get_minimum_version', return_value=0):
            self.assertEqual('6.0', self._build('auto')[1])

    def test_terminate_at_5_0_reaches_the_manager_through_the_proxy(self):
        self.flags(group='upgrade_levels', compute='5.0')
        instance = objects.Instance(uuid=base.uuids.instance, host='h1')
        rpcapi.ComputeAPI(self.conf).terminate_instance(self.ctxt, instance, bdms=[])
        self.assertEqual(base.uuids.instance,
                         self.manager.builds.get(timeout=5)['terminated'].uuid)
        self.assertEqual('5.0', self.sent[-1])

    def test_set_host_enabled_is_a_call_answered_at_6_0_or_5_0(self):
        for cap, sent in ((None, '6.0'), ('5.0', '5.0')):
            self.flags(group='upgrade_levels', compute=cap)
            api = rpcapi.ComputeAPI(self.conf)
            self.assertEqual('disabled', api.set_host_enabled(self.ctxt, 'h1', False))
            self.assertEqual(sent, self.sent[-1])
            self.assertEqual('enabled', api.set_host_enabled(self.ctxt, 'h1', True))


class ServiceVersionTestCase(base.TestCase):

    def test_service_version_71_means_compute_rpc_6_5(self):
        self.assertEqual(71, version.SERVICE_VERSION)
        self.assertEqual('6.5', version.compute_rpc_version(version.SERVICE_VERSION))
        self.assertEqual('6.5', manager.ComputeManager.target.version)

    def test_history_lookups_fall_between_changes(self):
        self.assertEqual('4.4', version.compute_rpc_version(1))
        self.assertEqual('5.0', version.compute_rpc_version(36))
        self.assertEqual('6.0', version.compute_rpc_version(63))
        self.assertEqual('6.5', version.compute_rpc_version(74))
