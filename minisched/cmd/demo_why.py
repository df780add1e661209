"""Why the demo's instances landed where they did, from what the cluster records.

Before each boot the demo asks the scheduler's own filters and weighers (a
:class:`~minisched.scheduler.host_manager.HostManager` built from the cluster's config, on
the host states the computes wrote to the database) how they rank the hosts for that
request: how many hosts each filter removed, the first host with its weight and the
runner-up; with Placement, first the hosts its allocation candidates leave out, as the
scheduler asks it. The scheduler service decides on the same data with the same code; when it chose
another host (its view of the hosts can be a report ahead) the line says so. After the boot,
the instance's actions tell every reschedule and its reason (the build event a compute
finished as Error), and its faults why it failed.
"""
import collections
import types

from minisched.cmd import manage_scheduler
from minisched import exception
from minisched.scheduler import host_manager
from minisched.scheduler import placement_claims
from minisched.scheduler import scheduler_options

#: The compute's build event; one finished as Error means the build moved on (or failed).
BUILD_EVENT = 'compute_build_and_run_instance'

#: The name under which :func:`rank` counts the hosts Placement offered candidates on.
PLACEMENT = 'Placement'

#: A host in no aggregate: the configured multipliers, none overridden.
_NO_AGGREGATE = types.SimpleNamespace(aggregates=())

#: ``counts``: ``[(filter, hosts in, hosts out)]``; ``weighed``: ``[(host, weight)]`` best
#: first; ``lead``: ``(weigher, margin)``, the weigher that put the first host furthest ahead
#: of the runner-up, or None.
Ranking = collections.namedtuple('Ranking', 'counts weighed lead', defaults=(None,))


def scheduler_summary(conf):
    """One line: the enabled filters, and the weighers with their multipliers (those at 0,
    which change nothing, apart)."""
    manager = host_manager.HostManager(conf)
    multipliers = [(type(w).__name__, w.weight_multiplier(_NO_AGGREGATE))
                   for w in manager.weighers]
    used = ', '.join('%s x%g' % item for item in multipliers if item[1])
    idle = [name for name, multiplier in multipliers if not multiplier]
    return 'Scheduler: filters %s; weighers %s%s (a host\'s weight: the sum of multiplier x ' \
           'value normalised over the hosts).' % (
               ', '.join(type(f).__name__ for f in manager.enabled_filters), used or 'none',
               '; at x0: %s' % ', '.join(idle) if idle else '')


def rank(conf, ctxt, flavor, placement_client=None):
    """How the scheduler's filters and weighers rank the hosts for one instance of
    ``flavor`` now: ``Ranking(counts=[(filter, hosts in, hosts out)], weighed=[(host,
    weight)] best first)``. With ``placement_client`` the hosts are first those Placement
    offers allocation candidates on (counted as ``PLACEMENT``), as in the scheduler."""
    manager = host_manager.HostManager(conf)
    manager.ensure_initialized(ctxt)
    spec = manage_scheduler.build_spec(ctxt, flavor)
    spec.config_options = scheduler_options.SchedulerOptions(
        conf.scheduler_json_config_location).get_configuration()
    states = manager.get_host_states(manager.candidate_rows(spec))
    counts = []
    if placement_client is not None:
        try:
            offered = placement_claims.get_allocation_candidates(
                ctxt, spec, placement_client, conf)[0]
        except exception.NoValidHost:
            offered = {}
        counts.append((PLACEMENT, len(states), len(offered)))
        states = [state for state in states if state.uuid in offered]
    result = manager.filter_handler.run(manager.enabled_filters, states, spec)
    weighed = [(w.obj.host, w.weight)
               for w in manager.get_weighed_hosts(result.survivors, spec)]
    return Ranking(counts + list(result.counts), weighed,
                   _lead(manager, result.survivors, spec, weighed))


def _lead(manager, hosts, spec, weighed):
    """The weigher whose part of the weight sets the first host furthest ahead of the
    second: each weigher's part is the handler's weighing with that weigher alone (a host's
    weight is the sum of those parts)."""
    if len(weighed) < 2:
        return None
    (first, _), (second, _) = weighed[:2]
    margins = []
    for weigher in manager.weighers:
        part = {w.obj.host: w.weight for w in manager.weight_handler.get_weighed_objects(
            [weigher], hosts, spec)}
        margins.append((part[first] - part[second], type(weigher).__name__))
    margin, name = max(margins)
    return (name, margin) if margin > 0 else None


def placement_line(name, flavor_name, ranking, landed, moved_from=()):
    """``demo-01 m1.small -> compute3 (weight 1.500); runner-up compute2 (0.750); RamFilter
    removed 1 of 3``: where it landed (``landed``, None when nowhere) against how the
    filters and weighers ranked the hosts, and the hosts it was rescheduled from."""
    removed = ['%s %d of %d' % ('Placement had no room on' if flt == PLACEMENT else
                                flt + ' removed', start - end, start)
               for flt, start, end in ranking.counts if end < start]
    filters = '; '.join(removed) if removed else 'no filter removed a host'
    if not ranking.weighed:
        return '%-8s %-9s -> no host passed the filters: %s' % (name, flavor_name, filters)
    weights = dict(ranking.weighed)
    first, weight = ranking.weighed[0]
    first_text = '%s (weight %.3f)' % (first, weight)
    if landed == first:
        choice = first_text
    elif landed is None:
        choice = 'no host; first choice %s' % first_text
    else:
        landed_text = '%s (weight %s)' % (landed, '%.3f' % weights[landed]
                                          if landed in weights else 'unknown')
        if first in moved_from:
            choice = '%s after a reschedule; first choice %s' % (landed_text, first_text)
        else:
            choice = ('%s; these filters and weighers ranked %s first (the scheduler saw '
                      'other host states)' % (landed_text, first_text))
    if len(ranking.weighed) > 1:
        choice += '; runner-up %s (%.3f)' % ranking.weighed[1]
        if ranking.lead:
            choice += ', %s put the first ahead most (+%.3f)' % ranking.lead
    else:
        choice += '; no runner-up'
    return '%-8s %-9s -> %s; %s' % (name, flavor_name, choice, filters)


def reschedules(actions):
    """``[(host, reason)]`` of the builds that moved on, oldest first, from ``[(action,
    [events])]`` (``compute.api.API.get_actions``)."""
    moved = []
    for _action, events in actions:
        for event in events:
            if event.event == BUILD_EVENT and event.result == 'Error':
                moved.append((event.start_time, event.host or '?',
                              event.details or 'no reason recorded'))
    return [(host, reason) for _start, host, reason in sorted(moved, key=_start_key)]


def _start_key(item):
    start = item[0]
    return (start is None, start.replace(tzinfo=None) if start else None)


def with_ratio(used, total, ratio):
    """``8704/8192 (x1.5 = 12288)``: usage against the total and the limit the allocation
    ratio makes of it (what the filters compare)."""
    if ratio is None:
        return '%d/%d' % (used, total)
    return '%d/%d (x%g = %d)' % (used, total, ratio, int(total * ratio))
