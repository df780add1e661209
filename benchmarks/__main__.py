"""``python -m benchmarks``: every performance figure of minisched against its target.

Benches (``--skip`` any of them): ``pipeline`` (filter + weigh + pick over prebuilt host
states, checked against the per-host reference), ``refresh`` (host states from SQLite,
PostgreSQL and MySQL/MariaDB), ``e2e`` (select_destinations over RabbitMQ against the wire
floor, at 1,000 and 10,000 hosts), ``memory`` (scheduler worker RSS at 10,000 hosts),
``build`` (1,000 boots through 200 fake computes), ``build-wide`` (the same boots through
2,000 fake computes in 20 processes, on a broker of its own; not with ``--quick``) and
``replay`` (``minisched-manage scheduler replay``'s work: 10,000 requests over a 10,000-host
snapshot; ``--only replay`` runs it alone) and ``wire-profile`` (the CPU the Nova wire
profile's serializer adds per message; no broker) and ``objects`` (the CPU the objects
alone cost per select_destinations: the RequestSpec built, serialized and deserialized, the
Selections back; and their sizes; no broker) and ``placement`` (select_destinations with the
real Placement at 1,000 and 10,000 providers, split into Placement's time and the
scheduler's own, beside Nova 34's scheduler on the same Placement and data; then builds
with and without Placement; ``--quick``: 1,000 providers and a small build). Hosts are
synthetic except in the build benches. The benches that start services (``e2e``,
``memory``, ``build``, ``build-wide``) run once per concurrency backend of ``--backend``
(default: ``threading``, the services' default; ``--backend threading,eventlet`` compares
them in one run, and prints them side by side). Prints a table (figure, value, target,
met?), the build bench's trace (costs per build, service by service: ``--no-trace`` turns it
off) and a CSV; exits 1 when a bench fails or a decision differs from the reference, never
because of a timing.
"""
import argparse
import signal
import sys
import time
import traceback
import warnings

BENCHES = ('pipeline', 'refresh', 'e2e', 'memory', 'build', 'build-wide', 'replay',
           'wire-profile', 'objects', 'placement')
#: The benches that start minisched services (run once per ``--backend``).
SERVICE_BENCHES = ('e2e', 'memory', 'build', 'build-wide', 'placement')
BACKENDS = ('threading', 'eventlet')
FULL_SIZES = (1000, 10000, 50000)
QUICK_SIZES = (1000, 10000)
#: Requests timed per size: (quick, full).
REQUESTS = {1000: (15, 200), 10000: (3, 40), 50000: (2, 10)}
#: Cluster sizes of the pipeline's NUMA/PCI runs (quick, full) and their requests per size
#: (the reference pipeline, run on every request, fits each host at ~0.1 ms).
NUMA_SIZES = ((1000,), (1000, 10000, 50000))
NUMA_REQUESTS = {1000: (5, 40), 10000: (2, 10), 50000: (2, 6)}
#: (instances, computes, computes per process): quick, full.
BUILD = ((20, 4, 2), (1000, 200, 25))
#: (hosts, requests) of the replay bench: quick, full (issue 41: under a minute for 10,000
#: requests over 10,000 hosts).
REPLAY = ((10000, 1000), (10000, 10000))
#: The wide build bench (full runs only): the same instances on ten times the computes, in
#: 20 processes, with a broker of its own.
BUILD_WIDE = (1000, 2000, 100)
#: The placement bench: (provider counts, timed calls per count, the build comparison's
#: (instances, computes, computes per process)): quick, full.
PLACEMENT = (((1000,), {1000: 8}, (20, 4, 2)),
             ((1000, 10000), {1000: 30, 10000: 10}, (200, 20, 10)))


def _parser():
    parser = argparse.ArgumentParser(prog='python -m benchmarks',
                                     description=__doc__.split('\n\n')[0])
    parser.add_argument('--quick', action='store_true',
                        help='fewer sizes, requests and instances (about a minute idle)')
    parser.add_argument('--sizes', help='pipeline cluster sizes, comma-separated, for both '
                        'runs (default: %s, and %s for NUMA/PCI; quick: %s and %s)' % (
                            ','.join(map(str, FULL_SIZES)), ','.join(map(str, NUMA_SIZES[1])),
                            ','.join(map(str, QUICK_SIZES)),
                            ','.join(map(str, NUMA_SIZES[0]))))
    parser.add_argument('--requests', type=int, help='pipeline requests timed per size')
    parser.add_argument('--skip', default='', help='benches to skip, comma-separated: %s'
                        % ', '.join(BENCHES))
    parser.add_argument('--only', default='', help='run only these benches, comma-separated '
                        '(the others are skipped)')
    parser.add_argument('--csv', help='also write the figures to this CSV file')
    parser.add_argument('--no-trace', action='store_true',
                        help='run the build bench without MINISCHED_TRACE_DIR (no build trace)')
    parser.add_argument('--build-database', choices=('postgresql', 'mysql', 'sqlite'),
                        help='the database of the build bench (default: PostgreSQL when '
                             'reachable, else SQLite)')
    parser.add_argument('--no-floor', action='store_true',
                        help='run the build bench without its message floor (the same burst '
                             'through endpoints that do no work, after the real one)')
    parser.add_argument('--backend', default='threading', type=_backends,
                        help='concurrency backends of the services, comma-separated, each '
                             'bench that starts services run once per backend: %s (default: '
                             '%%(default)s)' % ', '.join(BACKENDS))
    return parser


def _backends(value):
    names = [name.strip() for name in value.split(',') if name.strip()]
    unknown = sorted(set(names) - set(BACKENDS))
    if unknown or not names:
        raise argparse.ArgumentTypeError('unknown backend(s) %s; choose among %s'
                                         % (', '.join(unknown) or "''", ', '.join(BACKENDS)))
    return list(dict.fromkeys(names))


def _requests_for(args, table=REQUESTS):
    def count(size):
        if args.requests:
            return args.requests
        quick, full = table.get(size, (3, max(5, 2000000 // size)))
        return quick if args.quick else full
    return count


def _plan(args, reports):
    """``[(bench name, callable returning figures)]`` in run order; texts to print after
    the table go to ``reports`` (a list; None: to the bench's ``out``)."""
    from benchmarks import build, databases, e2e, memory, pipeline, refresh, replay
    from benchmarks import objects
    from benchmarks import placement
    from benchmarks import wire_profile
    quick = args.quick
    sizes = ([int(s) for s in args.sizes.split(',') if s.strip()] if args.sizes else
             list(QUICK_SIZES if quick else FULL_SIZES))
    instances, computes, per_process = BUILD[0 if quick else 1]
    return [
        ('pipeline', lambda out: pipeline.run(
            sizes, _requests_for(args), out=out,
            numa_sizes=sizes if args.sizes else NUMA_SIZES[0 if quick else 1],
            numa_requests_for=_requests_for(args, NUMA_REQUESTS))),
        ('refresh', lambda out: refresh.run(repeats=1 if quick else 3,
                                            servers=() if quick else databases.SERVER_BACKENDS,
                                            live_samples=50 if quick else 250, out=out)),
        ('e2e', lambda out: e2e.run(calls=40 if quick else 300, seconds=3 if quick else 15,
                                    out=out)),
        ('memory', lambda out: memory.run(calls=10 if quick else 60, out=out)),
        ('build', lambda out: build.run(instances, computes, per_process, out=out,
                                        trace_on=not args.no_trace, reports=reports,
                                        database=args.build_database,
                                        floor=not args.no_floor)),
    ] + ([] if quick else [
        ('build-wide', lambda out: build.run(*BUILD_WIDE, out=out, trace_on=False,
                                             own_broker=True)),
    ]) + [
        ('replay', lambda out: replay.run(*REPLAY[0 if quick else 1], out=out)),
        ('wire-profile', lambda out: wire_profile.run(rounds=100 if quick else 500,
                                                      out=out)),
        ('objects', lambda out: objects.run(rounds=200 if quick else 1000, out=out)),
        ('placement', lambda out: placement.run(
            PLACEMENT[0 if quick else 1][0], PLACEMENT[0 if quick else 1][1].get, out=out,
            build=PLACEMENT[0 if quick else 1][2])),
    ]


def _say(message):
    sys.stderr.write(message + '\n')
    sys.stderr.flush()


def run(args, out=_say, reports=None):
    """Run the chosen benches; returns ``(figures, failed)``. Texts to print after the
    figures (the build trace) are appended to ``reports`` (None: given to ``out``)."""
    from benchmarks import cluster
    from benchmarks import common
    skip = {s.strip() for s in args.skip.split(',') if s.strip()}
    only = {s.strip() for s in (getattr(args, 'only', '') or '').split(',') if s.strip()}
    unknown = (skip | only) - set(BENCHES)
    if unknown:
        raise SystemExit('unknown bench(es) in --skip or --only: %s'
                         % ', '.join(sorted(unknown)))
    if only:
        skip |= set(BENCHES) - only
    figures, failed = [], False
    backends = getattr(args, 'backend', None) or ['threading']
    for name, bench in _plan(args, reports):
        if name in skip:
            continue
        for backend in (backends if name in SERVICE_BENCHES else [None]):
            label = name if backend is None or len(backends) == 1 else \
                '%s, %s' % (name, backend)
            out('== %s (%s)' % (label, common.machine_note()))
            start = time.monotonic()
            with common.services_backend(backend):
                results, bench_failed = _run_bench(name, bench, out, cluster)
            failed = failed or bench_failed
            if backend is not None and len(backends) > 1:
                for figure in results:
                    figure.figure = '%s [%s]' % (figure.figure, backend)
            figures += results
            out('   %s took %.0f s' % (label, time.monotonic() - start))
    failed = failed or any(f.figure.startswith('decisions') and not f.met for f in figures)
    return figures, failed


def _run_bench(name, bench, out, cluster):
    """``(figures, failed)`` of one bench; a failure is a FAILED figure, not an exception."""
    from benchmarks import common
    try:
        return bench(out), False
    except cluster.Unavailable as exc:
        return [common.info('%s bench' % name, 'skipped', '', str(exc))], False
    except Exception as exc:
        traceback.print_exc()
        first_line = (str(exc).strip().splitlines() or [''])[0][:200]
        return [common.Figure('%s bench' % name, 'FAILED', '', 'runs', False,
                              '%s: %s (see stderr)' % (type(exc).__name__, first_line))], True


def _exit_on_signal(signum, frame):
    raise SystemExit(128 + signum)


def _stop_on_signals():
    """Stopped from outside (SIGTERM, SIGINT): unwind, so that every bench stops its services
    on the way out (a SIGKILL leaves that to the children's parent-death signal)."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _exit_on_signal)


def main(argv=None, stdout=None):
    stdout = stdout or sys.stdout
    warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
    args = _parser().parse_args(argv)
    from minisched import monkey_patch
    monkey_patch.embed()  # this process keeps native threads; --backend is the services'
    from benchmarks import common
    started = time.monotonic()
    reports = []
    figures, failed = run(args, reports=reports)
    stdout.write('\nminisched benchmarks%s: hosts are SYNTHETIC (generated service and compute '
                 'node rows; no real computes) except in the build bench.\n'
                 'Machine: %s; took %.0f s. Targets are met on wall time; CPU time is in the '
                 'notes where the machine\'s load may distort wall time.\n\n'
                 % (' (--quick)' if args.quick else '', common.machine_note(),
                    time.monotonic() - started))
    stdout.write(common.format_table(figures) + '\n\n')
    if len(args.backend) > 1:
        stdout.write('The services on each backend, side by side:\n'
                     + common.format_side_by_side(figures, args.backend) + '\n\n')
    for report in reports:
        stdout.write(report + '\n\n')
    stdout.write('CSV:\n')
    common.write_csv(figures, stdout)
    if args.csv:
        common.write_csv(figures, args.csv)
    return 1 if failed else 0


if __name__ == '__main__':
    _stop_on_signals()
    sys.exit(main())
