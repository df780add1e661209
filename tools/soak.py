"""Soak: a local cluster of 200 fake computes under continuous builds and deletes.

Runs the conductor, a scheduler with two workers and ``--computes`` fake computes (25 per
process, ``benchmarks/multi_compute.py``) on a vhost of their own and on PostgreSQL (SQLite
with ``--db sqlite``), then several client processes create and delete servers through the
compute API for ``--minutes``. Every 10 s it prints progress and the schedulers' RSS; at the
end: throughput, p50/p99 build and delete latencies, errors, RSS over time, and a consistency
check:

* every live instance's host in the database is where the schedulers track it: asked with
  the ``same_host`` hint (SameHostFilter reads the scheduler's own instance info), each
  scheduler worker must answer exactly that host (each instance is asked twice, so both
  workers are very likely asked; a worker's tracking is not otherwise visible over RPC);
* deleted instances are forgotten by the schedulers (``same_host`` of a deleted instance
  finds no host);
* no compute node holds more than its capacity times its allocation ratios, counted from
  the node record and from the instances on it.

Cells: ``--cells 2`` adds cell2 with a database and a message queue (vhost) of its own, as
a Nova cell has (one ``conductor`` topic per vhost: in a shared vhost cell2's computes would
be served by cell1's conductor), its own conductor and the second half of the compute
processes. The API-level conductor (cell1's, which the scheduler answers) creates each
instance in its host's cell and casts the build on that cell's bus (``target_cell`` sets the
context's transport URL, ``rpc.ClientRouter`` follows it); deletes go there the same way. The
consistency check then runs over both cells, plus:

* each instance row is in one cell only, its instance mapping names that cell, and its host
  is mapped to that cell.

cell2's computes cast their instance updates on cell2's bus; the schedulers listen there too
(Nova's do not, and document stale instance information for ``track_instance_changes`` with
a separate cell MQ), so every cell's instances must be tracked exactly: live ones on their
host, deleted ones nowhere. With ``--cells 1`` there is cell1 plus cell0 only.

Faults: ``--faults broker,database,kill`` applies one fault every ``--fault-every`` seconds,
taking the kinds in turn, while the clients run:

* ``broker``: every service reaches RabbitMQ through a ``TcpProxy`` of this process, cut for
  ``--outage`` seconds (connections dropped, new ones refused); the shared RabbitMQ keeps
  running for everyone else;
* ``database``: the same in front of PostgreSQL (the services' and the API clients' database
  URLs go through it; the soak's own checks do not);
  with ``--second-cut SECONDS``, cut again for that long inside the retry window of the
  first cut (0.7 s after a conductor starts rebuilding what an interrupted run placed, else
  5 s after the database is back, while the retries of the first cut wait out their
  backoff), a fault during the retry of another;
* ``kill``: SIGKILL of a whole service (its process group: a compute process with its
  computes, the conductor or the scheduler with their workers), started again 5 s later.

Faults change the bounds a build lives with: ``[DEFAULT] long_rpc_timeout`` (how long a
compute retries a write) and ``[conductor] stuck_build_timeout_seconds`` (when the conductor
ends a build that makes no progress) come from ``--long-rpc-timeout`` and
``--stuck-timeout``. At the end, with every fault undone and the builds settled, the build
accounting: sent, accepted (the create returned), ACTIVE (including those deleted since),
ERROR counted by fault message, lost (an accepted build that is neither ACTIVE nor ERROR, or
has no instance record) and duplicated (an instance with rows in two cells, or built twice):
both must be 0. It is printed without faults too.

Usage: ``python tools/soak.py --minutes 10`` (a few minutes of set-up come on top);
``python tools/soak.py --computes 20 --per-process 5 --minutes 3 --faults
broker,database,kill --fault-every 30``.
"""
import argparse
import collections
import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

BROKER = os.environ.get('MINISCHED_SOAK_TRANSPORT_URL', 'rabbit://guest:guest@127.0.0.1:5672/')
PG_ADMIN = os.environ.get('MINISCHED_SOAK_PG_URL',
                          'postgresql+psycopg2://postgres@127.0.0.1:5432/postgres')
#: (name, memory_mb, vcpus, root_gb) of the flavors the clients boot.
FLAVORS = (('soak.small', 512, 1, 5), ('soak.medium', 2048, 2, 20), ('soak.large', 4096, 4, 40))
#: (vcpus, memory_mb, local_gb) of the computes, cycled.
SIZES = ((8, 16384, 200), (16, 32768, 400), (32, 65536, 800))
BUILD_TIMEOUT = 180
SAMPLE_SECONDS = 10
#: Fault kinds of ``--faults``; seconds a killed service stays down.
FAULT_KINDS = ('broker', 'database', 'kill')
KILL_DOWN_SECONDS = 5


def say(message):
    print(time.strftime('%H:%M:%S'), message, flush=True)


def script(name):
    beside = os.path.join(os.path.dirname(sys.executable), name)
    return beside if os.path.exists(beside) else name


# -- broker and databases ---------------------------------------------------------------------

class Vhost:
    def __init__(self, suffix=''):
        self.name = 'minisched-soak-%d%s' % (os.getpid(), suffix)
        url = urllib.parse.urlsplit(BROKER)
        self._ctl('add_vhost', self.name)
        self._ctl('set_permissions', '-p', self.name,
                  urllib.parse.unquote(url.username or 'guest'), '.*', '.*', '.*')
        self.url = urllib.parse.urlunsplit(url._replace(path='/' + self.name))

    @staticmethod
    def _ctl(*args):
        subprocess.run(['rabbitmqctl', '-q'] + list(args), check=True, capture_output=True,
                       timeout=60)

    def delete(self):
        self._ctl('delete_vhost', self.name)


class Databases:
    """api, cell1, cell0 (and cell2) databases on PostgreSQL (or SQLite files), dropped at
    the end."""

    def __init__(self, kind, workdir, cells=1):
        import sqlalchemy as sa
        self.kind = kind
        self.cells = ['cell%d' % (i + 1) for i in range(cells)]
        prefix = 'minisched_soak_%s' % uuid.uuid4().hex[:8]
        if kind == 'sqlite':
            self.urls = {name: 'sqlite:///%s/%s.sqlite' % (workdir, name)
                         for name in ['api', 'cell1_cell0'] + self.cells}
            self.urls['cell0'] = self.urls.pop('cell1_cell0')
            self.service_urls = dict(self.urls)
            return
        self.admin = sa.create_engine(PG_ADMIN, isolation_level='AUTOCOMMIT',
                                      poolclass=sa.pool.NullPool)
        names = {'api': prefix + '_api', 'cell1': prefix, 'cell0': prefix + '_cell0'}
        names.update({cell: '%s_%s' % (prefix, cell) for cell in self.cells[1:]})
        with self.admin.connect() as conn:
            for name in names.values():
                conn.execute(sa.text('CREATE DATABASE "%s"' % name))
        self.names = names
        self.urls = {key: self.admin.url.set(database=name).render_as_string(
            hide_password=False) for key, name in names.items()}
        self.service_urls = dict(self.urls)

    def through(self, proxy):
        """Services (and API clients) reach the databases through ``proxy`` from now on;
        ``urls`` stay direct, for the soak's own checks."""
        import sqlalchemy as sa
        self.service_urls = {key: sa.engine.make_url(url).set(
            host='127.0.0.1', port=proxy.port).render_as_string(hide_password=False)
            for key, url in self.urls.items()}

    def sync(self):
        from minisched.db import migration
        migration.db_sync(self.urls['api'], 'api')
        for cell in ['cell0'] + self.cells:
            migration.db_sync(self.urls[cell], 'main')

    def drop(self):
        from minisched.db import engines
        engines.dispose_all()
        if self.kind == 'sqlite':
            return
        import sqlalchemy as sa
        with self.admin.connect() as conn:
            for name in self.names.values():
                conn.execute(sa.text('SELECT pg_terminate_backend(pid) FROM pg_stat_activity '
                                     'WHERE datname = :n AND pid <> pg_backend_pid()'),
                             {'n': name})
                conn.execute(sa.text('DROP DATABASE IF EXISTS "%s"' % name))


def query(url, sql, **params):
    import sqlalchemy as sa
    from minisched.db import engines
    statement = sa.text(sql)
    if 'uuids' in params:
        statement = statement.bindparams(sa.bindparam('uuids', expanding=True))
    with engines.engine_for_url(url).connect() as conn:
        return [dict(row) for row in conn.execute(statement, params).mappings()]


# -- the cluster ---------------------------------------------------------------------------------

class Cluster:
    def __init__(self, workdir, transport_urls, dbs, computes, per_process, bounds=None,
                 spawn_seconds=0.0, admission=None):
        """``transport_urls``: {cell name: its vhost's URL}; cell1's services include the
        scheduler and the API-level conductor. ``bounds``: ``(long_rpc_timeout,
        stuck_build_timeout_seconds)`` to configure (with faults), or None. ``admission``:
        ``[conductor] max_concurrent_schedule_and_build`` (None: the default)."""
        from minisched.conf import filter_scheduler
        self.workdir = workdir
        self.dbs = dbs
        self.cells = list(transport_urls)
        self.transport_urls = transport_urls
        self.procs = {}
        self.commands = {}
        self.spawn_seconds = spawn_seconds
        self.hosts = ['soak-%03d' % (i + 1) for i in range(computes)]
        filters = list(filter_scheduler.LEGACY_FILTERS) + ['SameHostFilter']
        # PostgreSQL allows 100 connections in all: each conductor's two workers get up to
        # 16 each (8 each with two cells), the scheduler's and the clients' far fewer (their
        # own files).
        pool_size = 6 if len(self.cells) == 1 else 3
        default = {'state_path': workdir, 'report_interval': 10, 'service_down_time': 60,
                   'reserved_host_memory_mb': 512}
        conductor = {'workers': 2}
        if admission is not None:
            conductor['max_concurrent_schedule_and_build'] = admission
        if bounds:
            default['long_rpc_timeout'] = bounds[0]
            conductor['stuck_build_timeout_seconds'] = bounds[1]
        self.confs = {cell: self._write('minisched' if cell == 'cell1' else cell, {
            'DEFAULT': dict(default, transport_url=url),
            'database': {'connection': dbs.service_urls[cell], 'max_pool_size': pool_size,
                         'max_overflow': 2},
            'api_database': {'connection': dbs.service_urls['api'],
                             'max_pool_size': pool_size, 'max_overflow': 2},
            'conductor': conductor,
            'scheduler': {'workers': 2, 'discover_hosts_in_cells_interval': -1},
            'filter_scheduler': {'enabled_filters': ','.join(filters)},
            'placement': {'enabled': False},  # the soak runs no Placement
        }) for cell, url in transport_urls.items()}
        self.conf = self.confs['cell1']
        small_pools = {'max_pool_size': 2, 'max_overflow': 1}
        self.small_pools = self._write('small-pools', {'database': small_pools,
                                                       'api_database': small_pools})
        self.groups = [self.hosts[i:i + per_process]
                       for i in range(0, len(self.hosts), per_process)]
        # The first half of the compute processes in cell1, the rest in cell2 (if any).
        per_cell = -(-len(self.groups) // len(self.cells))
        self.group_cells = [self.cells[index // per_cell] for index in range(len(self.groups))]

    def hosts_of(self, cell):
        return [host for group, group_cell in zip(self.groups, self.group_cells)
                if group_cell == cell for host in group]

    @staticmethod
    def conductor(cell):
        return 'conductor' if cell == 'cell1' else 'conductor-' + cell

    def _write(self, name, sections):
        path = os.path.join(self.workdir, name + '.conf')
        with open(path, 'w') as f:
            for section, options in sections.items():
                f.write('[%s]\n' % section)
                f.writelines('%s = %s\n' % item for item in options.items())
        return path

    def _start(self, name, command, mode='w'):
        log = open(os.path.join(self.workdir, name + '.log'), mode)
        self.commands[name] = command
        self.procs[name] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True,
                                            cwd=REPO)

    def kill(self, name):
        """SIGKILL service ``name`` with all its processes (its session)."""
        proc = self.procs[name]
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()

    def restart(self, name):
        """Start service ``name`` again as it was started (its log goes on)."""
        self._start(name, self.commands[name], mode='a')

    def log(self, name):
        with open(os.path.join(self.workdir, name + '.log'), errors='replace') as f:
            return f.read()

    def wait_log(self, name, text, count, timeout=300):
        deadline = time.monotonic() + timeout
        while self.log(name).count(text) < count:
            if self.procs[name].poll() is not None:
                raise RuntimeError('%s exited:\n%s' % (name, self.log(name)[-3000:]))
            if time.monotonic() > deadline:
                raise RuntimeError('%s not ready after %ss' % (name, timeout))
            time.sleep(1)

    def start(self):
        for cell in self.cells:
            self._start(self.conductor(cell), [script('minisched-conductor'), '--config-file',
                                               self.confs[cell]])
        for cell in self.cells:
            self.wait_log(self.conductor(cell), 'minisched-conductor ready', 2)
        self._start('scheduler', [script('minisched-scheduler'), '--config-file', self.conf,
                                  '--config-file', self.small_pools])
        launcher = os.path.join(REPO, 'benchmarks', 'multi_compute.py')
        if not os.path.exists(launcher):
            raise RuntimeError('benchmarks/multi_compute.py (many computes per process) is '
                               'missing: 200 minisched-compute processes would not fit')
        for index, hosts in enumerate(self.groups):
            sizes = ','.join('%s:%d/%d/%d' % ((host,) + SIZES[i % len(SIZES)])
                             for i, host in enumerate(hosts))
            conf = self._write('computes%d' % index, {'fake_driver': {
                'host_sizes': sizes, 'spawn_delay_seconds': self.spawn_seconds}})
            self._start('computes%d' % index, [sys.executable, '-m', 'benchmarks.multi_compute',
                                               '--config-file',
                                               self.confs[self.group_cells[index]],
                                               '--config-file', conf])
        self.wait_log('scheduler', 'minisched-scheduler ready', 2)
        for index, hosts in enumerate(self.groups):
            self.wait_log('computes%d' % index, 'minisched-compute ready', len(hosts))

    def manage(self, *args):
        result = subprocess.run([script('minisched-manage'), '--config-file', self.conf] +
                                [str(a) for a in args], capture_output=True, text=True,
                                timeout=300)
        if result.returncode:
            raise RuntimeError('manage %s: %s%s' % (args, result.stdout, result.stderr))
        return result.stdout

    def threads(self):
        """{service name: OS threads of its process and its workers}."""
        return {name: sum(thread_count(pid) for pid in [proc.pid] + children(proc.pid))
                for name, proc in self.procs.items()}

    def scheduler_pids(self):
        launcher = self.procs['scheduler'].pid
        return [launcher] + children(launcher)

    def stop(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + 30
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def children(pid):
    found = []
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open('/proc/%s/stat' % entry) as f:
                    fields = f.read().rsplit(')', 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != 'Z':
                found.append(int(entry))
    return sorted(found)


def thread_count(pid):
    """The OS threads of process ``pid`` (0 when it is gone)."""
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('Threads:'):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_mb(pid):
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


# -- client processes --------------------------------------------------------------------------

def client_main(conf_files, cell_urls, deadline, seed, live_target, events):
    """Create servers and delete the oldest ones until ``deadline``; events go to the queue."""
    # No eventlet monkey patching here: it would turn the queue's feeder thread into a green
    # thread waiting on a lock made before the patching, and hang the client.
    from minisched import config
    from minisched import context
    from minisched.compute import api as compute_api
    from minisched.db import engines
    from minisched import objects
    from minisched.objects import flavor as flavor_obj
    config.parse_args(['soak-client', '--config-file', conf_files[0],
                       '--config-file', conf_files[1]])
    objects.register_all()
    engines.configure(config.CONF)
    api = compute_api.API(config.CONF)
    ctxt = context.RequestContext(user_id='soak', project_id='soak', is_admin=True)
    flavors = [flavor_obj.Flavor.get_by_name(ctxt, name) for name, *_ in FLAVORS]
    rng = random.Random(seed)
    live = collections.deque()
    while time.time() < deadline:
        count = rng.randint(1, 3)
        started = time.monotonic()
        events.put(('sent', count))
        try:
            uuids = api.create(ctxt, rng.choice(flavors), num_instances=count)
        except Exception as exc:
            events.put(('refused', type(exc).__name__, count))
            events.put(('error', 'create: %s' % str(exc).splitlines()[0][:200]))
            time.sleep(1)
            continue
        events.put(('accepted', uuids))
        for state, instance_uuid in _wait_built(cell_urls, uuids):
            events.put(('build', time.monotonic() - started, state, instance_uuid))
            if state == 'active':
                live.append(instance_uuid)
        while len(live) > live_target:
            instance_uuid = live.popleft()
            started = time.monotonic()
            try:
                api.delete(ctxt, instance_uuid)
                ok = _wait_deleted(list(cell_urls.values()), instance_uuid)
                events.put(('delete', time.monotonic() - started, ok, instance_uuid))
            except Exception as exc:
                events.put(('error', 'delete %s: %s' % (instance_uuid, exc)))
    events.put(('done', seed))


def _wait_built(cell_urls, uuids):
    pending = set(uuids)
    deadline = time.monotonic() + BUILD_TIMEOUT
    done = []
    while pending and time.monotonic() < deadline:
        for url in cell_urls.values():
            rows = query(url, 'SELECT uuid, vm_state FROM instances WHERE uuid IN :uuids',
                         uuids=list(pending)) if pending else []
            for row in rows:
                if row['vm_state'] in ('active', 'error'):
                    done.append((row['vm_state'], row['uuid']))
                    pending.discard(row['uuid'])
        time.sleep(0.1)
    return done + [('timeout', u) for u in pending]


def _wait_deleted(urls, instance_uuid, timeout=BUILD_TIMEOUT):
    """Wait until no cell database (``urls``) holds a live row of the instance."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(row['deleted'] == 0 for url in urls for row in query(
                url, 'SELECT deleted FROM instances WHERE uuid = :u', u=instance_uuid)):
            return True
        time.sleep(0.1)
    return False


# -- faults -----------------------------------------------------------------------------------

#: What a conductor logs when a run again rebuilds or takes over what an interrupted run
#: placed, or fails again (the second cut waits for one of them).
RETRY_LINES = ('this one schedules and builds it again', 'this one takes the build over',
               'running the task again')
#: Seconds after the database is back that the second cut waits for such a line at most
#: (the retries of the first cut then still wait out their backoff, up to 30 s:
#: ``minisched.utils.MAX_DELAY``), and seconds from the line to the cut (issue 48's run:
#: 0.7 s into the adoption).
RETRY_WINDOW_SECONDS = 5
SECOND_CUT_AFTER = 0.7
#: What services log when a write (a compute's) or a build task (a conductor's) failed on
#: the database and will be tried again: counted during the first cut.
RETRIED_LINES = ('; trying again in', 'running the task again in')


class Faults(threading.Thread):
    """Applies the fault kinds in turn, one every ``every`` seconds (see the docstring)."""

    def __init__(self, cluster, kinds, every, outage, proxies, second_cut=0.0):
        super().__init__(daemon=True, name='soak-faults')
        self.cluster = cluster
        self.kinds = list(kinds)
        self.every = every
        self.outage = outage
        self.second_cut = second_cut
        self.proxies = proxies  # {'broker': TcpProxy, 'database': TcpProxy or None}
        # Services and compute processes alternate, so that a short run kills each kind.
        services = sorted(name for name in cluster.procs if not name.startswith('computes'))
        computes = sorted(name for name in cluster.procs if name.startswith('computes'))
        self.victims = [name for pair in zip(services + [None] * len(computes),
                                             computes + [None] * len(services))
                        for name in pair if name is not None]
        self.applied = []       # (seconds since start, kind, what)
        self._halt = threading.Event()
        self._began = time.monotonic()
        self._killed = None

    def run(self):
        index = 0
        while not self._halt.wait(self.every):
            kind = self.kinds[index % len(self.kinds)]
            try:
                self._apply(kind, index)
            except Exception as exc:  # a fault that could not be applied is reported
                say('fault %s failed: %s' % (kind, exc))
            index += 1

    def _apply(self, kind, index):
        at = time.monotonic() - self._began
        if kind == 'kill':
            victim = self.victims[index // len(self.kinds) % len(self.victims)]
            say('FAULT: SIGKILL %s; back in %d s' % (victim, KILL_DOWN_SECONDS))
            self.applied.append((at, kind, victim))
            self._killed = victim
            self.cluster.kill(victim)
            self._halt.wait(KILL_DOWN_SECONDS)
            self.cluster.restart(victim)
            self._killed = None
            return
        proxy = self.proxies[kind]
        say('FAULT: %s cut for %d s' % (kind, self.outage))
        self.applied.append((at, kind, '%d s' % self.outage))
        at_cut = self._log_ends()
        proxy.cut()
        self._halt.wait(self.outage)
        proxy.restore()
        say('%s back' % kind)
        if kind == 'database' and self.second_cut:
            retrying = sum(self.cluster.log(name)[offset:].count(line)
                           for name, offset in at_cut.items() for line in RETRIED_LINES)
            self._cut_again(proxy, self._log_ends('conductor'), retrying)

    def _log_ends(self, prefix=''):
        """{service: its log's length} (where the lines written from now on begin)."""
        return {name: len(self.cluster.log(name)) for name in self.cluster.procs
                if name.startswith(prefix)}

    def _cut_again(self, proxy, before, retrying):
        """Cut the database again, for ``second_cut`` s, inside the retry window of the
        first cut: :data:`SECOND_CUT_AFTER` s after a conductor, since the database came
        back, took over or rebuilt what an interrupted run had placed (or failed a run
        again), or :data:`RETRY_WINDOW_SECONDS` after it came back when none did."""
        deadline = time.monotonic() + RETRY_WINDOW_SECONDS
        seen = None
        while seen is None and time.monotonic() < deadline and not self._halt.is_set():
            for name, offset in before.items():
                if any(line in self.cluster.log(name)[offset:] for line in RETRY_LINES):
                    seen = name
            self._halt.wait(SECOND_CUT_AFTER if seen else 0.2)
        say('FAULT: database cut again for %.1f s (%s; %d retries of writes and build tasks '
            'during the first cut)' % (self.second_cut, 'a run again of %s under way' % seen
                                       if seen else '%d s after it came back'
                                       % RETRY_WINDOW_SECONDS, retrying))
        self.applied.append((time.monotonic() - self._began, 'database again',
                             '%.1f s' % self.second_cut))
        proxy.cut()
        self._halt.wait(self.second_cut)
        proxy.restore()
        say('database back again')

    def stop(self):
        """No more faults; whatever is cut or killed is restored."""
        self._halt.set()
        self.join(timeout=KILL_DOWN_SECONDS + 30)
        for proxy in self.proxies.values():
            if proxy is not None:
                proxy.restore()
        if self._killed is not None and self.cluster.procs[self._killed].poll() is not None:
            self.cluster.restart(self._killed)

    def summary(self):
        counts = collections.Counter(kind for _, kind, _ in self.applied)
        return ', '.join('%s x%d' % item for item in sorted(counts.items())) or 'none'


def settle(dbs, cells, accepted, timeout):
    """Wait until every accepted build is ACTIVE or ERROR (or deleted); seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        states = _instance_rows(dbs, cells, accepted)
        # A delete in progress is not a build's: its build ended ACTIVE.
        if all(any(row['deleted'] or row['vm_state'] in ('active', 'error') and
                   row['task_state'] in (None, 'deleting')
                   for _cell, row in states.get(uuid, [])) for uuid in accepted):
            break
        time.sleep(2)
    return time.monotonic() - started


def _instance_rows(dbs, cells, uuids):
    found = collections.defaultdict(list)
    uuids = sorted(uuids)
    for cell in cells:
        for start in range(0, len(uuids), 500):
            for row in query(dbs.urls[cell], 'SELECT uuid, host, vm_state, task_state, '
                             'deleted FROM instances WHERE uuid IN :uuids',
                             uuids=uuids[start:start + 500]):
                found[row['uuid']].append((cell, row))
    return found


def accounting(dbs, cells, accepted):
    """{'ACTIVE': n, ...}, ERROR reasons, problems: what became of the accepted builds."""
    uuids = sorted(accepted)
    rows = _instance_rows(dbs, cells, uuids)
    faults, built = {}, collections.Counter()
    for cell in cells:
        for start in range(0, len(uuids), 500):
            chunk = uuids[start:start + 500]
            for row in query(dbs.urls[cell], 'SELECT instance_uuid, message FROM '
                             'instance_faults WHERE instance_uuid IN :uuids ORDER BY id',
                             uuids=chunk):
                faults[row['instance_uuid']] = row['message']
            for row in query(dbs.urls[cell], "SELECT a.instance_uuid FROM "
                             "instance_actions_events e JOIN instance_actions a ON "
                             "e.action_id = a.id WHERE e.event = "
                             "'compute_build_and_run_instance' AND e.result = 'Success' "
                             "AND a.instance_uuid IN :uuids", uuids=chunk):
                built[row['instance_uuid']] += 1
    counts = collections.Counter()
    reasons = collections.Counter()
    problems = []
    unfinished = []
    for instance_uuid in uuids:
        found = rows.get(instance_uuid, [])
        live = [row for _cell, row in found if not row['deleted']]
        if len(live) > 1 or built[instance_uuid] > 1:
            counts['duplicated'] += 1
            problems.append('duplicated: %s has %d live rows (%s) and was built %d times' % (
                instance_uuid, len(live), [cell for cell, _ in found], built[instance_uuid]))
        if not found:
            counts['lost'] += 1
            problems.append('lost: %s has no instance record' % instance_uuid)
        elif not live:
            counts['ACTIVE'] += 1   # the clients delete ACTIVE instances only
            counts['ACTIVE, deleted since'] += 1
        elif live[0]['vm_state'] == 'active':
            counts['ACTIVE'] += 1
            if live[0]['task_state'] is not None:
                # The build ended; what followed (a delete) did not: not a build's fault.
                counts['ACTIVE, %s unfinished' % live[0]['task_state']] += 1
                unfinished.append('%s is ACTIVE on %s, %s unfinished' % (
                    instance_uuid, live[0]['host'], live[0]['task_state']))
        elif live[0]['vm_state'] == 'error':
            counts['ERROR'] += 1
            reasons[faults.get(instance_uuid, '(no fault)')] += 1
            if instance_uuid not in faults:
                problems.append('ERROR without a fault: %s' % instance_uuid)
        else:
            counts['lost'] += 1
            problems.append('lost: %s is %s/%s on %s' % (instance_uuid, live[0]['vm_state'],
                                                         live[0]['task_state'],
                                                         live[0]['host']))
    return counts, reasons, problems, unfinished


# -- consistency ----------------------------------------------------------------------------

def consistency(cluster, deleted_sample):
    """(problems, counts) of the checks listed in the module docstring."""
    import oslo_messaging as messaging
    from minisched import config
    from minisched import context
    from minisched import exception
    from minisched import objects
    from minisched.objects import image_meta
    from minisched import rpc
    config.parse_args(['soak', '--config-file', cluster.conf])
    objects.register_all()
    client = rpc.get_client(messaging.Target(topic='scheduler', version='4.5')).prepare(
        timeout=60)
    ctxt = context.get_admin_context()
    flavor = objects.Flavor(id=0, flavorid='soak-probe', name='probe', memory_mb=1, vcpus=1,
                            root_gb=0, ephemeral_gb=0, swap=0, extra_specs={})

    def tracked_on(instance_uuid):
        spec = objects.RequestSpec(
            flavor=flavor, image=image_meta.ImageMeta.from_dict({}), num_instances=1,
            project_id='soak', user_id='soak', instance_uuid=str(uuid.uuid4()),
            scheduler_hints={'same_host': [instance_uuid]}, ignore_hosts=None,
            force_hosts=None, force_nodes=None, retry=None, limits=None, instance_group=None,
            availability_zone=None, requested_destination=None)
        try:
            return [s['host'] for s in client.call(
                ctxt, 'select_destinations', spec_obj=spec, instance_uuids=None,
                return_objects=False, return_alternates=False)]
        except exception.NoValidHost:
            return []

    problems = []
    counts = collections.Counter()
    # Which cell holds each deleted instance of the sample (its soft-deleted row).
    deleted_in = {}
    for cell in cluster.cells:
        for row in query(cluster.dbs.urls[cell], 'SELECT uuid FROM instances WHERE uuid IN '
                         ':uuids', uuids=list(deleted_sample) or ['-']):
            deleted_in[row['uuid']] = cell
    for instance_uuid in deleted_sample:
        found = tracked_on(instance_uuid)
        counts['deleted checked (%s)' % deleted_in.get(instance_uuid, '?')] += 1
        if found:
            problems.append('deleted instance %s still tracked on %s' % (instance_uuid, found))
    mapped = {r['instance_uuid']: r['name'] for r in query(
        cluster.dbs.urls['api'], 'SELECT m.instance_uuid, c.name FROM instance_mappings m '
        'LEFT JOIN cell_mappings c ON m.cell_id = c.id')}
    host_cells = {r['host']: r['name'] for r in query(
        cluster.dbs.urls['api'], 'SELECT h.host, c.name FROM host_mappings h JOIN '
        'cell_mappings c ON h.cell_id = c.id')}
    seen_in = {}
    for cell in cluster.cells:
        for problem, counted in _check_cell(cluster.dbs.urls[cell], cell, tracked_on, mapped,
                                            host_cells, seen_in):
            if problem:
                problems.append(problem)
            else:
                counts.update(counted)
    rpc.cleanup()
    return problems, dict(counts)


def _check_cell(cell_url, cell, tracked_on, mapped, host_cells, seen_in):
    """Yield (problem, None) or (None, counts) for one cell's instances and nodes."""
    live = query(cell_url, "SELECT uuid, host FROM instances WHERE deleted = 0 AND host IS "
                           "NOT NULL AND vm_state = 'active'")
    for row in live:
        found = tracked_on(row['uuid'])
        if found != [row['host']]:
            time.sleep(1)   # an update may still be on its way: ask once more
            found = tracked_on(row['uuid'])
        if found != [row['host']]:
            yield ('instance %s on %s in %s, scheduler has it on %s'
                   % (row['uuid'], row['host'], cell, found or 'no host')), None
        if mapped.get(row['uuid']) != cell:
            yield ('instance %s is in %s, its mapping says %s'
                   % (row['uuid'], cell, mapped.get(row['uuid']))), None
        if host_cells.get(row['host']) != cell:
            yield ('instance %s is in %s on %s, a host of %s'
                   % (row['uuid'], cell, row['host'], host_cells.get(row['host']))), None
    for row in query(cell_url, 'SELECT uuid FROM instances'):
        other = seen_in.setdefault(row['uuid'], cell)
        if other != cell:
            yield 'instance %s has rows in %s and %s' % (row['uuid'], other, cell), None
    nodes = query(cell_url, 'SELECT host, vcpus, memory_mb, local_gb, vcpus_used, '
                            'memory_mb_used, local_gb_used, cpu_allocation_ratio, '
                            'ram_allocation_ratio, disk_allocation_ratio FROM compute_nodes '
                            'WHERE deleted = 0')
    sums = {r['host']: r for r in query(
        cell_url, 'SELECT host, SUM(vcpus) AS vcpus, SUM(memory_mb) AS memory_mb, '
                  'SUM(root_gb + ephemeral_gb) AS disk FROM instances WHERE deleted = 0 AND '
                  'host IS NOT NULL GROUP BY host')}
    for node in nodes:
        ratio = lambda name, default: node[name] or default  # noqa: E731
        limits = (node['vcpus'] * ratio('cpu_allocation_ratio', 16.0),
                  node['memory_mb'] * ratio('ram_allocation_ratio', 1.5),
                  node['local_gb'] * ratio('disk_allocation_ratio', 1.0))
        used = (node['vcpus_used'], node['memory_mb_used'], node['local_gb_used'])
        placed = sums.get(node['host'], {'vcpus': 0, 'memory_mb': 0, 'disk': 0})
        for what, limit, value in zip(('vcpus', 'memory_mb', 'local_gb'), limits, used):
            if value > limit:
                yield '%s: %s used %s > limit %s' % (node['host'], what, value, limit), None
        for what, limit, value in zip(('vcpus', 'memory_mb', 'local_gb'), limits,
                                      (placed['vcpus'], placed['memory_mb'], placed['disk'])):
            if (value or 0) > limit:
                yield ('%s: instances hold %s %s > limit %s'
                       % (node['host'], value, what, limit)), None
    yield None, {'live instances checked (%s)' % cell: len(live),
                 'nodes checked (%s)' % cell: len(nodes)}


# -- main -------------------------------------------------------------------------------------

def percentile(values, p):
    if not values:
        return float('nan')
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100.0 * (len(ordered) - 1))))]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--minutes', type=float, default=10)
    parser.add_argument('--computes', type=int, default=200)
    parser.add_argument('--per-process', type=int, default=25)
    parser.add_argument('--clients', type=int, default=4)
    parser.add_argument('--live-per-client', type=int, default=40,
                        help='Servers each client keeps; past that it deletes its oldest.')
    parser.add_argument('--cells', type=int, default=1, choices=(1, 2),
                        help='2: a second cell with its own vhost, database, conductor and '
                             'half of the computes; see "Cells" in the module docstring.')
    parser.add_argument('--db', choices=('postgresql', 'sqlite'), default='postgresql')
    parser.add_argument('--faults', type=_fault_kinds, default=[],
                        help='Comma-separated fault kinds applied in turn during the load: '
                             '%s; see "Faults" in the module docstring.'
                             % ', '.join(FAULT_KINDS))
    parser.add_argument('--fault-every', type=float, default=60,
                        help='Seconds between two faults (default 60).')
    parser.add_argument('--outage', type=float, default=20,
                        help='Seconds a broker or database cut lasts (default 20).')
    parser.add_argument('--second-cut', type=float, default=0.0, metavar='SECONDS',
                        help='After each database cut, cut the database again for SECONDS '
                             'inside its retry window; default 0: no second cut.')
    parser.add_argument('--long-rpc-timeout', type=int, default=60,
                        help='[DEFAULT] long_rpc_timeout with faults (default 60).')
    parser.add_argument('--stuck-timeout', type=int, default=150,
                        help='[conductor] stuck_build_timeout_seconds with faults '
                             '(default 150: above twice --long-rpc-timeout).')
    parser.add_argument('--spawn-seconds', type=float, default=0.0,
                        help='Seconds each fake spawn takes (default 0): longer builds are '
                             'more often caught by a fault.')
    parser.add_argument('--conductor-admission', type=int, default=None, metavar='N',
                        help="[conductor] max_concurrent_schedule_and_build of the "
                             "conductors (default: the option's own default, 8).")
    parser.add_argument('--backend', choices=('threading', 'eventlet'), default='threading',
                        help='Concurrency backend of the services (default: threading, '
                             'their own default; eventlet is deprecated).')
    parser.add_argument('--keep', action='store_true', help='Keep the work directory.')
    args = parser.parse_args(argv)
    # The services inherit it; this process and its clients keep native threads.
    from minisched import monkey_patch
    monkey_patch.embed()
    os.environ[monkey_patch.ENV] = '1' if args.backend == 'threading' else '0'
    if 'database' in args.faults and args.db == 'sqlite':
        parser.error('--faults database needs --db postgresql (SQLite has no server to cut)')
    # Stopped from outside (timeout, Ctrl-C): clean up the services, databases and vhost too.
    signal.signal(signal.SIGTERM, _interrupted)

    workdir = tempfile.mkdtemp(prefix='minisched-soak-')
    say('work directory %s' % workdir)
    vhosts = []
    dbs = None
    cluster = None
    proxies = {}
    try:
        vhosts = [Vhost()] + [Vhost('-cell%d' % (i + 1)) for i in range(1, args.cells)]
        dbs = Databases(args.db, workdir, args.cells)
        dbs.sync()
        transport_urls = {'cell%d' % (i + 1): vhost.url for i, vhost in enumerate(vhosts)}
        if args.faults:
            proxies = _proxies(dbs, args.faults)
            if 'broker' in proxies:
                transport_urls = {cell: _through(url, proxies['broker'])
                                  for cell, url in transport_urls.items()}
        cluster = Cluster(workdir, transport_urls, dbs, args.computes, args.per_process,
                          bounds=(args.long_rpc_timeout, args.stuck_timeout)
                          if args.faults else None, spawn_seconds=args.spawn_seconds,
                          admission=args.conductor_admission)
        set_up = time.monotonic()
        say('starting %d conductor(s), scheduler (2 workers) and %d computes in %d processes'
            '%s' % (args.cells, args.computes, len(cluster.groups), ''.join(
                '; %s: %d computes on %s' % (cell, len(cluster.hosts_of(cell)),
                                             urllib.parse.urlsplit(cluster.transport_urls[
                                                 cell]).path) for cell in cluster.cells)))
        if args.cells > 1:
            # The scheduler reads the cell mappings once, at start-up: map the cells first.
            cluster.manage('cell', 'map_cell0', '--database_connection',
                           dbs.service_urls['cell0'])
            for cell in cluster.cells:
                cluster.manage('cell', 'create', '--name', cell, '--database_connection',
                               dbs.service_urls[cell], '--transport-url',
                               cluster.transport_urls[cell])
        cluster.start()
        deadline = time.monotonic() + 120
        while sum(len(query(dbs.urls[cell], 'SELECT id FROM compute_nodes'))
                  for cell in cluster.cells) < args.computes:
            if time.monotonic() > deadline:
                raise RuntimeError('compute node records missing')
            time.sleep(2)
        if args.cells == 1:
            cluster.manage('cell', 'simple_cell_setup')
        else:
            cluster.manage('cell', 'discover_hosts')
        for name, ram, vcpus, disk in FLAVORS:
            cluster.manage('flavor', 'create', name, '--ram', ram, '--vcpus', vcpus,
                           '--disk', disk)
        time.sleep(12)  # first state reports (ComputeFilter) and host mappings seen
        say('cluster up in %.0fs; %d clients for %.1f min' % (
            time.monotonic() - set_up, args.clients, args.minutes))
        return run(cluster, dbs, args, proxies)
    finally:
        if cluster is not None:
            cluster.stop()
        for proxy in proxies.values():
            proxy.close()
        if dbs is not None:
            dbs.drop()
        for vhost in vhosts:
            vhost.delete()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def _interrupted(signum, frame):
    raise KeyboardInterrupt('SIGTERM')


def _fault_kinds(value):
    kinds = [kind.strip() for kind in value.split(',') if kind.strip()]
    unknown = set(kinds) - set(FAULT_KINDS)
    if unknown:
        raise argparse.ArgumentTypeError('unknown fault kind(s) %s; choose among %s' % (
            ', '.join(sorted(unknown)), ', '.join(FAULT_KINDS)))
    return kinds


def _proxies(dbs, kinds):
    """TcpProxies of this process for the broker and the database, as ``kinds`` need them;
    the database's is put in the services' way at once (``dbs.through``)."""
    from tests.functional import tcp_proxy
    proxies = {}
    if 'broker' in kinds:
        url = urllib.parse.urlsplit(BROKER)
        proxies['broker'] = tcp_proxy.TcpProxy(url.port or 5672, url.hostname or '127.0.0.1')
    if 'database' in kinds:
        import sqlalchemy as sa
        url = sa.engine.make_url(dbs.urls['api'])
        proxies['database'] = tcp_proxy.TcpProxy(url.port or 5432, url.host or '127.0.0.1')
        dbs.through(proxies['database'])
    return proxies


def _through(url, proxy):
    """``url`` pointing at ``proxy`` (credentials and vhost kept)."""
    parts = urllib.parse.urlsplit(url)
    userinfo = parts.netloc.rpartition('@')[0]
    netloc = ('%s@' % userinfo if userinfo else '') + '127.0.0.1:%d' % proxy.port
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def run(cluster, dbs, args, proxies=None):
    ctx = multiprocessing.get_context('spawn')
    events = ctx.Queue()
    end = time.time() + args.minutes * 60
    cells = {cell: dbs.urls[cell] for cell in cluster.cells + ['cell0']}
    clients = [ctx.Process(target=client_main, args=(
        (cluster.conf, cluster.small_pools), cells, end, seed, args.live_per_client, events),
        daemon=True) for seed in range(args.clients)]
    for proc in clients:
        proc.start()
    faults = None
    if args.faults:
        faults = Faults(cluster, args.faults, args.fault_every, args.outage, proxies,
                        args.second_cut)
        faults.start()
    builds, deletes, errors, rss, threads = [], [], [], [], []
    sent, accepted, refused = [0], set(), collections.Counter()
    started = time.monotonic()
    next_sample = 0.0
    done = 0
    hard_stop = started + args.minutes * 60 + 2 * BUILD_TIMEOUT
    while done < len(clients):
        now = time.monotonic() - started
        if time.monotonic() > hard_stop:
            errors.append('%d client(s) still running long after the end: stopped'
                          % (len(clients) - done))
            break
        if now >= next_sample:
            pids = cluster.scheduler_pids()
            sample = [rss_mb(pid) for pid in pids]
            rss.append((now, sum(sample), sample))
            threads.append((now, cluster.threads()))
            active = sum(1 for b in builds if b[1] == 'active')
            say('t=%4.0fs builds %d (active %d, error %d, timeout %d) deletes %d errors %d '
                'scheduler RSS %.0f MB %s, threads %d' % (
                    now, len(builds), active, sum(1 for b in builds if b[1] == 'error'),
                    sum(1 for b in builds if b[1] == 'timeout'), len(deletes), len(errors),
                    sum(sample), ['%.0f' % s for s in sample], sum(threads[-1][1].values())))
            next_sample += SAMPLE_SECONDS
        try:
            event = events.get(timeout=1)
        except Exception:
            if all(p.exitcode is not None for p in clients):
                break
            continue
        kind = event[0]
        if kind == 'build':
            builds.append(event[1:])
        elif kind == 'delete':
            deletes.append(event[1:])
        elif kind == 'error':
            errors.append(event[1])
        elif kind == 'sent':
            sent[0] += event[1]
        elif kind == 'accepted':
            accepted.update(event[1])
        elif kind == 'refused':
            refused[event[1]] += event[2]
        elif kind == 'done':
            done += 1
    elapsed = time.monotonic() - started
    if faults is not None:
        faults.stop()
        say('faults over (%s); every proxy restored, every service running' % (
            faults.summary()))
    for proc in clients:
        proc.join(timeout=60)
        if proc.is_alive():
            proc.kill()
    # Builds the faults left without an end get one from the conductor's stuck-build check.
    limit = (args.stuck_timeout + 90) if args.faults else 60
    say('load over; waiting (up to %d s) for every accepted build to end' % limit)
    waited = settle(dbs, cluster.cells + ['cell0'], accepted, limit)
    time.sleep(5)
    counts, reasons, lost, unfinished = accounting(dbs, cluster.cells + ['cell0'], accepted)
    builds_report = (sent[0], accepted, refused, counts, reasons, lost, unfinished, waited)
    deleted = [d[2] for d in deletes if d[1]]
    problems, checked = consistency(cluster, random.Random(0).sample(
        deleted, min(50, len(deleted))))
    return report(args, elapsed, builds, deletes, errors, rss, problems, checked,
                  builds_report, faults, threads)


def report(args, elapsed, builds, deletes, errors, rss, problems, checked, builds_report,
           faults, threads=()):
    build_times = [b[0] for b in builds if b[1] == 'active']
    delete_times = [d[0] for d in deletes if d[1]]
    print('\n==== soak report: %d computes, %d clients, %.1f min of load ====' % (
        args.computes, args.clients, elapsed / 60))
    print('builds     %6d  (%.1f/min)  active %d, error %d, timed out %d' % (
        len(builds), len(builds) / elapsed * 60, len(build_times),
        sum(1 for b in builds if b[1] == 'error'), sum(1 for b in builds if b[1] == 'timeout')))
    print('  latency create->ACTIVE  p50 %.2fs  p99 %.2fs  max %.2fs' % (
        percentile(build_times, 50), percentile(build_times, 99),
        max(build_times) if build_times else float('nan')))
    print('deletes    %6d  (%.1f/min)  failed %d' % (
        len(deletes), len(deletes) / elapsed * 60, sum(1 for d in deletes if not d[1])))
    print('  latency delete->gone    p50 %.2fs  p99 %.2fs' % (
        percentile(delete_times, 50), percentile(delete_times, 99)))
    print('errors     %6d  %s' % (len(errors), errors[:5]))
    print('scheduler RSS (launcher + workers, MB) over time:')
    for now, total, sample in rss[::max(1, len(rss) // 12)] + rss[-1:]:
        print('  t=%5.0fs  %7.1f  %s' % (now, total, ' '.join('%.0f' % s for s in sample)))
    if threads:
        names = sorted({name for _, counts in threads for name in counts})
        print('OS threads (process + workers) over time, %s backend: total, then %s'
              % (args.backend, ', '.join(names)))
        for now, counts in list(threads[::max(1, len(threads) // 12)]) + list(threads[-1:]):
            print('  t=%5.0fs  %5d  %s' % (now, sum(counts.values()), ' '.join(
                '%d' % counts.get(name, 0) for name in names)))
    print('consistency: %s' % ', '.join('%s %d' % item for item in checked.items()))
    if problems:
        print('  %d PROBLEMS:' % len(problems))
        for problem in problems[:20]:
            print('   ', problem)
    else:
        print('  OK: every live instance tracked on its DB host by the schedulers, deleted '
              'ones forgotten, no node over its allocation ratios')
    sent, accepted, refused, counts, reasons, lost, unfinished, waited = builds_report
    print('faults: %s' % (faults.summary() if faults is not None else 'none'))
    if faults is not None:
        for at, kind, what in faults.applied:
            print('  t=%5.0fs  %-8s %s' % (at, kind, what))
    print('build accounting (after %.0f s of settling):' % waited)
    # Both counted in instances, so that sent = accepted + refused.
    print('  sent %d, accepted %d, refused %d (instances of refused creates, by error: %s)' % (
        sent, len(accepted), sum(refused.values()), dict(refused) or 'none'))
    print('  ACTIVE %d (%d deleted since), ERROR %d, lost %d, duplicated %d' % (
        counts['ACTIVE'], counts['ACTIVE, deleted since'], counts['ERROR'], counts['lost'],
        counts['duplicated']))
    for message, count in reasons.most_common():
        print('    ERROR %4d  %s' % (count, message))
    for problem in lost[:20]:
        print('   ', problem)
    if unfinished:
        print('  after their build (not counted as lost): %d' % len(unfinished))
        for line in unfinished[:10]:
            print('   ', line)
    return 1 if problems or counts['lost'] or counts['duplicated'] or lost else 0


if __name__ == '__main__':
    sys.exit(main())
