"""Placement bench: ``select_destinations`` with the real Placement, minisched beside Nova 34.

At each size (1,000 and 10,000 hosts; ``--quick``: 1,000 only, fewer calls), one run holds:

* A real Placement (``minisched.localcluster.placement.PlacementServer``: uWSGI, one worker,
  on SQLite in a state directory of its own) holding one resource provider per synthetic host
  (:mod:`benchmarks.placement_load`: VCPU, MEMORY_MB and DISK_GB inventories at Nova's default
  allocation ratios, the hosts' usage as allocations, the traits a compute reports), loaded
  in bulk through Placement's own table definitions before it starts, then checked through
  its API.
* minisched: the same hosts in an SQLite database (compute node uuid = provider uuid), a
  ``minisched-scheduler`` (one worker, :mod:`benchmarks.placement_scheduler`) on a RabbitMQ
  vhost of its own, called over RPC by a spawned client with the product's
  ``SchedulerAPI``, first with ``[placement] enabled = false`` (the same calls and filters
  over every host: the reference for its own time), then with it enabled. Each call is
  timed by the client (total) and by the scheduler around its manager's
  ``select_destinations``, where Placement's share is what its report client waited on
  Placement (``GET /allocation_candidates``, the claim's ``GET`` and ``PUT
  /allocations``); minisched's own time is the rest.
* Nova 34: the real ``nova.scheduler.manager.SchedulerManager``
  (:mod:`benchmarks.placement_nova`) on the same Placement and the same hosts (its own
  databases, made by Nova's migrations), called in its process, timed the same way around
  its manager and report client.

Both get the same requests (small flavors, one instance each), the same filters (Nova's
default ``enabled_filters``), all weighers, ``max_placement_results`` 1,000; each request's
claim is given back before the next (outside the clock), so both see the same free capacity.
The decisions are checked: every request placed, on a known, enabled host, its claim made.

With ``build``: the build bench (:mod:`benchmarks.build`) twice in the same run, without
Placement and with it (the computes reporting their providers, the scheduler claiming), for
throughput and CPU per build, Placement's uWSGI processes counted from /proc.
"""
import glob
import os
import shutil
import tempfile
import uuid

from benchmarks import cluster
from benchmarks import common
from benchmarks import databases
from benchmarks import placement_load
from benchmarks import placement_nova
from benchmarks import placement_scheduler
from benchmarks import synthetic

#: (memory_mb, vcpus, root_gb, ephemeral_gb) of the requests, in turn.
FLAVORS = ((512, 1, 1, 0), (2048, 1, 20, 0), (4096, 2, 40, 0))
MAX_PLACEMENT_RESULTS = 1000
WARMUP = 3


def requests(count, first=0):
    """``[(flavor, [instance uuid])]``: the same for both schedulers."""
    return [(FLAVORS[index % len(FLAVORS)],
             ['%08x-0000-4000-8000-%012x' % (index, 0xbe)]) for index in range(first,
                                                                               first + count)]


def scheduler_sections(placement_url):
    """The scheduler's settings, all explicit (none left to the defaults)."""
    return {'placement': dict(placement_load_client(placement_url), enabled=True),
            'scheduler': {'max_placement_results': MAX_PLACEMENT_RESULTS, 'workers': 1},
            'filter_scheduler': {'enabled_filters': ','.join(placement_nova.FILTERS),
                                 'host_subset_size': 1}}


def placement_load_client(url):
    from minisched.localcluster import placement
    return dict(placement.client_options(url))


def _ms_spec(request):
    from minisched.objects import flavor as flavor_obj
    from minisched.objects import image_meta
    from minisched.objects import request_spec
    (memory_mb, vcpus, root_gb, ephemeral_gb), uuids = request
    flavor = flavor_obj.Flavor(name='bench%d' % memory_mb, flavorid=str(memory_mb),
                               memory_mb=memory_mb, vcpus=vcpus, root_gb=root_gb,
                               ephemeral_gb=ephemeral_gb, swap=0, extra_specs={})
    return request_spec.RequestSpec(
        flavor=flavor, image=image_meta.ImageMeta.from_dict({'properties': {}}),
        num_instances=len(uuids), project_id='bench', user_id='bench', scheduler_hints={},
        ignore_hosts=None, force_hosts=None, force_nodes=None, retry=None, limits=None,
        instance_group=None, availability_zone=None, requested_destination=None)


def _minisched_work(conf_file, placement_url, warmup, timed, ready):
    from minisched import context as ms_context
    from minisched.scheduler import rpcapi
    conf = cluster.client_setup(conf_file)
    scheduler = rpcapi.SchedulerAPI(conf)
    ctxt = ms_context.RequestContext(user_id='bench', project_id='bench', is_admin=True)
    specs = {request[1][0]: _ms_spec(request) for request in warmup + timed}

    def select(request):  # the RequestSpec made before the clock, as the e2e bench does
        selections = scheduler.select_destinations(ctxt, specs[request[1][0]],
                                                   list(request[1]), return_objects=True,
                                                   return_alternates=True)
        return [sel[0].service_host for sel in selections]
    return placement_load.timed_calls(select, placement_url, warmup, timed, ready)


def _minisched_child(conf_file, placement_url, warmup, timed, queue, start):
    cluster.child_main(queue, start, _minisched_work, conf_file, placement_url, warmup, timed)


def scheduler_timings(directory, timed):
    """``{'total': [s], 'placement': [s]}`` the scheduler wrote for the ``timed`` requests,
    in their order."""
    by_uuid = {}
    for path in glob.glob(os.path.join(directory, 'sched-*.txt')):
        with open(path) as handle:
            for line in handle:
                seconds, placement, uuids = (line.split() + [''])[:3]
                by_uuid[uuids.split(',')[0]] = (float(seconds), float(placement))
    found = [by_uuid.get(uuids[0]) for _flavor, uuids in timed]
    if None in found:
        raise RuntimeError('the scheduler recorded %d of the %d timed requests'
                           % (len(found) - found.count(None), len(found)))
    return {'total': [t for t, _p in found], 'placement': [p for _t, p in found]}


def _ms(values, pct):
    return common.percentile(values, pct) * 1000


def _split_figures(who, hosts, total, placement, note=''):
    """p50/p99 of the total, Placement's share and the rest (ms), and the share (%)."""
    own = [t - p for t, p in zip(total, placement)]
    share = 100.0 * sum(placement) / sum(total) if total else float('nan')
    label = '%s select_destinations @%d hosts' % (who, hosts)
    return [
        common.info(label + ', total p50', _ms(total, 50), 'ms',
                    'p99 %.4g ms; %d calls%s' % (_ms(total, 99), len(total), note)),
        common.info(label + ', Placement p50', _ms(placement, 50), 'ms',
                    'p99 %.4g ms; %.0f%% of the total time' % (_ms(placement, 99), share)),
        common.info(label + ', own p50', _ms(own, 50), 'ms',
                    'p99 %.4g ms (the total less Placement)' % _ms(own, 99)),
    ]


def decisions_figure(hosts, results, pairs, instances):
    """Every request placed on a known, enabled host, and (with Placement) each claim there
    to give back."""
    enabled = {s['host'] for s, _n in pairs if not s['disabled']}
    problems = []
    for who, result in results.items():
        wrong = [h for chosen in result['hosts'] for h in (chosen or ()) if h not in enabled]
        unplaced = sum(chosen is None for chosen in result['hosts'])
        claimed = 0 if who == 'without' else instances  # no claim without Placement
        if unplaced or wrong or result['released'] != claimed:
            problems.append('%s: %d unplaced (%s), %d on unknown or disabled hosts, %d/%d '
                            'claims found' % (who, unplaced, '; '.join(
                                sorted(set(result['errors'])))[:200], len(wrong),
                                result['released'], claimed))
    same = sum(a == b for a, b in zip(results['minisched']['hosts'], results['nova']['hosts']))
    return common.Figure('decisions placement @%d hosts' % hosts, 'ok' if not problems else
                         'WRONG', '', 'all valid', not problems,
                         '; '.join(problems) or '%d requests each, all placed and claimed; '
                         'the same host chosen by both for %d; without Placement all placed'
                         % (instances, same))


def _minisched_phase(bench, timings_dir, placement_url, warmup, timed, calls, enabled):
    """A scheduler with ``[placement] enabled`` as said, the calls made, the scheduler
    stopped: ``(the client's results, the scheduler's timings)``."""
    name = 'scheduler-%s' % ('with' if enabled else 'without')
    directory = os.path.join(timings_dir, name)
    os.makedirs(directory)
    bench.env[placement_scheduler.ENV] = directory
    bench.start(name, 'benchmarks.placement_scheduler', {'placement': {'enabled': enabled}},
                ready='minisched-scheduler ready')
    try:
        result, = cluster.run_children(
            _minisched_child, [(bench.conf_file, placement_url, warmup, timed)],
            timeout=600 + 60 * calls)
    finally:
        bench.stop(name)
    return result, scheduler_timings(directory, timed)


def _ms_query(request):
    """The ``GET /allocation_candidates`` URL minisched sends for ``request``."""
    from minisched import context as ms_context
    from minisched.scheduler import request_filter
    from minisched.scheduler import resource_request
    conf = common.in_process_conf()
    spec = _ms_spec(request)
    request_filter.process_reqspec(ms_context.get_admin_context(), spec, conf)
    return '/allocation_candidates?' + resource_request.ResourceRequest.from_request_spec(
        spec, limit=MAX_PLACEMENT_RESULTS).to_querystring()


def _queries(results, timed):
    """``{who: the query of the 2 GB request}``: minisched's as it builds it, Nova's as it
    sent it."""
    request = next(r for r in timed if r[0] == FLAVORS[1])
    found = {'minisched': _ms_query(request)}
    nova = [q for q in results.get('nova', {}).get('queries', ()) if 'MEMORY_MB%3A2048' in q]
    if nova:
        found['Nova 34'] = nova[0]
    return found


def _placement_alone(url, queries, calls):
    """``{who: [seconds]}``: each scheduler's query sent straight to Placement, the two in
    turn, ``calls`` times each (the same Placement, the same moment)."""
    import time
    times = {who: [] for who in queries}
    for _round in range(calls):
        for who, query in queries.items():
            start = time.perf_counter()
            status, _body = placement_load.request(url, 'GET', query, raw=True)
            times[who].append(time.perf_counter() - start)
            if status != 200:
                raise RuntimeError('%s answered %s' % (query, status))
    return times


def run_size(url, hosts, calls, out=print, nova=True):
    """The figures at ``hosts`` hosts."""
    from minisched.localcluster import placement
    workdir = tempfile.mkdtemp(prefix='minisched-bench-placement-')
    server = placement.PlacementServer(os.path.join(workdir, 'placement'))
    timings_dir = os.path.join(workdir, 'timings')
    os.makedirs(timings_dir)
    os.makedirs(os.path.join(workdir, 'minisched'))
    warmup, timed = requests(WARMUP), requests(calls, first=WARMUP)
    try:
        server.write_config()
        server.db_sync()
        pairs = placement_load.node_rows(hosts)
        placement_load.load(server.database_url, pairs)
        server.start()
        placement_load.check(server.url, pairs)
        out('  placement: %d providers in Placement (SQLite) at %s' % (hosts, server.url))
        results = {}
        with databases.sqlite_db(workdir) as db_url:
            synthetic.write_db(db_url, pairs, api_url=db_url, cell_uuid=str(uuid.uuid4()),
                               transport_url=url)
            bench = cluster.Cluster(url, db_url, workdir=os.path.join(workdir, 'minisched'),
                                    sections=scheduler_sections(server.url))
            try:
                out('  placement: minisched without Placement (the reference), %d calls...'
                    % calls)
                results['without'], without = _minisched_phase(
                    bench, timings_dir, server.url, warmup, timed, calls, enabled=False)
                out('  placement: minisched with Placement, %d calls...' % calls)
                results['minisched'], own = _minisched_phase(
                    bench, timings_dir, server.url, warmup, timed, calls, enabled=True)
            except BaseException:
                out('  placement bench failed; logs under %s' % bench.workdir)
                bench.stop_all()
                raise
            bench.stop_all()
        if nova:
            out('  placement: Nova 34, %d calls...' % calls)
            nova_dir = os.path.join(workdir, 'nova')
            os.makedirs(nova_dir)
            results['nova'], = cluster.run_children(
                placement_nova.run_child, [(nova_dir, server.url, MAX_PLACEMENT_RESULTS,
                                            hosts, warmup, timed)], timeout=900 + 60 * calls)
        decode, size = placement_load.decode_seconds(server.url, MAX_PLACEMENT_RESULTS)
        queries = _queries(results, timed)
        placement_alone = _placement_alone(server.url, queries, calls)
    finally:
        server.stop()
    ms = results['minisched']
    figures = _split_figures('minisched', hosts, own['total'], own['placement'],
                             note='; scheduler side (its manager)')
    figures.append(common.info(
        'minisched select_destinations @%d hosts, over RabbitMQ p50' % hosts,
        _ms(ms['total'], 50), 'ms', 'p99 %.4g ms; the client\'s clock: RPC and the '
        'RequestSpec\'s (de)serialization added' % _ms(ms['total'], 99)))
    figures.append(common.info(
        'minisched select_destinations @%d hosts without Placement, total p50' % hosts,
        _ms(without['total'], 50), 'ms', 'p99 %.4g ms; scheduler side; the same calls and '
        'filters, every host filtered and weighed; over RabbitMQ p50 %.4g ms' % (
            _ms(without['total'], 99), _ms(results['without']['total'], 50))))
    figures.append(common.info(
        'decoding Placement\'s answer @%d hosts (in both schedulers\' own time)' % hosts,
        decode * 1000, 'ms', 'json.loads of %.0f kB: the allocation candidates of one 2 GB '
        'request (max_placement_results %d)' % (size / 1000.0, MAX_PLACEMENT_RESULTS)))
    for who, times in placement_alone.items():
        figures.append(common.info(
            'Placement alone @%d hosts, %s\'s query, p50' % (hosts, who), _ms(times, 50), 'ms',
            'p99 %.4g ms; %d GETs, the queries in turn: %s' % (
                _ms(times, 99), len(times), queries[who].split('?', 1)[1])))
    if nova:
        figures += _split_figures('Nova 34', hosts, results['nova']['total'],
                                  results['nova']['placement'],
                                  note='; its manager, in its process')
        figures.append(decisions_figure(hosts, results, pairs, calls))
    if not os.environ.get('MINISCHED_BENCH_KEEP'):
        shutil.rmtree(workdir, ignore_errors=True)
    return figures


def run(sizes=(1000, 10000), calls_for=None, out=print, nova=True, build=None):
    """The figures at each of ``sizes``; ``calls_for(size)``: timed calls per size.
    ``build``: ``(instances, computes, per process)`` of the build comparison, or None."""
    calls_for = calls_for or (lambda size: 30 if size <= 1000 else 10)
    figures = []
    with cluster.vhost(suffix='placement') as url:
        for hosts in sizes:
            figures += run_size(url, hosts, calls_for(hosts), out=out, nova=nova)
    if build:
        figures += build_figures(*build, out=out)
    return figures


def build_figures(instances, computes, per_process, out=print):
    """The build bench without Placement, then with it, in this run."""
    from benchmarks import build
    figures = []
    for with_placement in (False, True):
        out('  placement: build bench %s Placement...' % ('with' if with_placement else
                                                         'without'))
        found = build.run(instances, computes, per_process, out=out, trace_on=True,
                          reports=[], placement=with_placement)
        suffix = ' [%s Placement]' % ('with' if with_placement else 'without')
        per_build = {f.figure: f.value for f in found
                     if f.figure.startswith('build CPU per instance, ')}
        servers = [name for name in ('rabbitmq', 'postgresql', 'placement')
                   if 'build CPU per instance, ' + name in per_build]
        figures.append(common.info(
            'build CPU per instance, all' + suffix, sum(
                per_build['build CPU per instance, ' + name] for name in
                ['minisched processes'] + servers), 'ms',
            'minisched processes + %s (from /proc)' % ' + '.join(servers)))
        for figure in found:
            if figure.figure.startswith(('build throughput', 'request -> ACTIVE p50',
                                         'build CPU per instance')):
                figure.figure += suffix
                figure.met = None  # the comparison is information; build has its targets
                figure.target = ''
                figures.append(figure)
    return figures
