"""Drop hosts whose compute service is disabled or has not reported within service_down_time."""
import datetime
import logging
import operator
import weakref

import numpy as np
from oslo_utils import timeutils

from minisched import servicegroup
from minisched.scheduler import filters
from minisched.servicegroup import outages

LOG = logging.getLogger(__name__)
_EPOCH = datetime.datetime(1970, 1, 1)
_MICROSECOND = datetime.timedelta(microseconds=1)


def _get(service, key):
    if hasattr(service, 'obj_attr_is_set'):
        return getattr(service, key) if service.obj_attr_is_set(key) else None
    return service.get(key)


def _heartbeat_us(service):
    """Last heartbeat in microseconds since the epoch; None means down whatever the time."""
    if _get(service, 'forced_down'):
        return None
    beat = _get(service, 'last_seen_up') or _get(service, 'created_at')
    if beat is None:
        return None
    if isinstance(beat, str):
        beat = timeutils.parse_strtime(beat)
    return (timeutils.normalize_time(beat) - _EPOCH) // _MICROSECOND


class _ServiceRows:
    """Per-row service facts of one HostStateTable, redone only when a row's record changes.

    Service records are read-only mappings replaced on update, so a row whose record is the
    same object as last time has the same facts; ``refs`` keeps those objects alive so that
    their ids stay unique.
    """

    def __init__(self):
        self.ids = np.zeros(0, dtype=np.int64)
        self.beat = np.zeros(0, dtype=np.int64)
        self.disabled, self.alive, self.refs = np.zeros(0, bool), np.zeros(0, bool), []
        #: ``table.service_changes`` when the facts were last checked, and of which rows.
        self.seen_changes, self.seen_rows = None, None

    def current(self, table, rows):
        """Whether no service record was replaced since ``rows`` (or more) were checked."""
        seen = self.seen_rows
        return (self.seen_changes == table.service_changes and seen is not None
                and (seen is rows or
                     # The usual case, the same candidates as last time, without isin's sort.
                     (len(rows) == len(seen) and np.array_equal(rows, seen)) or
                     (len(rows) <= len(seen) and
                      np.isin(rows, seen, assume_unique=True).all())))

    def refresh(self, rows, services):
        grow = int(rows.max()) + 1 - len(self.ids)
        if grow > 0:
            for name in ('ids', 'beat', 'disabled', 'alive'):
                column = getattr(self, name)
                setattr(self, name, np.concatenate([column, np.zeros(grow, column.dtype)]))
            self.refs.extend([None] * grow)
        ids = np.fromiter(map(id, services), dtype=np.int64, count=len(services))
        for index in np.flatnonzero(self.ids[rows] != ids).tolist():
            row, service = int(rows[index]), services[index]
            beat = _heartbeat_us(service)
            self.disabled[row] = bool(service['disabled'])
            self.alive[row], self.beat[row] = beat is not None, beat or 0
            self.ids[row], self.refs[row] = ids[index], service


class ComputeFilter(filters.BaseHostFilter):
    """Passes hosts whose service is enabled and up."""

    run_filter_once_per_request = True
    RUN_ON_REBUILD = False

    def __init__(self, conf):
        super().__init__(conf)
        # As in Nova, this also raises a too small service_down_time to 2.5 x report_interval.
        self.servicegroup_api = servicegroup.API(conf)
        self.outages = outages.OWN
        self._tables = weakref.WeakKeyDictionary()

    def host_passes(self, host_state, spec_obj):
        service = host_state.service
        if service['disabled']:
            LOG.debug('%(host_state)s is disabled, reason: %(reason)s',
                      {'host_state': host_state, 'reason': service.get('disabled_reason')})
            return False
        if not self.servicegroup_api.service_is_up(service):
            LOG.warning('%(host_state)s has not been heard from in a while',
                        {'host_state': host_state})
            return False
        return True

    def filter_rows(self, view, spec_obj):
        if not len(view):
            return np.zeros(0, dtype=bool)
        facts = self._tables.setdefault(view.table, _ServiceRows())
        rows = np.asarray(view.rows)
        if not facts.current(view.table, rows):
            facts.refresh(rows, list(map(operator.attrgetter('service'), view.states())))
            facts.seen_changes, facts.seen_rows = view.table.service_changes, rows
        now = (timeutils.normalize_time(timeutils.utcnow()) - _EPOCH) // _MICROSECOND
        # Same float as abs(timedelta.total_seconds()): int64 -> float64 is exact here.
        silent = np.abs(now - facts.beat[rows])
        if self.outages.spans(_EPOCH + now * _MICROSECOND):
            # Less the time this scheduler was itself cut off (servicegroup.outages).
            silent = silent - self.outages.unheard_us(facts.beat[rows], now, _EPOCH)
        recent = silent / 1e6 <= self.conf.service_down_time
        disabled = facts.disabled[rows]
        down = ~disabled & ~(facts.alive[rows] & recent)
        for index in np.flatnonzero(down).tolist():
            LOG.warning('%(host_state)s has not been heard from in a while',
                        {'host_state': view.table.states[int(rows[index])]})
        return ~disabled & ~down
