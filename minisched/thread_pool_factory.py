"""The process-wide thread pools of a minisched service, sized as Nova 34 sizes its own.

One futurist executor per kind of work, made on first use and shut down with the service
(Nova's ``nova/thread_pool_factory.py``): with native threads a ``ThreadPoolExecutor``
whose size is the limit of that work, under eventlet a ``GreenThreadPoolExecutor``.

* ``DEFAULT``: background work of any kind; ``[DEFAULT] default_thread_pool_size`` threads
  (eventlet: ``default_green_pool_size``).
* ``SCATTER_GATHER``: one task per cell for the reads that gather every cell's rows (the
  scheduler's host state refresh); ``[DEFAULT] cell_worker_thread_pool_size`` threads
  (eventlet: 1000).
* ``LONG_TASK``: a compute's builds, which run apart from the RPC server's threads. With
  native threads the pool's size is the limit of concurrent builds,
  ``[DEFAULT] max_concurrent_builds`` (0, deprecated as in Nova, counts as 10); under
  eventlet the pool is as large and the compute's build semaphore keeps the limit (0:
  1000).

A service with several workers forks them after its parent may have used a pool: the
threads of a pool do not survive ``fork()``, so :func:`reset_all` runs before it.
"""
import enum
import functools
import logging
import threading

import futurist
from oslo_context import context as common_context

from minisched import monkey_patch
from minisched.messaging import trace

LOG = logging.getLogger(__name__)

#: What a deprecated ``max_concurrent_builds = 0`` means, per backend (Nova 34's values).
UNLIMITED_BUILDS = {'threading': 10, 'eventlet': 1000}
#: The cell workers of the eventlet backend (Nova's: green threads are cheap).
EVENTLET_CELL_WORKERS = 1000


class ExecutorType(enum.Enum):
    """The process-wide executors; the value names the pool in logs."""
    DEFAULT = 'default'
    SCATTER_GATHER = 'cell_worker'
    LONG_TASK = 'long_task'


def max_concurrent_builds(conf):
    """Builds a compute runs at once: ``[DEFAULT] max_concurrent_builds``, or for the
    deprecated 0 (unlimited) Nova 34's stand-in for this backend, with a warning."""
    if conf.max_concurrent_builds > 0:
        return conf.max_concurrent_builds
    LOG.warning('[DEFAULT] max_concurrent_builds = 0 (unlimited) is deprecated, as in Nova: '
                'set a positive limit. Using %d.',
                UNLIMITED_BUILDS[monkey_patch.backend()])
    return UNLIMITED_BUILDS[monkey_patch.backend()]


#: Pool sizes set by a process that runs several services of one kind (see
#: :func:`set_pool_size`), by executor type.
_SIZES = {}


def set_pool_size(executor_type, size):
    """Size ``executor_type``'s pool ``size`` in this process, before its first use: for
    a process that runs several services sharing the process's pools (the benchmarks' many
    fake computes in one process, each with its own ``max_concurrent_builds``)."""
    _SIZES[executor_type] = size


def pool_size(conf, executor_type):
    """The number of workers of ``executor_type``'s pool in this process."""
    if executor_type in _SIZES:
        return _SIZES[executor_type]
    threads = monkey_patch.backend() == 'threading'
    if executor_type is ExecutorType.DEFAULT:
        return conf.default_thread_pool_size if threads else conf.default_green_pool_size
    if executor_type is ExecutorType.SCATTER_GATHER:
        return conf.cell_worker_thread_pool_size if threads else EVENTLET_CELL_WORKERS
    return max_concurrent_builds(conf)


class ThreadPools:
    """Creates the executors on first use, and shuts them all down."""

    def __init__(self):
        self._lock = threading.Lock()
        self._executors = {}
        self._shut_down = False

    def get(self, conf, executor_type):
        executor = self._executors.get(executor_type)
        if executor is not None:
            return executor
        with self._lock:
            if self._shut_down:
                raise RuntimeError('the %s thread pool cannot start: this service is '
                                   'stopping' % executor_type.value)
            executor = self._executors.get(executor_type)
            if executor is None:
                size = pool_size(conf, executor_type)
                if monkey_patch.backend() == 'threading':
                    executor = futurist.ThreadPoolExecutor(max_workers=size)
                else:
                    executor = futurist.GreenThreadPoolExecutor(max_workers=size)
                executor.name = executor_type.value
                self._executors[executor_type] = executor
                LOG.info('The %s thread pool is initialized: %d workers (%s)',
                         executor_type.value, size, monkey_patch.backend())
        return executor

    def _teardown(self, final):
        with self._lock:
            if final:
                self._shut_down = True
            executors = list(self._executors.values())
            self._executors.clear()
        for executor in executors:
            executor.shutdown(wait=True)
            LOG.debug('The %s thread pool is shut down', executor.name)

    def shutdown_all(self):
        """Wait for the work of every pool, then refuse new pools (the service stops)."""
        self._teardown(final=True)

    def reset_all(self):
        """Shut every pool down and forget it, so that the next use makes a new one (before
        a fork: a child would inherit a pool whose threads it does not have)."""
        self._teardown(final=False)


POOLS = ThreadPools()


def get_executor(conf, executor_type):
    return POOLS.get(conf, executor_type)


def spawn_on(conf, executor_type, func, *args, **kwargs):
    """Run ``func(*args, **kwargs)`` on ``executor_type``'s pool: a future. The request
    context of the calling thread, if any, becomes the worker's (for its log lines)."""
    executor = get_executor(conf, executor_type)
    current = common_context.get_current()
    func = trace.carried(func)

    @functools.wraps(func)
    def in_context(*args, **kwargs):
        if current is not None:
            current.update_store()
        return func(*args, **kwargs)

    return executor.submit(in_context, *args, **kwargs)


def shutdown_all():
    POOLS.shutdown_all()


def reset_all():
    POOLS.reset_all()
