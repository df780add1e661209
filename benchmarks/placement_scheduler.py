"""``minisched-scheduler`` as the placement bench runs it: each ``select_destinations`` timed.

The scheduler service itself (``minisched.cmd.scheduler``), its manager's
``select_destinations`` wrapped before the workers fork: each call appends one line to
``$MINISCHED_BENCH_TIMINGS_DIR/sched-<pid>.txt``, ``<seconds in the manager> <seconds of
them waiting on Placement> <instance uuids, comma-separated>`` (Placement's share from
:func:`minisched.scheduler.client.report.placement_seconds`: GET /allocation_candidates, the
claims' GET and PUT /allocations, a failed request's DELETEs).
"""
from minisched import monkey_patch  # first: the backend a service would run with

monkey_patch.patch(backend='threading')

import functools  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

ENV = 'MINISCHED_BENCH_TIMINGS_DIR'


def _timed(select, directory):
    from minisched.scheduler.client import report
    files = {}

    @functools.wraps(select)
    def wrapper(self, ctxt, *args, **kwargs):
        placement_before = report.placement_seconds()
        start = time.perf_counter()
        try:
            return select(self, ctxt, *args, **kwargs)
        finally:
            seconds = time.perf_counter() - start
            placement = report.placement_seconds() - placement_before
            pid = os.getpid()  # a worker's, after the fork
            handle = files.get(pid)
            if handle is None:
                handle = files[pid] = open(os.path.join(directory, 'sched-%d.txt' % pid),
                                           'a', buffering=1)
            handle.write('%.6f %.6f %s\n' % (seconds, placement,
                                             ','.join(kwargs.get('instance_uuids') or ())))
    return wrapper


def main():
    from minisched.cmd import scheduler
    from minisched.scheduler import manager
    manager.SchedulerManager.select_destinations = _timed(
        manager.SchedulerManager.select_destinations, os.environ[ENV])
    return scheduler.main()


if __name__ == '__main__':
    sys.exit(main())
