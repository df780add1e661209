"""The FilterScheduler: per instance, filter, weigh, then pick among the best hosts.

Nova's legacy (no-Placement) algorithm, step for step. Two interchangeable pipelines run it:
:class:`RowPipeline` works on host-state table rows with vectorised filters and weighers (the
default), :class:`ReferencePipeline` on HostState lists exactly as Nova does; both make the
same decisions (the benchmark checks that on every request it times).
"""
import logging
import random
import time

import numpy as np

from minisched import exception
from minisched.objects import base as objects_base
from minisched.objects import instance as instance_obj
from minisched.objects import selection as selection_obj
from minisched import rpc
from minisched.scheduler import driver
from minisched.scheduler import filters
from minisched.scheduler import metrics
from minisched.scheduler import placement_claims
from minisched.scheduler import scheduler_options
from minisched.scheduler import weights as host_weights

LOG = logging.getLogger(__name__)


class RowPipeline:
    """Candidates are an array of table rows; filters and weighers run column-wise.

    Once weighed they are a :class:`~minisched.scheduler.weights.Ranking`, its first
    positions placed and the rest sorted when a walk through them reaches that far.
    """

    def __init__(self, host_manager):
        self.hm = host_manager

    def initial(self, context, spec_obj):
        return self.hm.candidate_rows(spec_obj)

    def from_rows(self, rows):
        return rows

    def state(self, candidates, index):
        if type(candidates) is host_weights.Ranking:
            if index >= candidates.placed:
                candidates.complete()
            candidates = candidates.rows
        return self.hm.table.states[candidates[index]]

    def states(self, candidates):
        return self.hm.get_host_states(candidates)

    def keep(self, candidates, uuids):
        """The candidates whose compute node uuid is in ``uuids``, in their order.

        The table's uuid index gives the rows of ``uuids`` (Placement's providers), and one
        array operation keeps those among the candidates: no visit of each host state.
        """
        candidates = np.asarray(candidates, dtype=np.int64)
        rows = np.fromiter(self.hm.table.rows_of_uuids(uuids), dtype=np.int64)
        return candidates[np.isin(candidates, rows)]

    def filter(self, candidates, spec_obj, index):
        """Returns ``(survivors, FilterResult or None, filters_ran)``."""
        if type(candidates) is host_weights.Ranking:
            candidates = candidates.complete()
        rows, skip = self.hm.pre_filter_rows(candidates, spec_obj)
        if skip or not len(rows):
            return rows, None, False
        result = self.hm.filter_handler.run_rows(self.hm.enabled_filters, self.hm.table, rows,
                                                 spec_obj, index)
        return result.survivors, result, True

    def weigh(self, candidates, spec_obj, top=None):
        """Returns ``(Ranking of the candidates, weights in its order)``; with ``top``, only
        the hosts tied with the best and ``top`` more need be placed."""
        view = filters.RowView(self.hm.table, candidates)
        ranking = self.hm.weight_handler.rank_rows(self.hm.weighers, view, spec_obj, top)
        return ranking, ranking.weights

    def chosen_first(self, candidates, head, chosen):
        """``candidates`` in the order ``head`` (a permutation of the first ``len(head)``
        positions) then every later position, with position ``chosen`` moved to the front.

        A few array operations: the list version costs ~2 ms at 50,000 candidates. Both
        ``head`` and ``chosen`` lie among the placed positions of the Ranking.
        """
        order = np.arange(len(candidates))
        order[:len(head)] = head
        at = head.index(chosen) if chosen < len(head) else chosen
        return candidates.reordered(np.concatenate((order[at:at + 1], order[:at],
                                                    order[at + 1:])))


class ReferencePipeline:
    """Candidates are HostState lists, run through Nova's per-host handlers."""

    def __init__(self, host_manager):
        self.hm = host_manager

    def initial(self, context, spec_obj):
        return self.hm.get_host_states(self.hm.candidate_rows(spec_obj))

    def from_rows(self, rows):
        return self.hm.get_host_states(rows)

    def state(self, candidates, index):
        return candidates[index]

    def states(self, candidates):
        return list(candidates)

    def keep(self, candidates, uuids):
        return [state for state in candidates if state.uuid in uuids]

    def filter(self, candidates, spec_obj, index):
        rows = np.asarray([s.row for s in candidates], dtype=np.int64)
        rows, skip = self.hm.pre_filter_rows(rows, spec_obj)
        states = self.hm.get_host_states(rows)
        if skip or not states:
            return states, None, False
        result = self.hm.filter_handler.run(self.hm.enabled_filters, states, spec_obj, index)
        return result.survivors, result, True

    def weigh(self, candidates, spec_obj, top=None):
        weighed = self.hm.get_weighed_hosts(candidates, spec_obj)
        return [w.obj for w in weighed], [w.weight for w in weighed]

    def chosen_first(self, candidates, head, chosen):
        """:meth:`RowPipeline.chosen_first` with Nova's list operations."""
        order = head + list(range(len(head), len(candidates)))
        order.remove(chosen)
        return [candidates[i] for i in [chosen] + order]


def _leading_ties(weights):
    """How many weights at the front equal the first (``!=`` semantics: a NaN ties nothing)."""
    if isinstance(weights, np.ndarray):
        differ = np.flatnonzero(weights != weights[0])
        return int(differ[0]) if len(differ) else len(weights)
    best = weights[0]
    return next((i for i, w in enumerate(weights) if w != best), len(weights))


class FilterScheduler(driver.Scheduler):
    """Scheduler that can be used for filtering and weighing.

    Given allocation candidates (``[placement] enabled``: the manager asked Placement), only
    their hosts are considered and each instance is claimed in Placement
    (:mod:`minisched.scheduler.placement_claims`), as Nova's since Pike; without, the legacy
    path of a driver that does not use allocation candidates.
    """

    pipeline_cls = RowPipeline
    USES_ALLOCATION_CANDIDATES = True

    def __init__(self, conf, notifier=None):
        super().__init__(conf)
        # ``notifier``: a process without RPC (an offline replay) gives one that is off.
        self.notifier = notifier or rpc.get_notifier('scheduler', conf.host)
        self.pipeline = self.pipeline_cls(self.host_manager)
        self.options = scheduler_options.SchedulerOptions(conf.scheduler_json_config_location)
        #: The last request's figures, for logs and metrics.
        self.last_stats = {}
        self._placement_client = None

    @property
    def placement_client(self):
        if self._placement_client is None:
            from minisched.scheduler.client import report
            self._placement_client = report.SchedulerReportClient(self.conf)
        return self._placement_client

    def select_destinations(self, context, spec_obj, instance_uuids, alloc_reqs_by_rp_uuid,
                            provider_summaries, allocation_request_version=None,
                            return_alternates=False, dry_run=False):
        claims = None
        if alloc_reqs_by_rp_uuid is not None:
            claims = placement_claims.Claims(self.placement_client, alloc_reqs_by_rp_uuid,
                                             provider_summaries, allocation_request_version)
        if not self.notifier.is_enabled():  # the payload alone costs a third of a millisecond
            return self._schedule_with(context, spec_obj, instance_uuids, return_alternates,
                                       dry_run, claims)
        payload = {'request_spec': objects_base.obj_to_primitive(
            spec_obj.to_legacy_request_spec_dict())}
        self.notifier.info(context, 'scheduler.select_destinations.start', dict(payload))
        selections = self._schedule_with(context, spec_obj, instance_uuids, return_alternates,
                                         dry_run, claims)
        self.notifier.info(context, 'scheduler.select_destinations.end', dict(payload))
        return selections

    def _schedule_with(self, context, spec_obj, instance_uuids, return_alternates, dry_run,
                       claims):
        """:meth:`_schedule`, the request's allocation candidates (if any) handed to its
        filters for the time of it (``filters.REQUEST_CANDIDATES``)."""
        if claims is None:
            return self._schedule(context, spec_obj, instance_uuids, return_alternates,
                                  dry_run, claims)
        setattr(spec_obj, filters.REQUEST_CANDIDATES, claims.candidates)
        try:
            return self._schedule(context, spec_obj, instance_uuids, return_alternates,
                                  dry_run, claims)
        finally:
            delattr(spec_obj, filters.REQUEST_CANDIDATES)

    def _get_all_host_candidates(self, context, spec_obj):
        """Template method: the candidates of this request (caching driver overrides it)."""
        self.host_manager.ensure_initialized(context)
        self.host_manager.refresh(context)
        return self.pipeline.initial(context, spec_obj)

    def _schedule(self, context, spec_obj, instance_uuids, return_alternates=False,
                  dry_run=False, claims=None):
        """The selections of a request; with ``dry_run``, decided exactly as usual (each
        instance sees the earlier ones' consumption) and then everything the request
        consumed is given back, so that nothing of it outlives the request (nor is anything
        claimed in Placement). ``claims``: the Placement path."""
        start = time.monotonic()
        elevated = context.elevated()
        # Handed to filters as Nova's filter_properties['config_options'] was (not a field).
        spec_obj.config_options = self.options.get_configuration()
        candidates = self._get_all_host_candidates(elevated, spec_obj)
        if claims is not None:
            candidates = self.pipeline.keep(candidates, claims.provider_uuids)
        if not self.conf.filter_scheduler.track_instance_changes:
            # No compute sends its instances: read them, as Nova does then.
            self.host_manager.read_instances(elevated, self.pipeline.states(candidates))
        hosts_in = len(candidates)
        num_instances = len(instance_uuids) if instance_uuids else spec_obj.num_instances
        num_alts = self.conf.scheduler.max_attempts - 1 if return_alternates else 0
        # One instance looks at the first few weighed hosts only. Several must keep the
        # whole order: each next one is weighed from it, ties kept in it (Nova's lists).
        top = None
        if num_instances == 1:
            top = self.conf.filter_scheduler.host_subset_size + num_alts
        selected, added, last_result, filters_ran = [], [], None, False
        limits = []  # per selected host: the limits it was chosen with (not its own .limits)
        chosen_requests = []  # per selected host, on the Placement path: its allocation request
        for num in range(num_instances):
            instance_uuid = instance_uuids[num] if instance_uuids else None
            if instance_uuid:
                spec_obj.instance_uuid = instance_uuid
                spec_obj.obj_reset_changes(['instance_uuid'])
            candidates, last_result, filters_ran = self._get_sorted_hosts(spec_obj, candidates,
                                                                          num, top)
            if not len(candidates):
                break
            position = 0
            if claims is not None and instance_uuid and not dry_run:
                position = claims.claim(elevated, spec_obj, instance_uuid, (
                    self.pipeline.state(candidates, i) for i in range(len(candidates))))
                if position is None:
                    break
            chosen = self.pipeline.state(candidates, position)
            limits.append(self._limits_for(chosen, spec_obj, filters_ran))
            selected.append(chosen)
            if claims is not None:
                # The candidate claimed (or, unclaimed, the one it would be): later
                # instances' filters may narrow the host's candidates further.
                chosen_requests.append(claims.request_for(chosen))
            if self._consume_selected_host(chosen, spec_obj, instance_uuid, limits[-1]):
                added.append((chosen, instance_uuid))
        if len(selected) < num_instances and claims is not None:
            claims.give_back(elevated)
        self._ensure_sufficient_hosts(selected, added, num_instances, last_result, spec_obj)
        selections = self._get_alternate_hosts(selected, limits, spec_obj, candidates,
                                               num_instances - 1, num_alts, filters_ran,
                                               claims, chosen_requests)
        if dry_run:
            self._give_back(selected, added, spec_obj)
        elapsed = time.monotonic() - start
        self.last_stats = {'seconds': elapsed, 'hosts_in': hosts_in,
                           'filter_counts': last_result.counts if last_result else []}
        metrics.record_request(self.last_stats)
        LOG.debug('Scheduled %(n)d instance(s) over %(hosts)d host(s) in %(ms).2f ms',
                  {'n': num_instances, 'hosts': hosts_in, 'ms': elapsed * 1000})
        return selections

    def _get_sorted_hosts(self, spec_obj, candidates, index, top=None):
        """Filter and weigh; the chosen host (random among the best subset) comes first.
        ``top``: how many hosts after those tied with the best the caller looks at in
        order (more are put in order when reached); all when None."""
        survivors, result, filters_ran = self.pipeline.filter(candidates, spec_obj, index)
        if not len(survivors):
            return survivors, result, filters_ran
        weighed, weights = self.pipeline.weigh(survivors, spec_obj, top)
        count = len(weighed)
        head = []  # the best-weighed ties, shuffled: positions 0..ties-1 in their new order
        if self.conf.filter_scheduler.shuffle_best_same_weighed_hosts:
            head = list(range(_leading_ties(weights)))
            random.shuffle(head)
        subset_size = min(self.conf.filter_scheduler.host_subset_size, count)
        # The first subset_size positions of the (shuffled) order: the same lists, hence the
        # same random draws, as Nova's list(range(count)) with the ties replaced.
        chosen = random.choice(head[:subset_size] + list(range(len(head), subset_size)))
        return self.pipeline.chosen_first(weighed, head, chosen), result, filters_ran

    def _limits_for(self, host_state, spec_obj, filters_ran):
        """The limits the resource filters give ``host_state`` for this request, as a dict of
        the request's own.

        Host states outlive requests and are shared by the concurrent ones, so the limits
        are neither kept from filtering (the vectorised filters set none) nor written into
        ``host_state.limits``: a request resetting them there while another read them sent
        a compute a claim without a limit, which then accepted anything. Nor are they
        re-filtered: a host another request consumed from since this one filtered it may
        not pass any more, and still needs the limits it passed with. Forced hosts (no
        filters ran) get none, as in Nova.
        """
        limits = {}
        if not filters_ran:
            return limits
        rebuild = filters.is_rebuild(spec_obj)
        for flt in self.host_manager.enabled_filters:
            if flt.SETS_LIMITS and (flt.RUN_ON_REBUILD or not rebuild):
                limits.update(flt.limits_for(host_state, spec_obj))
        return limits

    def _consume_selected_host(self, selected_host, spec_obj, instance_uuid=None,
                               limits=None):
        """Consume the request from the chosen host (fitted with ``limits``, the ones it
        was chosen with); True when the instance was added to the host's instances (see
        :meth:`_give_back`)."""
        LOG.debug('Selected host: %(host)s', {'host': selected_host})
        selected_host.consume_from_request(spec_obj, limits=limits)
        group = spec_obj.instance_group if spec_obj.obj_attr_is_set('instance_group') else None
        if group is not None:
            group.hosts = list(group.hosts if group.obj_attr_is_set('hosts') else []) + \
                [selected_host.host]
            group.obj_reset_changes(['hosts'])
            if instance_uuid and instance_uuid not in selected_host.instances:
                flavor = spec_obj.flavor
                selected_host.instances[instance_uuid] = instance_obj.Instance(
                    uuid=instance_uuid,
                    instance_type_id=flavor.id if flavor.obj_attr_is_set('id') else None)
                return True
        return False

    @staticmethod
    def _give_back(selected, added, spec_obj):
        """Undo the request's consumption of ``selected`` hosts, latest first, and drop the
        instances it added to them (``added``: ``(host state, instance uuid)``)."""
        for host_state in reversed(selected):
            host_state.unconsume_from_request(spec_obj)
        for host_state, instance_uuid in added:
            host_state.instances.pop(instance_uuid, None)

    def _ensure_sufficient_hosts(self, selected, added, num_instances, last_result, spec_obj):
        if len(selected) >= num_instances:
            return
        # Nothing is built for a request that fails as a whole: give back what it took.
        self._give_back(selected, added, spec_obj)
        metrics.record_no_valid_host(last_result.counts if last_result is not None else None)
        reason = 'There are not enough hosts available.'
        explanation = last_result.explain() if last_result is not None else ''
        if explanation:
            reason = '%s Filters rejected hosts: %s.' % (reason, explanation)
        down = self.host_manager.unreachable_cells(spec_obj)
        if down:
            # Not a lack of hosts: those of these cells could not be considered.
            raise exception.CellsUnreachable(reason='%s; their hosts could not be considered. '
                                             '%s' % (_unreachable(down), reason),
                                             cells=[name for name, _since in down])
        raise exception.NoValidHost(reason=reason)

    def _get_alternate_hosts(self, selected, limits, spec_obj, candidates, index, num_alts,
                             filters_ran, claims=None, chosen_requests=()):
        if index > 0 and num_alts > 0:
            candidates, _, filters_ran = self._get_sorted_hosts(spec_obj, candidates, index)
        selected_keys = {(s.host, s.nodename) for s in selected}
        selections = []
        for number, (chosen, chosen_limits) in enumerate(zip(selected, limits)):
            alternates = []
            # Walked lazily: the alternates are found among the first few of the candidates.
            pool = (self.pipeline.state(candidates, position)
                    for position in range(len(candidates) if num_alts else 0))
            for host_state in pool:
                if len(alternates) >= num_alts:
                    break
                if (host_state.cell_uuid == chosen.cell_uuid and
                        (host_state.host, host_state.nodename) not in selected_keys):
                    alloc_req = claims.request_for(host_state) if claims else None
                    if claims is not None and alloc_req is None:
                        continue
                    alternates.append(selection_obj.Selection.from_host_state(
                        host_state, alloc_req, claims.version if claims else None,
                        limits=self._limits_for(host_state, spec_obj, filters_ran)))
            selections.append([selection_obj.Selection.from_host_state(
                chosen, chosen_requests[number] if claims else None,
                claims.version if claims else None, limits=chosen_limits)] + alternates)
        return selections


def _unreachable(down):
    """'Cell cell1 unreachable since 2026-01-02T03:04:05Z, cell cell2 ...'."""
    return ', '.join('%s %s unreachable since %s' % (
        'Cell' if i == 0 else 'cell', name, since.strftime('%Y-%m-%dT%H:%M:%SZ'))
        for i, (name, since) in enumerate(down))
