"""Replay requests over a snapshot with the real FilterScheduler, offline, and report.

Each configuration gets host states of its own, filled from the snapshot, and a
:class:`~minisched.scheduler.replay.offline.HeldStateScheduler` built from it (its filters,
weighers, ``host_subset_size``...). The requests run in order, each consuming from the hosts
it is placed on as in a scheduler worker, with the clock held at the moment the snapshot was
taken (services are up or down as they were then). Random choices (``host_subset_size``,
``shuffle_best_same_weighed_hosts``) are seeded per request, so that two configurations see
the same draws for the same request.
"""
import collections
import dataclasses
import math
import random

import numpy as np

from minisched import context as ms_context
from minisched import exception
from minisched.objects import flavor as flavor_obj
from minisched.objects import request_spec as request_spec_obj
from minisched.scheduler import filter_scheduler
from minisched.scheduler.replay import offline
from minisched.scheduler.replay import snapshot as snapshot_mod
from minisched.scheduler.replay import trace

#: Percentiles of host utilization the report gives.
PERCENTILES = (10, 50, 90, 100)
RATIO_NAMES = ('cpu_allocation_ratio', 'ram_allocation_ratio', 'disk_allocation_ratio')


# -- running --------------------------------------------------------------------------


class _CountingPipeline(filter_scheduler.RowPipeline):
    """The row pipeline, keeping every filter run's counts (hosts in, hosts out)."""

    def __init__(self, host_manager):
        super().__init__(host_manager)
        self.rejected = collections.Counter()
        self.last_counts = []

    def filter(self, candidates, spec_obj, index):
        survivors, result, ran = super().filter(candidates, spec_obj, index)
        self.last_counts = result.counts if result is not None else []
        for name, start, end in self.last_counts:
            self.rejected[name] += start - end
        return survivors, result, ran


@dataclasses.dataclass
class Outcome:
    """What a configuration made of a trace."""

    name: str
    placements: list          # per request: [(host, node)...] or None (NoValidHost)
    emptied_by: collections.Counter
    rejected: collections.Counter
    hosts_used: tuple         # (before, after)
    utilization: dict         # resource -> {'p10': ..., 'mean': ..., 'hosts': [...]}
    host_names: list          # the hosts of utilization's per-host values, in their order
    fits: dict                # flavor name -> (before, after)
    reproduced: tuple = None  # (requests matching their recorded answer, recorded ones)


def scheduler_for(conf, name=''):
    """The offline scheduler ``conf`` describes; a filter or weigher it names that does not
    exist is an error naming the configuration. A deprecated filter's warning is logged
    once per process, and only when the configuration chose the filters (not for the
    default list)."""
    try:
        with offline.deprecations(conf):
            return offline.HeldStateScheduler(conf)
    except exception.MinischedException as exc:
        raise exception.InvalidReplayConfig(name=name or '?', reason=exc.format_message())


def replay(snapshot, requests, scheduler, name='', seed=0, ratios=None):
    """Run ``requests`` over ``snapshot`` with ``scheduler`` (:func:`scheduler_for`, used
    once); ``ratios`` replace the nodes' allocation ratios (see :func:`snapshot.fill`)."""
    hm = scheduler.host_manager
    pipeline = scheduler.pipeline = _CountingPipeline(hm)
    snapshot_mod.fill(hm, snapshot, ratios=ratios)
    groups = _Groups(snapshot)
    flavors = _flavors_of(requests)
    context = ms_context.get_admin_context()
    with offline.clock_at(snapshot_mod.taken_at(snapshot)):
        used_before = _hosts_used(hm)
        fits_before = {n: fits(scheduler, f) for n, f in flavors.items()}
        placements, emptied = [], collections.Counter()
        for index, request in enumerate(requests):
            spec = _spec_of(request, index)
            groups.prepare(spec)
            random.seed(seed * 1000003 + index)
            try:
                selections = scheduler.select_destinations(context, spec,
                                                           request.instance_uuids, None, None)
            except exception.NoValidHost:
                placements.append(None)
                emptied[_emptier(pipeline.last_counts)] += 1
                continue
            except exception.MinischedException:
                raise
            except Exception as exc:  # what a recorded spec's values make the filters do
                raise exception.InvalidTrace(
                    path='(request #%d)' % (index + 1), reason='cannot be scheduled: %s: %s'
                    % (type(exc).__name__, exception.first_line(exc))) from exc
            placed = [(s[0].service_host, s[0].nodename) for s in selections]
            groups.placed(spec, placed, request.instance_uuids)
            placements.append(placed)
        fits_after = {n: fits(scheduler, f) for n, f in flavors.items()}
    recorded = [(r.recorded, p) for r, p in zip(requests, placements) if r.recorded is not None]
    return Outcome(
        name=name, placements=placements, emptied_by=emptied, rejected=pipeline.rejected,
        hosts_used=(used_before, _hosts_used(hm)), utilization=utilization(hm),
        host_names=[_name(hm.table.states[row]) for row in _columns(hm)[0]],
        fits={n: (fits_before[n], fits_after[n]) for n in flavors},
        reproduced=(sum(1 for rec, got in recorded if _same(rec, got)), len(recorded))
        if recorded else None)


def _spec_of(request, index):
    try:
        spec = request_spec_obj.RequestSpec.obj_from_primitive(request.spec)
    except Exception as exc:  # whatever the object layer finds wrong in a recorded spec
        spec = '%s: %s' % (type(exc).__name__, exc)
    if not isinstance(spec, request_spec_obj.RequestSpec):
        raise exception.InvalidTrace(path='(request #%d)' % (index + 1),
                                     reason='not a RequestSpec: %s' % (
                                         spec if isinstance(spec, str) else
                                         type(spec).__name__))
    return spec


def _same(recorded, placed):
    if isinstance(recorded, str):
        return placed is None
    return placed is not None and [tuple(x) for x in recorded] == placed


def _emptier(counts):
    """The filter that left no host (``no candidate host`` when none ran)."""
    return next((name for name, _start, end in counts if end == 0), 'no candidate host')


class _Groups:
    """Server group hosts and members as the replay places them (a recorded spec carries
    those of the live run, which another configuration may not have made)."""

    def __init__(self, snapshot):
        self.hosts = {g['uuid']: list(g['hosts']) for g in snapshot['server_groups']}
        self.members = {g['uuid']: list(g['members']) for g in snapshot['server_groups']}

    def prepare(self, spec):
        group = spec.instance_group if spec.obj_attr_is_set('instance_group') else None
        if group is None or not group.obj_attr_is_set('uuid'):
            return
        if group.uuid not in self.hosts:
            self.hosts[group.uuid] = list(group.hosts if group.obj_attr_is_set('hosts')
                                          else [])
            self.members[group.uuid] = list(group.members if group.obj_attr_is_set('members')
                                            else [])
        group.hosts = list(self.hosts[group.uuid])
        group.members = list(self.members[group.uuid])
        group.obj_reset_changes(['hosts', 'members'])

    def placed(self, spec, placed, uuids):
        group = spec.instance_group if spec.obj_attr_is_set('instance_group') else None
        if group is None or not group.obj_attr_is_set('uuid'):
            return
        self.hosts[group.uuid].extend(host for host, _node in placed)
        self.members[group.uuid].extend(uuids or ())


# -- figures --------------------------------------------------------------------------


def _flavors_of(requests):
    """The distinct flavors of the requests, by name, in order of first use."""
    found = {}
    for request in requests:
        data = request.spec.get('minisched_object.data', {})
        flavor = data.get('flavor')
        if flavor is not None:
            obj = flavor_obj.Flavor.obj_from_primitive(flavor)
            found.setdefault(obj.name, obj)
    return found


def _columns(hm):
    rows = hm.table.rows()
    rows = rows[hm.table.columns['mapped'][rows]]
    return rows, {name: column[rows] for name, column in hm.table.columns.items()}


def _name(state):
    return state.host if state.host == state.nodename else '%s/%s' % (state.host,
                                                                      state.nodename)


def _hosts_used(hm):
    _rows, cols = _columns(hm)
    return int(np.count_nonzero(cols['num_instances'] > 0))


def utilization(hm):
    """Per resource (``ram``, ``vcpu``, ``disk``), the share of each host's allocatable
    capacity (its total times its allocation ratio) in use, in percent: percentiles, mean and
    standard deviation over the mapped hosts, and the per-host values (``hosts``)."""
    _rows, cols = _columns(hm)
    ram_total = cols['total_usable_ram_mb'].astype(float)
    disk_total = cols['total_usable_disk_gb'].astype(float) * 1024
    used = {'ram': (ram_total - cols['free_ram_mb'],
                    ram_total * cols['ram_allocation_ratio']),
            'vcpu': (cols['vcpus_used'].astype(float),
                     cols['vcpus_total'] * cols['cpu_allocation_ratio']),
            'disk': (disk_total - cols['free_disk_mb'],
                     disk_total * cols['disk_allocation_ratio'])}
    figures = {}
    for resource, (amount, total) in used.items():
        with np.errstate(divide='ignore', invalid='ignore'):
            share = np.where(total > 0, 100.0 * amount / total, 0.0)
        figures[resource] = dict(
            {'p%d' % p: float(np.percentile(share, p)) if len(share) else 0.0
             for p in PERCENTILES},
            mean=float(share.mean()) if len(share) else 0.0,
            stdev=float(share.std()) if len(share) else 0.0, hosts=share.tolist())
    return figures


def fits(scheduler, flavor):
    """How many more instances of ``flavor`` the hosts hold: on each host that passes the
    configuration's filters for one of them, as many as its free RAM, vCPUs and disk allow
    once the allocation ratios are applied (the RAM, Core and Disk filters' arithmetic)."""
    hm = scheduler.host_manager
    spec = trace.spec_for(flavor, 1)
    candidates = hm.candidate_rows(spec)
    survivors, _result, _ran = filter_scheduler.RowPipeline.filter(
        scheduler.pipeline, candidates, spec, 0)
    rows = np.asarray(survivors, dtype=np.int64)
    if not len(rows):
        return 0
    col = {name: column[rows] for name, column in hm.table.columns.items()}
    ram_total = col['total_usable_ram_mb']
    ram_room = ram_total * col['ram_allocation_ratio'] - (ram_total - col['free_ram_mb'])
    cpu_room = col['vcpus_total'] * col['cpu_allocation_ratio'] - col['vcpus_used']
    disk_total = col['total_usable_disk_gb'] * 1024.0
    disk_room = disk_total * col['disk_allocation_ratio'] - (disk_total - col['free_disk_mb'])
    counts = np.full(len(rows), np.inf)
    disk_mb = (flavor.root_gb + flavor.ephemeral_gb) * 1024
    for room, need in ((ram_room, flavor.memory_mb), (cpu_room, flavor.vcpus),
                       (disk_room, disk_mb)):
        if need > 0:
            counts = np.minimum(counts, np.floor(np.nan_to_num(room) / need))
    counts = np.where(np.isfinite(counts), counts, 0)
    return int(np.clip(counts, 0, None).sum())


def differences(outcomes, requests, limit=20):
    """``(count, [(request number, label, [placement per outcome])...])`` of the requests
    the outcomes placed differently (the first ``limit``)."""
    found = []
    for index in range(len(requests)):
        placed = [o.placements[index] for o in outcomes]
        if any(p != placed[0] for p in placed[1:]):
            found.append((index + 1, requests[index].label or _label(requests[index]),
                          placed))
    return len(found), found[:limit]


def _label(request):
    flavor = request.spec.get('minisched_object.data', {}).get('flavor', {})
    name = flavor.get('minisched_object.data', {}).get('name', '?')
    return '%s x%d' % (name, request.num_instances)


def shown(placement):
    if placement is None:
        return 'NoValidHost'
    return ', '.join(host if host == node else '%s/%s' % (host, node)
                     for host, node in placement)


def percent(value):
    return '%.1f%%' % value if not math.isnan(value) else '-'
