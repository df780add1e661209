"""The process-wide pools (minisched/thread_pool_factory.py), in this process: native threads."""
import threading

import futurist
import futurist.waiters
from oslo_context import context as common_context

from minisched import thread_pool_factory
from tests.unit import base


class ThreadPoolTestCase(base.TestCase):
    def setUp(self):
        super().setUp()
        self.pools = thread_pool_factory.ThreadPools()
        self.addCleanup(self.pools.shutdown_all)
        self.addCleanup(thread_pool_factory._SIZES.clear)

    def test_sizes_come_from_nova_34s_options_with_native_threads(self):
        self.flags(default_thread_pool_size=3, cell_worker_thread_pool_size=2,
                   max_concurrent_builds=4)
        sizes = {kind: self.pools.get(self.conf, kind)._max_workers
                 for kind in thread_pool_factory.ExecutorType}
        self.assertEqual({thread_pool_factory.ExecutorType.DEFAULT: 3,
                          thread_pool_factory.ExecutorType.SCATTER_GATHER: 2,
                          thread_pool_factory.ExecutorType.LONG_TASK: 4}, sizes)
        self.assertIsInstance(self.pools.get(self.conf, thread_pool_factory.ExecutorType.DEFAULT),
                              futurist.ThreadPoolExecutor)

    def test_unlimited_builds_are_deprecated_and_mean_ten_threads(self):
        self.flags(max_concurrent_builds=0)
        with self.assertLogs('minisched.thread_pool_factory', 'WARNING') as logs:
            self.assertEqual(10, thread_pool_factory.max_concurrent_builds(self.conf))
        self.assertIn('deprecated', logs.output[0])

    def test_a_process_of_many_services_sizes_a_pool_itself(self):
        thread_pool_factory.set_pool_size(thread_pool_factory.ExecutorType.LONG_TASK, 250)
        self.assertEqual(250, self.pools.get(
            self.conf, thread_pool_factory.ExecutorType.LONG_TASK)._max_workers)

    def test_the_pool_limits_how_much_work_runs_at_once(self):
        self.flags(max_concurrent_builds=2)
        pool = self.pools.get(self.conf, thread_pool_factory.ExecutorType.LONG_TASK)
        release = threading.Event()
        running, most = [], []
        lock = threading.Lock()

        def build():
            with lock:
                running.append(1)
                most.append(len(running))
            release.wait(10)
            with lock:
                running.pop()

        futures = [pool.submit(build) for _ in range(5)]
        threading.Event().wait(0.3)
        release.set()
        futurist.waiters.wait_for_all(futures, 10)
        self.assertEqual(2, max(most))
        self.assertTrue(all(f.done() for f in futures))

    def test_one_executor_per_kind_until_reset(self):
        first = self.pools.get(self.conf, thread_pool_factory.ExecutorType.DEFAULT)
        self.assertIs(first, self.pools.get(self.conf, thread_pool_factory.ExecutorType.DEFAULT))
        self.pools.reset_all()
        self.assertTrue(first.alive is False)
        second = self.pools.get(self.conf, thread_pool_factory.ExecutorType.DEFAULT)
        self.assertIsNot(first, second)
        self.assertEqual(7, second.submit(lambda: 7).result(10))

    def test_a_stopping_service_starts_no_new_pool(self):
        self.pools.shutdown_all()
        self.assertRaisesRegex(RuntimeError, 'stopping', self.pools.get, self.conf,
                               thread_pool_factory.ExecutorType.LONG_TASK)

    def test_spawn_on_gives_the_worker_the_callers_context(self):
        ctxt = common_context.RequestContext(request_id='req-pool-test')
        ctxt.update_store()
        self.addCleanup(common_context._request_store.__dict__.clear)
        self.addCleanup(thread_pool_factory.reset_all)
        seen = thread_pool_factory.spawn_on(
            self.conf, thread_pool_factory.ExecutorType.DEFAULT,
            lambda: common_context.get_current().request_id).result(10)
        self.assertEqual('req-pool-test', seen)
