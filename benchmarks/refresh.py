"""Refresh bench: host states from a real database (SQLite, then PostgreSQL and MySQL/MariaDB
when reachable).

Synthetic hosts are bulk-inserted (services, compute nodes, a cell mapping and a host mapping
each, all older than the incremental refresh's look-back), then a HostManager is timed: a cold
build (``ensure_initialized``: cells, aggregates, instances, every host state), a full re-read
(``refresh(full=True)``) and the incremental ``refresh()`` of the unchanged cluster. Then one
compute node row is updated and the next ``refresh()`` must show its new free RAM, and the
periodic check of every row (due every ``FULL_RESYNC_SECONDS``) is timed.

Then the cluster comes alive (information, no target): another process writes what its
computes would (``REPORT_SECONDS``: a service heartbeat per host every ``report_interval`` of
10 s, a compute node update every 60 s, in transactions of ``ROWS_PER_COMMIT`` rows), and
``refresh()`` is timed at ``REQUEST_INTERVAL`` as requests would call it. Every refresh then
finds rows changed, and its look-back windows hold a few seconds of reports.
"""
import gc
import multiprocessing
import time
import uuid

from benchmarks import common
from benchmarks import databases
from benchmarks import synthetic

COLD_TARGET_S = 1.0
UNCHANGED_TARGET_MS = 20.0
TARGET_HOSTS = 10000
#: Seconds between a live host's writes: (service heartbeat, compute node update).
REPORT_SECONDS = (10, 60)
ROWS_PER_COMMIT = 10
#: Seconds between timed refreshes of the live cluster, and before the first one (the look-
#: back windows fill up).
REQUEST_INTERVAL = 0.02
LIVE_WARMUP = 3.0


def _host_manager(conf):
    from minisched.scheduler import host_manager
    return host_manager.HostManager(conf)


def _update_one_node(url, host, free_ram_mb):
    import sqlalchemy as sa
    from oslo_utils import timeutils
    from sqlalchemy import pool

    from minisched.db.main import models
    nodes = models.compute_nodes
    engine = sa.create_engine(url, poolclass=pool.NullPool)
    try:
        with engine.begin() as conn:
            conn.execute(nodes.update().where(nodes.c.host == host).values(
                free_ram_mb=free_ram_mb, updated_at=timeutils.utcnow()))
    finally:
        engine.dispose()


def _report_like_computes(url, hosts, stop, written):
    """Until ``stop`` is set: update each host's service and compute node rows every
    ``REPORT_SECONDS`` (``updated_at`` now, ``report_count`` + 1 for services), round robin;
    ``written`` counts the rows (a separate process)."""
    import sqlalchemy as sa
    from oslo_utils import timeutils
    from sqlalchemy import pool

    from minisched.db.main import models
    engine = sa.create_engine(url, poolclass=pool.NullPool)
    heartbeat, update = REPORT_SECONDS
    plan = ((models.services, {'report_count': models.services.c.report_count + 1},
             hosts / heartbeat),
            (models.compute_nodes, {}, hosts / update))
    start, done = time.monotonic(), [0] * len(plan)
    try:
        while not stop.is_set():
            elapsed = time.monotonic() - start
            for slot, (table, values, rate) in enumerate(plan):
                due = min(int(elapsed * rate) - done[slot], ROWS_PER_COMMIT)
                if due <= 0:
                    continue
                with engine.begin() as conn:
                    for _ in range(due):
                        row_id = done[slot] % hosts + 1
                        conn.execute(table.update().where(table.c.id == row_id).values(
                            updated_at=timeutils.utcnow(), **values))
                        done[slot] += 1
                written.value = sum(done)
            time.sleep(0.002)
    finally:
        engine.dispose()


def _live_refreshes(hm, context, url, hosts, samples):
    """``(timings, rows written per second)`` of ``samples`` refreshes of a reporting cluster."""
    spawn = multiprocessing.get_context('spawn')
    stop, written = spawn.Event(), spawn.Value('l', 0)
    writer = spawn.Process(target=_report_like_computes, args=(url, hosts, stop, written),
                           daemon=True)
    writer.start()
    try:
        time.sleep(LIVE_WARMUP)
        hm.refresh(context)  # the backlog of the warm-up: not a request's usual read
        first, started = written.value, time.monotonic()
        timings = []
        for _ in range(samples):
            timings.append(_timed(hm.refresh, context))
            time.sleep(REQUEST_INTERVAL)
        rate = (written.value - first) / (time.monotonic() - started)
    finally:
        stop.set()
        writer.join(10)
    return timings, rate


def _timed_check(hm, context, url, host, free_ram_mb):
    """``_timed`` of the periodic check, made due, after ``host``'s free RAM is updated (on
    SQLite an unchanged database is not even listed)."""
    _update_one_node(url, host, free_ram_mb)
    from minisched.scheduler import host_refresh
    for sync in hm._cell_sync.values():
        sync['full_at'] -= host_refresh.FULL_RESYNC_SECONDS + 1
    return _timed(hm.refresh, context)


def _timed(function, *args, **kwargs):
    """``(wall seconds, CPU seconds of this process)`` of one call."""
    start, cpu = time.perf_counter(), time.process_time()
    function(*args, **kwargs)
    return time.perf_counter() - start, time.process_time() - cpu


def run_backend(conf, url, hosts, repeats, live_samples=0):
    """Times on the database at ``url``; returns a dict of seconds and the freshness check."""
    from minisched import context as ms_context
    synthetic.write_db(url, synthetic.node_rows(hosts, now=synthetic.old_now(),
                                                  spread_seconds=600), api_url=url,
                       cell_uuid=str(uuid.uuid4()))
    context = ms_context.get_admin_context()
    with databases.in_use(conf, url):
        cold, full, unchanged = [], [], []
        for attempt in range(repeats + 1):  # the first build also creates the engines: untimed
            hm = _host_manager(conf)
            timing = _timed(hm.ensure_initialized, context)
            if attempt:
                cold.append(timing)
        built = len(hm.host_state_map)
        # As a scheduler worker does after its first build: the collector leaves the host
        # states alone (and no longer meets the builds before this one, now garbage).
        gc.collect()
        gc.freeze()
        try:
            full = [_timed(hm.refresh, context, full=True) for _ in range(repeats)]
            unchanged = [_timed(hm.refresh, context) for _ in range(max(10, repeats * 5))]
            host = 'host%05d' % (hosts // 2)
            before = hm.host_state_map[(host, host)].free_ram_mb
            _update_one_node(url, host, before + 12345)
            changed = _timed(hm.refresh, context)
            after = hm.host_state_map[(host, host)].free_ram_mb
            checks = [_timed_check(hm, context, url, host, after + 1 + i)
                      for i in range(repeats)]
            live = _live_refreshes(hm, context, url, hosts, live_samples) if live_samples \
                else None
        finally:
            gc.unfreeze()
    return {'built': built, 'cold': cold, 'full': full, 'unchanged': unchanged,
            'changed': changed, 'checks': checks, 'fresh': after == before + 12345,
            'freshness': '%s free_ram_mb %d -> %d' % (host, before, after), 'live': live}


def _p50(timings, index=0):
    return common.median([t[index] for t in timings])


def figures_for(result, hosts, backend):
    label = '@%d hosts [%s]' % (hosts, backend)
    unchanged = result['unchanged']
    out = [common.at_most('cold build (ensure_initialized) ' + label, _p50(result['cold']),
                          COLD_TARGET_S, 's', '%d host states; CPU %.3g s' % (
                              result['built'], _p50(result['cold'], 1))),
           common.info('full refresh (refresh(full=True)) ' + label, _p50(result['full']), 's',
                       'CPU %.3g s' % _p50(result['full'], 1)),
           common.at_most('refresh, unchanged cluster ' + label, _p50(unchanged) * 1000,
                          UNCHANGED_TARGET_MS, 'ms',
                          'p50 of %d, max %.3g ms; CPU p50 %.3g ms' % (
                              len(unchanged), max(t[0] for t in unchanged) * 1000,
                              _p50(unchanged, 1) * 1000)),
           common.info('refresh after 1 node update ' + label, result['changed'][0] * 1000,
                       'ms'),
           common.info('periodic check of every row (every 60 s) ' + label,
                       _p50(result['checks']) * 1000, 'ms',
                       'p50 of %d, each after 1 node update; CPU p50 %.3g ms' % (
                           len(result['checks']), _p50(result['checks'], 1) * 1000)),
           common.Figure('freshness: next refresh sees the update ' + label,
                         'yes' if result['fresh'] else 'no', '', 'yes', result['fresh'],
                         result['freshness'])]
    if result['live']:
        timings, rate = result['live']
        walls = [t[0] * 1000 for t in timings]
        out.append(common.info(
            'refresh, reporting cluster ' + label, common.median(walls), 'ms',
            'p50 of %d, one every %.0f ms; p99 %.3g ms; CPU p50 %.3g ms; %.0f rows written/s'
            % (len(walls), REQUEST_INTERVAL * 1000, common.percentile(walls, 99),
               _p50(timings, 1) * 1000, rate)))
    if hosts < TARGET_HOSTS:  # the targets are for 10,000 hosts: smaller runs only inform
        for figure in out[:3]:
            figure.met, figure.target = None, ''
    return out


def run(hosts=TARGET_HOSTS, repeats=3, servers=databases.SERVER_BACKENDS, live_samples=250,
        out=print):
    """The figures on SQLite, then on each of ``servers`` that is reachable."""
    conf = common.in_process_conf()
    figures = []
    with common.quiet_logs():
        with databases.sqlite_db() as url:
            figures += figures_for(run_backend(conf, url, hosts, repeats, live_samples), hosts,
                                   'sqlite')
        for backend in servers:
            reachable, why = databases.reachable(backend)
            if not reachable:
                figures.append(common.info('refresh [%s]' % backend, 'skipped', '',
                                           'not reachable: %s' % why))
                continue
            with databases.server_db(backend) as url:
                figures += figures_for(run_backend(conf, url, hosts, repeats, live_samples),
                                       hosts, backend)
    return figures
