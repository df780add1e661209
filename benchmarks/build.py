"""Build bench: boot instances through conductor, scheduler and fake computes; time them.

A real deployment on one machine: conductor and scheduler (2 workers each), and the fake
computes run by ``benchmarks.multi_compute`` launchers (e.g. 8 processes x 25 computes of mixed
sizes), on a vhost of their own and PostgreSQL when reachable (SQLite otherwise). A spawned
client boots the instances one ``compute.api.API.create`` call each, as fast as it can, then
polls the cell database every ``POLL_SECONDS``. Request -> ACTIVE runs from the client's clock
just before ``create`` to the poll that first sees the instance ACTIVE, on the same clock; the
instance's own ``created_at`` (written by the conductor after scheduling) -> that poll is shown
as well. Not ``launched_at``: the compute sets it through the conductor, and
oslo.versionedobjects' DateTime field carries whole seconds on the wire (as in Nova), so a build
shorter than a second could show as finished before it was asked for.

Unless ``trace`` is off, every process of the bench (services and client) runs with
``MINISCHED_TRACE_DIR`` (:mod:`minisched.messaging.trace`) and :func:`trace_report` turns what they
recorded during the boot phase (between a snapshot taken when the client is ready and one
taken when it is done) into costs per build: each ``create`` is a trace task named
:data:`BUILD_CAUSE`, the cause of everything it sets off; what other causes set off (state
reports, periodic tasks, the client's polling) is background, shown apart per minute. With the
trace, the CPU of one RPC call and of one cast is measured first (``benchmarks.wire``), and the
messages a boot sends are priced at it: what they alone cost, a floor under the build's CPU.
"""
import datetime
import os
import subprocess
import sys
import threading
import time

from benchmarks import cluster
from benchmarks import common
from benchmarks import databases
from benchmarks import placement_load
from benchmarks import wire
from minisched.messaging import trace
from minisched.messaging import trace_files

#: (vcpus, memory_mb, local_gb) of the fake computes, cycled.
COMPUTE_SIZES = ((16, 32768, 400), (32, 65536, 800), (8, 16384, 200), (64, 131072, 1600))
#: How long the computes may take to register, per compute (at least 10 minutes in all).
START_SECONDS_PER_COMPUTE = 0.9
#: How long the deployment's idle CPU is measured, once the computes are up.
IDLE_SECONDS = 20.0
#: Scheduler workers: each receives the computes' instance-info fanouts.
SCHEDULER_WORKERS = 2
#: Stop waiting when no instance finished for this long (the rest count as "not done").
STALL_SECONDS = 120
#: How often the client reads the instances' states: the resolution of the ACTIVE times.
POLL_SECONDS = 0.05
#: (name, memory_mb, vcpus, root_gb) booted in turn.
FLAVORS = (('bench.small', 2048, 1, 20), ('bench.medium', 4096, 2, 40),
           ('bench.large', 8192, 4, 80))
#: CPU per build the build flow aims at (issue 40), ms: all minisched processes, and by kind.
CPU_GOAL_MS = {'all': 35.0, 'conductor': 12.0}
#: The client's trace task around each boot: the cause of all the work a boot sets off.
BUILD_CAUSE = 'client.create'
#: Process kinds of the report, in its order: kind -> services (trace file names) of it.
SERVICE_KINDS = (('conductor', ('minisched-conductor',)),
                 ('scheduler', ('minisched-scheduler',)),
                 ('computes', ('minisched-compute', 'multi_compute')),
                 ('client', ('bench-client',)))


def _manage(bench, *args):
    result = subprocess.run([sys.executable, '-m', 'minisched.cmd.manage', '--config-file',
                             bench.conf_file] + list(args), capture_output=True, text=True,
                            cwd=cluster.REPO, timeout=300)
    if result.returncode:
        raise RuntimeError('minisched-manage %s: %s' % (' '.join(args), result.stderr[-2000:]))
    return result.stdout


def _count(db_url, sql):
    import sqlalchemy as sa
    from sqlalchemy import pool
    engine = sa.create_engine(db_url, poolclass=pool.NullPool)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text(sql)).scalar()
    finally:
        engine.dispose()


def start_computes(bench, db_url, computes, per_process):
    names = ['bench-c%03d' % i for i in range(computes)]
    groups = [names[i:i + per_process] for i in range(0, computes, per_process)]
    for index, hosts in enumerate(groups):
        sizes = ','.join('%s:%d/%d/%d' % (host, *COMPUTE_SIZES[names.index(host) %
                                                               len(COMPUTE_SIZES)])
                         for host in hosts)
        bench.start('computes%d' % index, 'benchmarks.multi_compute',
                    {'fake_driver': {'host_sizes': sizes}}, ready='minisched-compute ready',
                    ready_count=len(hosts), wait=False)
    # Registering is the conductor's work, and it serves the state reports of the computes
    # already up meanwhile: 2,000 of them took 10 to 15 minutes here.
    bench.wait_ready(*['computes%d' % i for i in range(len(groups))],
                     timeout=max(600, computes * START_SECONDS_PER_COMPUTE))
    deadline = time.monotonic() + 300
    while _count(db_url, 'SELECT count(*) FROM compute_nodes WHERE deleted = 0') < computes:
        if time.monotonic() > deadline:
            raise RuntimeError('compute nodes did not all register')
        time.sleep(1)
    _manage(bench, 'cell', 'discover_hosts')
    return len(groups)


def idle_cost(bench, seconds=None):
    """``{'minisched': cores, <server>: cores...}`` the deployment uses doing nothing (state
    reports, periodic tasks, the message bus's polling and heartbeats) over ``seconds``
    (:data:`IDLE_SECONDS`), from /proc."""
    seconds = IDLE_SECONDS if seconds is None else seconds
    before = dict(cluster.server_cpu_seconds(), minisched=bench.cpu_seconds())
    time.sleep(seconds)
    after = dict(cluster.server_cpu_seconds(), minisched=bench.cpu_seconds())
    return {name: (after[name] - before[name]) / seconds for name in after}


def idle_figure(idle, computes, throughput):
    total = sum(idle.values())
    return common.info(
        'deployment CPU idle, %d computes registered and nothing to build' % computes, total,
        'cores', 'minisched %s; %.0f ms per instance at the throughput above' % (
            ', '.join(['%.2f' % idle['minisched']] + ['%s %.2f' % (name, cores) for name, cores
                                                     in idle.items() if name != 'minisched']),
            total / throughput * 1000 if throughput else float('nan')))


def _boot_work(conf_file, count, timeout, trace_dir, ready):
    if trace_dir:
        trace.enable(trace_dir, 'bench-client')
    from oslo_utils import timeutils
    import sqlalchemy as sa

    from minisched.compute import api as compute_api
    from minisched import context as ms_context
    from minisched.db import engines
    from minisched.objects import flavor as flavor_obj
    conf = cluster.client_setup(conf_file)
    ctxt = ms_context.RequestContext(user_id='bench', project_id='bench', is_admin=True)
    flavors = []
    for index, (name, memory_mb, vcpus, root_gb) in enumerate(FLAVORS):
        flavor = flavor_obj.Flavor(ctxt, name=name, flavorid='b%d' % index,
                                   memory_mb=memory_mb, vcpus=vcpus, root_gb=root_gb,
                                   ephemeral_gb=0, swap=0, extra_specs={})
        flavor.create()
        flavors.append(flavor)
    api = compute_api.API(conf)
    engine = engines.engine_for_url(engines.configured_url(engines.MAIN), engines.MAIN)
    query = sa.text('SELECT uuid, vm_state, created_at FROM instances WHERE deleted = 0')
    states, seen_active, failed, stop = {}, {}, [], threading.Event()

    def read_states():
        """Every POLL_SECONDS, from before the first create: a build that ends while the
        client is still creating others is seen when it ends, not after the last create."""
        try:
            while True:
                with engine.connect() as conn:
                    rows = conn.execute(query).all()
                seen = timeutils.utcnow()
                for row in rows:
                    states[row.uuid] = row
                    if row.vm_state == 'active':
                        seen_active.setdefault(row.uuid, seen)
                if stop.wait(POLL_SECONDS):
                    return
        except Exception as exc:  # raised again by the waiting loop below
            failed.append(exc)
    ready()
    reader = threading.Thread(target=read_states, name='bench-states', daemon=True)
    reader.start()
    requested = {}
    start = time.monotonic()
    try:
        for index in range(count):
            at = timeutils.utcnow()
            with trace.task(BUILD_CAUSE):
                uuid, = api.create(ctxt, flavors[index % len(flavors)],
                                   display_name='b%d' % index)
            requested[uuid] = at
        create_seconds = time.monotonic() - start
        deadline = time.monotonic() + timeout
        progress, last_done = time.monotonic(), -1
        while not failed:
            done = sum(states[u].vm_state in ('active', 'error') for u in requested
                       if u in states)
            now = time.monotonic()
            if done != last_done:
                progress, last_done = now, done
            # Lost builds (e.g. a conductor error) must not hold the bench for the whole
            # timeout.
            if done == count or now > deadline or now - progress > STALL_SECONDS:
                break
            time.sleep(0.5)
    finally:
        stop.set()
        reader.join()
        trace.flush()
    if failed:
        raise RuntimeError('reading the instances failed: %r' % failed[0])
    return {'requested': requested, 'create_seconds': create_seconds,
            'rows': {u: (states[u].vm_state, states[u].created_at, seen_active.get(u))
                     for u in requested if u in states}}


def _boot(conf_file, count, timeout, trace_dir, queue, start):
    cluster.child_main(queue, start, _boot_work, conf_file, count, timeout, trace_dir)


def figures_for(result, count, computes, processes, backend):
    """The figures of one boot: ``result['rows']`` maps each instance to ``(vm_state,
    created_at, when the client first saw it ACTIVE or None)``, naive UTC or aware."""
    requested = {u: _utc(t) for u, t in result['requested'].items()}
    rows = {u: (state, created and _utc(created), active_at and _utc(active_at))
            for u, (state, created, active_at) in result['rows'].items()}
    active = {u: r for u, r in rows.items() if r[0] == 'active' and r[2] is not None}
    to_active = [(r[2] - requested[u]).total_seconds() for u, r in active.items()]
    built = [(r[2] - r[1]).total_seconds() for r in active.values()]
    span = (max(r[2] for r in active.values()) - min(requested.values())).total_seconds() \
        if active else float('nan')
    label = '%d instances on %d fake computes (%d processes) [%s]' % (
        count, computes, processes, backend)
    return [
        common.info('build throughput, ' + label, len(active) / span if active else 0.0,
                    'instances/s', '%d ACTIVE, %d ERROR, %d not done; create() calls took '
                    '%.1f s' % (len(active), sum(r[0] == 'error' for r in rows.values()),
                                count - len(active) - sum(r[0] == 'error'
                                                          for r in rows.values()),
                                result['create_seconds'])),
        common.info('request -> ACTIVE p50', common.median(to_active) * 1000, 'ms',
                    "the client's clock; its reads of the states %.0f ms apart" %
                    (POLL_SECONDS * 1000)),
        common.info('request -> ACTIVE p99', common.percentile(to_active, 99) * 1000, 'ms'),
        common.info('instance created_at -> ACTIVE p50', common.median(built) * 1000, 'ms',
                    'conductor-side: after scheduling'),
    ]


def run(instances=1000, computes=200, per_process=25, timeout=900, out=print, trace_on=True,
        reports=None, own_broker=False, database=None, floor=False, placement=None):
    """Boot ``instances``; returns the figures. With ``trace_on``, the build trace's text
    goes to ``reports`` (a list; else to ``out``) and its totals join the figures. With
    ``own_broker``, the deployment gets a RabbitMQ node of its own
    (:func:`benchmarks.cluster.private_broker`: 2,000 computes hold more connections than
    the machine's broker takes), else a vhost of the machine's. ``database``: ``postgresql``,
    ``mysql`` or ``sqlite`` (default: PostgreSQL when reachable, else SQLite). With
    ``floor``, the same burst then goes through the message floor
    (:mod:`benchmarks.build_floor`) and its figures and the real one's share of it follow.
    ``placement``: None leaves ``[placement] enabled`` to its default; True starts a real
    Placement (SQLite, its own state directory) for the deployment and enables it (the
    computes report their providers, the scheduler claims; its CPU is in the trace as the
    ``placement`` server); False disables it."""
    backend = database or ('postgresql' if databases.reachable('postgresql')[0] else 'sqlite')
    if backend != 'sqlite' and not databases.reachable(backend)[0]:
        raise cluster.Unavailable('%s is not reachable: %s' % (
            backend, databases.reachable(backend)[1]))
    db_context = databases.sqlite_db() if backend == 'sqlite' else databases.server_db(backend)
    broker = cluster.private_broker() if own_broker else cluster.vhost(suffix='build')
    snapshots, wire_costs, idle = {}, None, None
    with broker as url, db_context as db_url, \
            placement_load.deployment(placement) as placement_server:
        # oslo.db's default overflow (50 per worker) could exhaust a shared PostgreSQL; 10
        # made a few conductor calls time out waiting for a connection at 200 computes.
        pools = {'max_pool_size': 5, 'max_overflow': 25}
        bench = cluster.Cluster(url, db_url, sections=dict({
            'conductor': {'workers': 2}, 'DEFAULT': {'update_resources_interval': 30},
            'database': pools, 'api_database': pools}, **placement_load.sections(
                placement, placement_server)))
        servers = placement_load.cpu(placement_server)
        trace_dir = os.path.join(bench.workdir, 'trace') if trace_on else None
        if trace_dir:
            bench.env[trace.ENV_VAR] = trace_dir
        try:
            _manage(bench, 'cell', 'simple_cell_setup')
            # The conductor's pool holds as many connections as its workers keep busy:
            # with 5, a burst made and closed overflow connections all along (a PostgreSQL
            # backend started per connection: 2% of the conductor's CPU, more of the server's).
            conductor_pool = {'max_pool_size': 15, 'max_overflow': 10}
            bench.start('conductor', 'minisched.cmd.conductor', {
                'conductor': {'workers': 2}, 'database': conductor_pool,
                'api_database': conductor_pool},
                ready='minisched-conductor ready', ready_count=2)
            bench.start('scheduler', 'minisched.cmd.scheduler',
                        {'scheduler': {'workers': SCHEDULER_WORKERS}},
                        ready='minisched-scheduler ready', ready_count=SCHEDULER_WORKERS)
            if trace_dir:  # before the computes: nothing else talks on the bus yet
                out('  build: the CPU of an RPC call and of a cast...')
                wire_costs = wire.measure(bench)
            out('  build: starting %d fake computes in %d-compute processes...'
                % (computes, per_process))
            processes = start_computes(bench, db_url, computes, per_process)
            if placement_server is not None:
                placement_load.wait_providers(placement_server.url, computes)
            out('  build: the deployment idle for %.0f s...' % IDLE_SECONDS)
            idle = idle_cost(bench)
            out('  build: booting %d instances...' % instances)
            result, = cluster.run_children(
                _boot, [(bench.conf_file, instances, timeout, trace_dir)],
                timeout=timeout + 300,
                on_ready=(lambda: snapshots.update(before=trace_snapshot(trace_dir,
                                                                         servers=servers)))
                if trace_dir else None)
            if trace_dir:
                snapshots['after'] = trace_snapshot(trace_dir, servers=servers)
        except BaseException:
            out('  build failed; logs under %s' % bench.workdir)
            bench.stop_all()
            raise
        bench.cleanup()
    figures = figures_for(result, instances, computes, processes, backend)
    if idle:
        figures.append(idle_figure(idle, computes, figures[0].value))
    if trace_dir:
        booted = sum(row[0] == 'active' for row in result['rows'].values())
        text, totals = trace_report(snapshots['before'], snapshots['after'], booted,
                                    wire_costs=wire_costs)
        figures += totals
        if reports is None:
            out(text)
        else:
            reports.append(text)
    if floor:
        from benchmarks import build_floor
        floor_figures = build_floor.run(instances, computes, per_process, backend, timeout,
                                        trace_on=trace_on, out=out, reports=reports)
        figures += [build_floor.share_figure(figures[0].value, floor_figures[0].value)]
        figures += floor_figures
    return figures


# -- the build trace -------------------------------------------------------------------------

def trace_snapshot(directory, timeout=None, servers=None):
    """What every traced process wrote into ``directory`` once each live one has written
    since this call (at most ``timeout`` seconds: two of its writes), with the CPU of the
    servers (:func:`benchmarks.cluster.server_cpu_seconds`, and ``servers``: ``{name:
    callable returning CPU seconds}``) and the time."""
    since = time.time()
    deadline = time.monotonic() + (timeout or 2 * trace.WRITE_SECONDS + 1)
    while True:
        processes = trace_files.read_dir(directory)
        if time.monotonic() > deadline or all(
                p['written'] >= since or not _alive(p['pid']) for p in processes):
            break
        time.sleep(0.1)
    found = cluster.server_cpu_seconds()
    found.update({name: cpu() for name, cpu in (servers or {}).items()})
    return {'processes': processes, 'servers': found, 'at': time.time()}


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _kind(service):
    return next((kind for kind, services in SERVICE_KINDS if service in services), service)


def _ms(seconds):
    return '%.2f' % (seconds * 1000) if seconds == seconds else '-'


def _rate(value):
    return '%.2f' % value if value < 100 else '%.0f' % value


def _table(title, header, rows, left=1):
    """``title`` then ``rows`` under ``header`` in aligned columns (the first ``left``
    columns left-aligned, the rest right-aligned)."""
    rows = [tuple(header)] + [tuple(str(c) for c in row) for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]

    def line(row):
        return '  '.join(cell.ljust(w) if i < left else cell.rjust(w)
                         for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
    lines = [title, '  ' + line(rows[0]), '  ' + '  '.join('-' * w for w in widths)]
    lines += ['  ' + line(row) for row in rows[1:]]
    if len(rows) == 1:
        lines.append('  (none)')
    return '\n'.join(lines)


def trace_report(before, after, booted, build_cause=BUILD_CAUSE, wire_costs=None):
    """``(text, figures)`` of the build trace between two :func:`trace_snapshot` results:
    costs per build (totals divided by ``booted``) of the work ``build_cause`` set off,
    service kind by service kind, and the background (every other cause) per minute."""
    per = float(max(booted, 1))
    kinds = {}
    for process in trace_files.delta(after['processes'], before['processes']):
        kinds.setdefault(_kind(process['service']), []).append(process)
    order = [k for k, _ in SERVICE_KINDS] + sorted(set(kinds) - {k for k, _ in SERVICE_KINDS})
    merged = {kind: trace_files.merge(kinds[kind]) for kind in order if kind in kinds}
    window = max([m['window_s'] for m in merged.values()] + [after['at'] - before['at']])
    minutes = max(window, 1e-9) / 60.0
    servers = {name: after['servers'].get(name, 0.0) - before['servers'].get(name, 0.0)
               for name in after['servers']}
    parts = ['Build trace: %d instances booted; trace window %.1f s. "/build" is a total over '
             'the window divided by %d; work caused by other things than a boot (background) '
             'is per minute. queued = sender\'s send to dispatch; worked = dispatch (decode, '
             'method, encode); CPU = the handling green thread\'s own (and its threads\').'
             % (booted, window, booted)]
    parts.append(_cpu_table(merged, servers, per, build_cause))
    parts.append(_handled_table(merged, per, build_cause, build=True))
    parts.append(_sent_table(merged, per, build_cause))
    parts.append(_db_tables(merged, per, build_cause))
    parts.append(_background_table(merged, minutes, build_cause))
    parts.append(_handled_table(merged, minutes, build_cause, build=False))
    return '\n\n'.join(parts), _trace_figures(merged, servers, per, build_cause, wire_costs)


def _cpu(process):
    return process['cpu_user_s'] + process['cpu_sys_s']


def _handler_cpu(merged, build_cause):
    build = sum(r.get('cpu_s', 0.0) for r in merged['handled'] if r['cause'] == build_cause)
    other = sum(r.get('cpu_s', 0.0) for r in merged['handled'] if r['cause'] != build_cause)
    return build, other


def _cpu_table(merged, servers, per, build_cause):
    rows, total = [], 0.0
    for kind, figures in merged.items():
        cpu = _cpu(figures)
        total += cpu
        build, other = _handler_cpu(figures, build_cause)
        rows.append((kind, figures['processes'], '%.1f' % cpu, _ms(cpu / per), _ms(build / per),
                     _ms(other / per), _ms((cpu - build - other) / per)))
    for name, cpu in servers.items():
        total += cpu
        rows.append((name + ' (/proc)', '-', '%.1f' % cpu, _ms(cpu / per), '-', '-', '-'))
    rows.append(('all', '', '%.1f' % total, _ms(total / per), '', '', ''))
    return _table('CPU by process kind (ms/build = CPU s over the window / instances; split '
                  'into handling boots, handling background, outside any handling: hub, '
                  'AMQP I/O, heartbeats, timers)',
                  ('kind', 'procs', 'CPU s', 'ms/build', 'boot handlers', 'background',
                   'outside'), rows)


def _sorted(rows, kind_order):
    return sorted(rows, key=lambda r: (kind_order.index(r[0]), -r[1]))


def _handled_table(merged, per, build_cause, build):
    rows = []
    for kind, figures in merged.items():
        for r in figures['handled']:
            if (r['cause'] == build_cause) != build or not r.get('count'):
                continue
            queued = r.get('queued_hist', {})
            rows.append((kind, r['count'] / per, r['method'], r['kind'],
                         _ms(trace_files.percentile(queued, 50)),
                         _ms(trace_files.percentile(queued, 99)),
                         _ms(trace_files.percentile(r.get('hist', {}), 50)),
                         _ms(trace_files.percentile(r.get('hist', {}), 99)),
                         _ms(r['total_s'] / per), _ms(r.get('cpu_s', 0.0) / per),
                         r.get('errors', 0)))
    rows = _sorted(rows, list(merged))
    unit = 'build' if build else 'min'
    return _table(
        ('Handled per build (messages, periodic tasks, threads a boot set off), by process '
         'kind' if build else 'Handled in the background, per minute'),
        ('kind', 'handled (cause: %s)' % build_cause if build else 'handled (other causes)',
         'how', '/%s' % unit, 'queued p50 ms', 'p99', 'worked p50 ms', 'p99',
         'worked ms/%s' % unit, 'CPU ms/%s' % unit, 'errors'),
        [(k, m, how, _rate(n), *rest) for k, n, m, how, *rest in rows], left=3)


def _sent_table(merged, per, build_cause):
    rows = []
    for kind, figures in merged.items():
        for r in figures['outgoing']:
            if r['cause'] != build_cause or not r.get('count'):
                continue
            rows.append((kind, r['count'] / per, r['handler'], r['target'], r['kind'],
                         _ms(trace_files.percentile(r.get('hist', {}), 50)),
                         _ms(trace_files.percentile(r.get('hist', {}), 99)), r.get('errors', 0)))
    rows = _sorted(rows, list(merged))
    return _table('RPC sent per build, by sender (call: latency to the answer; cast: to the '
                  'broker)',
                  ('kind', 'while handling', 'sent', 'how', '/build', 'latency p50 ms', 'p99',
                   'errors'),
                  [(k, h, t, how, _rate(n), *rest) for k, n, h, t, how, *rest in rows], left=4)


def _db_tables(merged, per, build_cause):
    handlers, statements = [], []
    for kind, figures in merged.items():
        totals = {}
        for r in figures['db']:
            if r['cause'] != build_cause:
                continue
            count, seconds = totals.get(r['handler'], (0, 0.0))
            totals[r['handler']] = (count + r['count'], seconds + r['total_s'])
            statements.append((kind, r['count'] / per, r['handler'], r['statement'],
                               _ms(r['total_s'] / per)))
        transactions = {r['handler']: r for r in figures['transactions']
                        if r['cause'] == build_cause}
        for handler in sorted(set(totals) | set(transactions)):
            count, seconds = totals.get(handler, (0, 0.0))
            tx = transactions.get(handler, {})
            handlers.append((kind, count / per, handler, _ms(seconds / per),
                             _rate(tx.get('begins', 0) / per),
                             _rate(tx.get('commits', 0) / per),
                             _rate(tx.get('rollbacks', 0) / per),
                             _ms(tx.get('total_s', 0.0) / per),
                             _rate(tx.get('checkouts', 0) / per),
                             _rate(tx.get('connects', 0) / per)))
    kind_order = list(merged)
    first = _table('Database per build, by handler (tx: begin to commit/rollback)',
                   ('kind', 'handler', 'statements/build', 'DB ms/build', 'tx/build',
                    'commits', 'rollbacks', 'tx ms/build', 'checkouts', 'new conns'),
                   [(k, h, _rate(n), *rest) for k, n, h, *rest in
                    _sorted(handlers, kind_order)], left=2)
    second = _table('Statements per build, by handler and kind',
                    ('kind', 'handler', 'statement', '/build', 'ms/build'),
                    [(k, h, st, _rate(n), ms) for k, n, h, st, ms in
                     _sorted(statements, kind_order)], left=3)
    return first + '\n\n' + second


def _background_table(merged, minutes, build_cause):
    causes = {}
    for kind, figures in merged.items():
        for section, field in (('handled', 'count'), ('outgoing', 'count'), ('db', 'count'),
                               ('transactions', 'begins')):
            for r in figures[section]:
                if r['cause'] == build_cause:
                    continue
                totals = causes.setdefault((r['cause'], kind), dict.fromkeys(
                    ('handled', 'outgoing', 'db', 'transactions', 'cpu'), 0.0))
                totals[section] += r.get(field, 0)
                totals['cpu'] += r.get('cpu_s', 0.0) if section == 'handled' else 0.0
    kind_order = list(merged)
    rows = sorted(causes.items(), key=lambda item: (item[0][0], kind_order.index(item[0][1])))
    return _table('Background: work not set off by a boot, per minute, by cause ("-": '
                  'outside any handling: timers such as state reports of services with '
                  'database access, the client\'s polling)',
                  ('cause', 'kind', 'handled/min', 'sent/min', 'statements/min', 'tx/min',
                   'handler CPU ms/min'),
                  [(cause, kind, _rate(t['handled'] / minutes), _rate(t['outgoing'] / minutes),
                    _rate(t['db'] / minutes), _rate(t['transactions'] / minutes),
                    _ms(t['cpu'] / minutes)) for (cause, kind), t in rows], left=2)


def _wire_figures(merged, per, build_cause, costs):
    """What the messages of a boot cost at the measured CPU of a call and of a cast
    (``benchmarks.wire``): a floor under the build's CPU with this message flow."""
    sent = {'call': 0, 'cast': 0}
    for figures in merged.values():
        for r in figures['outgoing']:
            if r['cause'] == build_cause:
                # A fanout is delivered to each scheduler worker: counted as a cast each.
                how = 'call' if r['kind'] == 'call' else 'cast'
                sent[how] += r['count'] * (SCHEDULER_WORKERS if r['kind'] == 'fanout' else 1)
    calls, casts = sent['call'] / per, sent['cast'] / per
    floor = calls * costs['call']['total'] + casts * costs['cast']['total']
    return [
        common.info('RPC call CPU (caller + server + broker)', costs['call']['total'] * 1000,
                    'ms', '%s; an Instance each way' % _parts(costs['call'])),
        common.info('RPC cast CPU (sender + server + broker)', costs['cast']['total'] * 1000,
                    'ms', _parts(costs['cast'])),
        common.info('build CPU per instance, its messages alone', floor * 1000, 'ms',
                    '%.1f calls and %.1f casts per boot at the costs above: %.0f instances/s '
                    'at most on %d CPU(s), before any work and the background' % (
                        calls, casts, os.cpu_count() / floor, os.cpu_count())),
    ]


def _parts(cost):
    return ', '.join('%s %.2f ms' % (name, cost[name] * 1000)
                     for name in ('client', 'server', 'broker'))


def _trace_figures(merged, servers, per, build_cause, wire_costs=None):
    service_cpu = sum(_cpu(m) for m in merged.values())
    sent = sum(r['count'] for m in merged.values() for r in m['outgoing']
               if r['cause'] == build_cause)
    statements = sum(r['count'] for m in merged.values() for r in m['db']
                     if r['cause'] == build_cause)
    transactions = sum(r.get('begins', 0) for m in merged.values()
                       for r in m['transactions'] if r['cause'] == build_cause)
    figures = [common.at_most('build CPU per instance, minisched processes',
                              service_cpu / per * 1000, CPU_GOAL_MS['all'], 'ms',
                              'all CPU of the window / instances (background included; see '
                              'the build trace)')]
    figures += [common.at_most('build CPU per instance, %s' % name, _cpu(m) / per * 1000,
                               CPU_GOAL_MS[name], 'ms') if name in CPU_GOAL_MS else
                common.info('build CPU per instance, %s' % name, _cpu(m) / per * 1000, 'ms')
                for name, m in merged.items()]
    figures += [common.info('build CPU per instance, %s' % name, cpu / per * 1000, 'ms',
                            'from /proc; a shared server counts its other users too')
                for name, cpu in servers.items()]
    figures += [common.info('RPC messages sent per build', sent / per, '',
                            'set off by a boot (casts, calls, fanouts)'),
                common.info('DB statements per build', statements / per, ''),
                common.info('DB transactions per build', transactions / per, '')]
    if wire_costs:
        figures += _wire_figures(merged, per, build_cause, wire_costs)
    return figures


def _utc(value):
    if isinstance(value, str):  # SQLite's text: the client's raw query has no column types
        value = datetime.datetime.fromisoformat(value)
    return value if value.tzinfo is None else value.astimezone(datetime.timezone.utc).replace(
        tzinfo=None)
