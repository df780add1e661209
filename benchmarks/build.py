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
"""
import datetime
import subprocess
import sys
import threading
import time

from benchmarks import cluster
from benchmarks import common
from benchmarks import databases

#: (vcpus, memory_mb, local_gb) of the fake computes, cycled.
COMPUTE_SIZES = ((16, 32768, 400), (32, 65536, 800), (8, 16384, 200), (64, 131072, 1600))
#: Stop waiting when no instance finished for this long (the rest count as "not done").
STALL_SECONDS = 120
#: How often the client reads the instances' states: the resolution of the ACTIVE times.
POLL_SECONDS = 0.05
#: (name, memory_mb, vcpus, root_gb) booted in turn.
FLAVORS = (('bench.small', 2048, 1, 20), ('bench.medium', 4096, 2, 40),
           ('bench.large', 8192, 4, 80))


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
    bench.wait_ready(*['computes%d' % i for i in range(len(groups))], timeout=600)
    deadline = time.monotonic() + 300
    while _count(db_url, 'SELECT count(*) FROM compute_nodes WHERE deleted = 0') < computes:
        if time.monotonic() > deadline:
            raise RuntimeError('compute nodes did not all register')
        time.sleep(1)
    _manage(bench, 'cell', 'discover_hosts')
    return len(groups)


def _boot_work(conf_file, count, timeout, ready):
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
            uuid, = api.create(ctxt, flavors[index % len(flavors)], display_name='b%d' % index)
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
    if failed:
        raise RuntimeError('reading the instances failed: %r' % failed[0])
    return {'requested': requested, 'create_seconds': create_seconds,
            'rows': {u: (states[u].vm_state, states[u].created_at, seen_active.get(u))
                     for u in requested if u in states}}


def _boot(conf_file, count, timeout, queue, start):
    cluster.child_main(queue, start, _boot_work, conf_file, count, timeout)


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


def run(instances=1000, computes=200, per_process=25, timeout=900, out=print):
    reachable, _why = databases.reachable('postgresql')
    backend = 'postgresql' if reachable else 'sqlite'
    db_context = databases.server_db('postgresql') if reachable else databases.sqlite_db()
    with cluster.vhost(suffix='build') as url, db_context as db_url:
        # oslo.db's default overflow (50 per worker) could exhaust a shared PostgreSQL; 10
        # made a few conductor calls time out waiting for a connection at 200 computes.
        pools = {'max_pool_size': 5, 'max_overflow': 25}
        bench = cluster.Cluster(url, db_url, sections={
            'conductor': {'workers': 2}, 'DEFAULT': {'update_resources_interval': 30},
            'database': pools, 'api_database': pools})
        try:
            _manage(bench, 'cell', 'simple_cell_setup')
            bench.start('conductor', 'minisched.cmd.conductor', {'conductor': {'workers': 2}},
                        ready='minisched-conductor ready', ready_count=2)
            bench.start('scheduler', 'minisched.cmd.scheduler', {'scheduler': {'workers': 2}},
                        ready='minisched-scheduler ready', ready_count=2)
            out('  build: starting %d fake computes in %d-compute processes...'
                % (computes, per_process))
            processes = start_computes(bench, db_url, computes, per_process)
            out('  build: booting %d instances...' % instances)
            result, = cluster.run_children(_boot, [(bench.conf_file, instances, timeout)],
                                           timeout=timeout + 300)
        except BaseException:
            out('  build failed; logs under %s' % bench.workdir)
            bench.stop_all()
            raise
        bench.cleanup()
    return figures_for(result, instances, computes, processes, backend)


def _utc(value):
    return value if value.tzinfo is None else value.astimezone(datetime.timezone.utc).replace(
        tzinfo=None)
