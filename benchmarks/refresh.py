"""Refresh bench: host states from a real database (SQLite, and PostgreSQL when reachable).

Synthetic hosts are bulk-inserted (services, compute nodes, a cell mapping and a host mapping
each, all older than the incremental refresh's look-back), then a HostManager is timed: a cold
build (``ensure_initialized``: cells, aggregates, instances, every host state), a full re-read
(``refresh(full=True)``) and the incremental ``refresh()`` of the unchanged cluster. Last, one
compute node row is updated and the next ``refresh()`` must show its new free RAM.
"""
import time
import uuid

from benchmarks import common
from benchmarks import databases
from benchmarks import synthetic

COLD_TARGET_S = 1.0
UNCHANGED_TARGET_MS = 20.0
TARGET_HOSTS = 10000


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


def _timed(function, *args, **kwargs):
    """``(wall seconds, CPU seconds of this process)`` of one call."""
    start, cpu = time.perf_counter(), time.process_time()
    function(*args, **kwargs)
    return time.perf_counter() - start, time.process_time() - cpu


def run_backend(conf, url, hosts, repeats):
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
        full = [_timed(hm.refresh, context, full=True) for _ in range(repeats)]
        unchanged = [_timed(hm.refresh, context) for _ in range(max(10, repeats * 5))]
        host = 'host%05d' % (hosts // 2)
        before = hm.host_state_map[(host, host)].free_ram_mb
        _update_one_node(url, host, before + 12345)
        changed = _timed(hm.refresh, context)
        after = hm.host_state_map[(host, host)].free_ram_mb
    return {'built': built, 'cold': cold, 'full': full, 'unchanged': unchanged,
            'changed': changed, 'fresh': after == before + 12345,
            'freshness': '%s free_ram_mb %d -> %d' % (host, before, after)}


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
           common.Figure('freshness: next refresh sees the update ' + label,
                         'yes' if result['fresh'] else 'no', '', 'yes', result['fresh'],
                         result['freshness'])]
    if hosts < TARGET_HOSTS:  # the targets are for 10,000 hosts: smaller runs only inform
        for figure in out[:3]:
            figure.met, figure.target = None, ''
    return out


def run(hosts=TARGET_HOSTS, repeats=3, postgres=True, out=print):
    conf = common.in_process_conf()
    figures = []
    with common.quiet_logs():
        with databases.sqlite_db() as url:
            figures += figures_for(run_backend(conf, url, hosts, repeats), hosts, 'sqlite')
        if not postgres:
            return figures
        reachable, why = databases.pg_reachable()
        if not reachable:
            figures.append(common.info('refresh [postgresql]', 'skipped', '',
                                       'not reachable: %s' % why))
            return figures
        with databases.postgres_db() as url:
            figures += figures_for(run_backend(conf, url, hosts, repeats), hosts, 'postgresql')
    return figures
