"""select_destinations with ``dry_run``: decided as usual, and nothing of it outlives it."""
import random

import oslo_messaging as messaging

from minisched import context
from minisched import rpc
from minisched.scheduler import manager
from minisched.scheduler import rpcapi
from tests.unit import base
from tests.unit import fakes
from tests.unit.scheduler import numa_hosts

#: What the endpoint raises for NoValidHost when called directly (the RPC server sends the
#: NoValidHost it holds).
_NO_VALID_HOST = messaging.ExpectedException


def _limits(selection):
    limits = selection.limits.to_dict()
    if limits.get('numa_topology') is not None:  # an object: compared by its values
        limits['numa_topology'] = limits['numa_topology'].obj_to_primitive()
    return limits


def _answer(selections):
    return [[(s.service_host, _limits(s)) for s in per] for per in selections]


class TestDryRun(base.TestCase):

    def setUp(self):
        super().setUp()
        self.ctxt = numa_hosts.set_up(self)
        topology = fakes.fake_numa_topology(nodes=2, cpus_per_node=4)
        self.rows = [numa_hosts.node_row(n, 'host%d' % n, topology,
                                         [('8086', '1520', 0, 1), ('8086', '1520', 1, 2)])
                     for n in range(1, 4)]

    def _manager(self):
        mgr = manager.SchedulerManager(self.conf, host='sched1')
        mgr.driver = numa_hosts.scheduler(self.conf, self.rows)
        return mgr

    def _spec(self, num_instances):
        # Pinned, one NUMA node and two devices each: a host takes two (its cells).
        return numa_hosts.numa_spec(self.conf, {'hw:cpu_policy': 'dedicated',
                                                'hw:numa_nodes': '1',
                                                'pci_passthrough:alias': 'nic:1'},
                                    vcpus=4, num_instances=num_instances)

    def _select(self, mgr, num_instances, dry_run, uuids=None, seed=3):
        random.seed(seed)
        return _answer(mgr.select_destinations(
            self.ctxt, spec_obj=self._spec(num_instances), instance_uuids=uuids,
            return_objects=True, return_alternates=True, dry_run=dry_run))

    def test_a_dry_run_decides_as_a_real_one_and_leaves_nothing(self):
        dry, real = self._manager(), self._manager()
        before = numa_hosts.pictures(dry.driver)
        uuids = [getattr(base.uuids, 'i%d' % n) for n in range(5)]
        answer = self._select(dry, 5, True, uuids)
        self.assertEqual(self._select(real, 5, False, uuids), answer)
        # Five instances on three hosts of two cells each: the later ones saw the earlier.
        self.assertEqual(5, len(answer))
        self.assertNotEqual(before, numa_hosts.pictures(real.driver))
        self.assertEqual(before, numa_hosts.pictures(dry.driver))

    def test_dry_runs_of_a_full_cluster_leave_room_for_the_real_build(self):
        mgr = self._manager()
        for _ in range(4):
            self.assertEqual(6, len(self._select(mgr, 6, True)))
        self.assertEqual(6, len(self._select(mgr, 6, False)))
        self.assertRaises(_NO_VALID_HOST, self._select, mgr, 1, True)

    def test_a_dry_run_after_real_consumption_keeps_that_consumption(self):
        mgr = self._manager()
        self._select(mgr, 2, False)
        consumed = numa_hosts.pictures(mgr.driver)
        self._select(mgr, 4, True)
        self.assertEqual(consumed, numa_hosts.pictures(mgr.driver))
        self.assertRaises(_NO_VALID_HOST, self._select, mgr, 5, True)
        self.assertEqual(consumed, numa_hosts.pictures(mgr.driver))

    def test_a_failed_real_request_leaves_nothing_either(self):
        mgr = self._manager()
        before = numa_hosts.pictures(mgr.driver)
        uuids = [getattr(base.uuids, 'i%d' % n) for n in range(7)]
        self.assertRaises(_NO_VALID_HOST, self._select, mgr, 7, False, uuids)
        self.assertEqual(before, numa_hosts.pictures(mgr.driver))


class _Recorder:
    """The prepared client context of SchedulerAPI: records each call's method and args."""

    def __init__(self, calls):
        self.calls = calls

    def call(self, ctxt, method, **kwargs):
        self.calls.append((method, kwargs))
        return []


class TestRPCAPI(base.TestCase):

    def setUp(self):
        super().setUp()
        rpc.init(self.conf, url='fake://')
        self.addCleanup(rpc.cleanup)
        self.api = rpcapi.SchedulerAPI(self.conf)
        self.calls = []
        self.api.client.prepare = lambda **kw: _Recorder(self.calls)

    def test_dry_run_travels_only_when_set(self):
        spec = fakes.fake_spec()
        self.api.select_destinations(context.get_admin_context(), spec, None,
                                     return_objects=True)
        self.api.select_destinations(context.get_admin_context(), spec, None,
                                     return_objects=True, dry_run=True)
        self.assertEqual(['instance_uuids', 'return_alternates', 'return_objects', 'spec_obj'],
                         sorted(self.calls[0][1]))  # Nova's 4.5 message, unchanged
        self.assertIs(True, self.calls[1][1]['dry_run'])
