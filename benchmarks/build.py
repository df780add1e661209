"""Build bench: boot instances through conductor, scheduler and fake computes; time them.

A real deployment on one machine: conductor and scheduler (2 workers each), and the fake
computes run by ``benchmarks.multi_compute`` launchers (e.g. 8 processes x 25 computes of mixed
sizes), on a vhost of their own and PostgreSQL when reachable (SQLite otherwise). A spawned
client boots the instances one ``compute.api.API.create`` call each, as fast as it can, then
polls the cell database. Request -> ACTIVE runs from the client's clock just before ``create``
to the instance's ``launched_at``; the instance's own ``created_at`` (written by the conductor
after scheduling) -> ``launched_at`` is shown as well.
"""
import datetime
import subprocess
import sys
import time

from benchmarks import cluster
from benchmarks import common
from benchmarks import databases

#: (vcpus, memory_mb, local_gb) of the fake computes, cycled.
COMPUTE_SIZES = ((16, 32768, 400), (32, 65536, 800), (8, 16384, 200), (64, 131072, 1600))
#: Stop waiting when no instance finished for this long (the rest count as "not done").
STALL_SECONDS = 120
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
    ready()
    requested = {}
    start = time.monotonic()
    for index in range(count):
        at = timeutils.utcnow()
        uuid, = api.create(ctxt, flavors[index % len(flavors)], display_name='b%d' % index)
        requested[uuid] = at
    create_seconds = time.monotonic() - start
    engine = engines.engine_for_url(engines.configured_url(engines.MAIN), engines.MAIN)
    query = sa.text('SELECT uuid, vm_state, created_at, launched_at FROM instances '
                    'WHERE deleted = 0')
    deadline = time.monotonic() + timeout
    progress, last_done = time.monotonic(), -1
    while True:
        with engine.connect() as conn:
            rows = {r.uuid: r for r in conn.execute(query) if r.uuid in requested}
        done = sum(r.vm_state in ('active', 'error') for r in rows.values())
        now = time.monotonic()
        if done != last_done:
            progress, last_done = now, done
        # Lost builds (e.g. a conductor error) must not hold the bench for the whole timeout.
        if done == count or now > deadline or now - progress > STALL_SECONDS:
            break
        time.sleep(0.5)
    return {'requested': requested, 'create_seconds': create_seconds,
            'rows': {u: (r.vm_state, r.created_at, r.launched_at) for u, r in rows.items()}}


def _boot(conf_file, count, timeout, queue, start):
    cluster.child_main(queue, start, _boot_work, conf_file, count, timeout)


def figures_for(result, count, computes, processes, backend):
    requested = {u: _utc(t) for u, t in result['requested'].items()}
    rows = {u: (state, created and _utc(created), launched and _utc(launched))
            for u, (state, created, launched) in result['rows'].items()}
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
        common.info('request -> ACTIVE p50', common.median(to_active) * 1000, 'ms'),
        common.info('request -> ACTIVE p99', common.percentile(to_active, 99) * 1000, 'ms'),
        common.info('instance created_at -> launched_at p50', common.median(built) * 1000, 'ms',
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
