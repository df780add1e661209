"""The build bench's message floor: the same burst through endpoints that do no work.

The deployment of the build bench, process for process (two conductor processes, two
scheduler processes, the computes in processes of ``per_process``, the same client on the same
broker and database server), with ``benchmarks.floor_server`` in each service's place: every
endpoint on a build's path answers at once with Nova's messages and replies of the real size,
and the conductor writes the rows a build writes, one statement each (see
``benchmarks.floor_endpoints``). What the floor builds per second is what the message flow and
the rows allow on this machine; the real figure's share of it is what minisched's own work
leaves.
"""
import os

from benchmarks import build
from benchmarks import cluster
from benchmarks import common
from benchmarks import databases

#: Processes standing for the conductor's and the scheduler's workers.
CONDUCTORS = 2
READY = 'build floor ready'


def _start(bench, name, role, sections=None, count=1):
    bench.start(name, 'benchmarks.floor_server',
                dict({'build_floor': {'role': role}}, **(sections or {})),
                ready=READY, ready_count=count)


def _start_all(bench, computes, per_process):
    names = ['bench-c%03d' % i for i in range(computes)]
    pool = {'max_pool_size': 15, 'max_overflow': 10}
    for index in range(CONDUCTORS):
        _start(bench, 'conductor%d' % index, 'conductor',
               {'database': pool, 'api_database': pool})
    for index in range(build.SCHEDULER_WORKERS):
        _start(bench, 'scheduler%d' % index, 'scheduler',
               {'build_floor': {'role': 'scheduler', 'hosts': ','.join(names)}})
    groups = [names[i:i + per_process] for i in range(0, computes, per_process)]
    for index, hosts in enumerate(groups):
        sizes = ','.join('%s:%d/%d/%d' % (host, *build.COMPUTE_SIZES[n % len(
            build.COMPUTE_SIZES)]) for n, host in enumerate(hosts))
        _start(bench, 'computes%d' % index, 'computes', {'fake_driver': {'host_sizes': sizes}},
               count=len(hosts))
    return len(groups)


def run(instances, computes, per_process, backend, timeout=900, trace_on=True, out=print,
        reports=None):
    """Boot ``instances`` through the floor on ``backend`` (``postgresql``, ``mysql`` or
    ``sqlite``); returns the figures of :func:`benchmarks.build.figures_for` (and the trace's
    totals with ``trace_on``; its text goes to ``reports``, a list, else to ``out``)."""
    db_context = databases.sqlite_db() if backend == 'sqlite' else \
        databases.server_db(backend)
    snapshots = {}
    with cluster.vhost(suffix='floor') as url, db_context as db_url:
        pools = {'max_pool_size': 5, 'max_overflow': 25}
        bench = cluster.Cluster(url, db_url, sections={
            'database': pools, 'api_database': pools})
        trace_dir = os.path.join(bench.workdir, 'trace') if trace_on else None
        if trace_dir:
            bench.env[build.trace.ENV_VAR] = trace_dir
        try:
            build._manage(bench, 'cell', 'simple_cell_setup')
            out('  build floor: %d computes in %d-compute processes, conductor and scheduler '
                'answering at once...' % (computes, per_process))
            processes = _start_all(bench, computes, per_process)
            out('  build floor: booting %d instances...' % instances)
            result, = cluster.run_children(
                build._boot, [(bench.conf_file, instances, timeout, trace_dir)],
                timeout=timeout + 300,
                on_ready=(lambda: snapshots.update(before=build.trace_snapshot(trace_dir)))
                if trace_dir else None)
            if trace_dir:
                snapshots['after'] = build.trace_snapshot(trace_dir)
        except BaseException:
            out('  build floor failed; logs under %s' % bench.workdir)
            bench.stop_all()
            raise
        bench.cleanup()
    figures = build.figures_for(result, instances, computes, processes, backend)
    for figure in figures:
        figure.figure = 'floor: ' + figure.figure
    if trace_dir:
        booted = sum(row[0] == 'active' for row in result['rows'].values())
        text, totals = build.trace_report(snapshots['before'], snapshots['after'], booted)
        text = 'The message floor (benchmarks.build_floor). ' + text
        (out if reports is None else reports.append)(text)
        for figure in totals:  # the goals are the real build's
            figure.figure, figure.target, figure.met = 'floor: ' + figure.figure, '', None
        figures += totals
    return figures


def share_figure(real, floor):
    """The real build throughput's share of the floor's (goal: 70%)."""
    return common.at_least('build throughput, share of the message floor',
                           100.0 * real / floor if floor else 0.0, SHARE_GOAL, '%',
                           'real %.1f instances/s, floor %.1f' % (real, floor))


#: The share of the floor's throughput the build bench aims at (issue 40).
SHARE_GOAL = 70.0
