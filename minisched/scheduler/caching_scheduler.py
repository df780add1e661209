"""The CachingScheduler: the FilterScheduler over host states refreshed only periodically.

As Nova's (deprecated in Pike, removed in Stein): the cache is rebuilt by the driver's periodic
task (``[scheduler] periodic_task_interval``) and filled lazily by the first request. Between
refreshes consumption by this worker's own requests is visible, other workers' and deletions
are not, which costs more claim failures and reschedules with several schedulers.
"""
import logging

import numpy as np

from minisched.scheduler import filter_scheduler
from minisched.scheduler import host_manager

LOG = logging.getLogger(__name__)


class CachingScheduler(filter_scheduler.FilterScheduler):

    #: As in Rocky: it schedules from its cache, never from Placement's candidates.
    USES_ALLOCATION_CANDIDATES = False

    def __init__(self, conf):
        super().__init__(conf)
        #: Candidates by cell uuid, rebuilt by run_periodic_tasks.
        self.all_host_states = None

    def run_periodic_tasks(self, context):
        """Called from the manager's periodic task: rebuild the cache."""
        self.all_host_states = self._get_up_hosts(context.elevated())

    def _get_up_hosts(self, context):
        by_cell = {}
        for state in self.host_manager.get_all_host_states(context):
            by_cell.setdefault(state.cell_uuid, []).append(state.row)
        LOG.debug('Host state cache refreshed: %d host(s) in %d cell(s)',
                  sum(len(r) for r in by_cell.values()), len(by_cell))
        return by_cell

    def _get_all_host_candidates(self, context, spec_obj):
        if self.all_host_states is None:
            LOG.debug('Host state cache empty; filling it now.')
            self.all_host_states = self._get_up_hosts(context)
        cell = host_manager.requested_cell(spec_obj)
        if cell is not None:
            rows = self.all_host_states.get(cell.uuid, [])
        else:
            rows = [row for cell_rows in self.all_host_states.values() for row in cell_rows]
        rows = np.asarray(sorted(rows), dtype=np.int64)
        return self.pipeline.from_rows(rows)
