"""``[scheduler] max_concurrent_decisions``: how many requests a scheduler worker decides at
once, whatever number of RPC threads deliver them; and ``[DEFAULT] thread_switch_interval``
applied by a service on native threads."""
import sys
import threading
import time

from minisched import context
from minisched import rpc
from minisched import service
from minisched.scheduler import manager
from tests.unit import base
from tests.unit.scheduler import numa_hosts
from tests.unit import fakes


class TestDecisionTurns(base.TestCase):

    def setUp(self):
        super().setUp()
        rpc.init(self.conf, url='fake://')
        self.addCleanup(rpc.cleanup)
        self.ctxt = context.get_admin_context()
        topology = fakes.fake_numa_topology(nodes=2, cpus_per_node=8)
        self.rows = [numa_hosts.node_row(n, 'host%d' % n, topology, [])
                     for n in range(1, 5)]

    def _decide_from_threads(self, threads=8):
        """``threads`` requests at once through the manager; the most decided at once by
        the real FilterScheduler (each decision held a moment to make overlaps likely)."""
        mgr = manager.SchedulerManager(self.conf, host='sched1')
        mgr.driver = numa_hosts.scheduler(self.conf, self.rows)
        decide = mgr.driver.select_destinations
        inside, most, lock = [0], [0], threading.Lock()

        def held(*args, **kwargs):
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            try:
                time.sleep(0.02)
                return decide(*args, **kwargs)
            finally:
                with lock:
                    inside[0] -= 1
        mgr.driver.select_destinations = held
        answers, start = [], threading.Barrier(threads)

        def request():
            start.wait()
            spec = numa_hosts.numa_spec(self.conf, {}, vcpus=1)
            answers.append(mgr.select_destinations(self.ctxt, spec_obj=spec,
                                                   return_objects=True))
        workers = [threading.Thread(target=request) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(30)
        self.assertEqual(threads, len(answers))  # every request answered, with a host
        self.assertTrue(all(answer[0][0].service_host for answer in answers))
        return most[0]

    def test_one_decision_at_a_time_by_default(self):
        self.assertEqual(1, self.conf.scheduler.max_concurrent_decisions)
        self.assertEqual(1, self._decide_from_threads())

    def test_more_at_once_when_configured_and_never_more_than_that(self):
        self.flags(group='scheduler', max_concurrent_decisions=3)
        self.assertEqual(3, self._decide_from_threads())


class TestSwitchInterval(base.TestCase):

    def setUp(self):
        super().setUp()
        before = sys.getswitchinterval()
        self.addCleanup(sys.setswitchinterval, before)

    def test_a_service_on_native_threads_sets_the_configured_interval(self):
        self.assertEqual(0.0005, self.conf.thread_switch_interval)
        sys.setswitchinterval(0.005)
        self.flags(thread_switch_interval=0.002)
        service.set_switch_interval(self.conf)
        self.assertAlmostEqual(0.002, sys.getswitchinterval())

    def test_out_of_range_is_refused(self):
        self.assertRaises(ValueError, self.flags, thread_switch_interval=0.5)
