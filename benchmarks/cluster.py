"""Real minisched processes for the end-to-end, memory and build benches.

``vhost()`` gives the bench a RabbitMQ vhost of its own (topic queue names are global per
vhost, so a bench must not share one with a running cluster or a test session). ``Cluster``
writes one config file, starts services as child processes (each in its own session, output
in a log file), waits for their "ready" log lines and stops them with SIGTERM, then SIGKILL.
Client work runs in spawned child processes (``spawn``) that parse the same config file.

The bench owns its children: each is killed (SIGKILL) by the kernel when the bench process
dies, however it dies (``die_with_parent``: Linux's parent-death signal, set in the child
before it runs anything), and the services' own workers exit with them (oslo.service's
workers watch their launcher). A SIGTERM or SIGINT of the bench stops the services cleanly
first (``python -m benchmarks`` turns them into SystemExit, so the ``finally`` blocks run).
"""
import contextlib
import ctypes
import functools
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse

from benchmarks import common

BROKER = os.environ.get('MINISCHED_BENCH_TRANSPORT_URL',
                        'rabbit://guest:guest@127.0.0.1:5672/')
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
START_TIMEOUT = 120
#: Set (to anything) to run the services with debug logging.
DEBUG = bool(os.environ.get('MINISCHED_BENCH_DEBUG'))


#: prctl(2) option: the signal this process gets when the thread that made it exits.
_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid):
    """In a child, before it runs anything: be SIGKILLed when its parent dies.

    The signal comes when the *thread* that started the child exits: start children from the
    bench's main thread. A parent that died before this call is caught by comparing pids.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        return  # not Linux, or refused: the bench's own clean-up is all there is
    if os.getppid() != parent_pid:
        os._exit(1)


class Unavailable(Exception):
    """A bench cannot run here (no broker, no rabbitmqctl...): reported, not raised further."""


def _rabbitmqctl(*args):
    return subprocess.run(['rabbitmqctl', '-q'] + list(args), capture_output=True, text=True,
                          timeout=60, check=True)


@contextlib.contextmanager
def vhost(suffix=''):
    """``minisched-bench-<pid>[-suffix]`` on the local broker (its user gets every
    permission); deleted after. Yields the transport URL."""
    name = 'minisched-bench-%d%s' % (os.getpid(), '-' + suffix if suffix else '')
    url = urllib.parse.urlsplit(BROKER)
    user = urllib.parse.unquote(url.username or 'guest')
    if not shutil.which('rabbitmqctl'):
        raise Unavailable('rabbitmqctl not found: cannot make a vhost for the bench')
    try:
        _rabbitmqctl('add_vhost', name)
        _rabbitmqctl('set_permissions', '-p', name, user, '.*', '.*', '.*')
    except subprocess.SubprocessError as exc:
        raise Unavailable('rabbitmqctl add_vhost failed: %s' %
                          (getattr(exc, 'stderr', '') or exc).strip())
    try:
        yield urllib.parse.urlunsplit(url._replace(path='/' + urllib.parse.quote(name)))
    finally:
        try:
            _rabbitmqctl('delete_vhost', name)
        except subprocess.SubprocessError:
            pass


@contextlib.contextmanager
def private_broker():
    """A RabbitMQ node of the bench's own on loopback (``minisched.localcluster.rabbit_node``: a
    name, ports and directory of its own; killed by its watchdog if the bench dies), for a bench
    that needs more connections than the machine's broker allows (its file descriptor limit
    is that of the shell that started it: 1,024 here, ~830 sockets). The node inherits this
    process's limit. Yields the transport URL (guest on loopback, vhost ``/``); Unavailable
    when RabbitMQ is not installed or the node does not start."""
    from minisched.localcluster import rabbit_node
    directory = tempfile.mkdtemp(prefix='minisched-bench-broker-')
    node = rabbit_node.Node(directory, name='bench%d' % os.getpid())
    node.watchdog_paths = (directory,)
    try:
        try:
            node.start(timeout=START_TIMEOUT)
        except rabbit_node.BrokerError as exc:
            raise Unavailable('the bench\'s own RabbitMQ did not start: %s\n%s'
                              % (exc, node.log_tail()))
        yield 'rabbit://guest:guest@127.0.0.1:%d/' % node.port
    finally:
        node.close()
        shutil.rmtree(directory, ignore_errors=True)


class Cluster:
    """Config and service processes of one bench deployment under ``workdir``; ``env``
    adds to the services' environment (``MINISCHED_TRACE_DIR``...)."""

    def __init__(self, transport_url, db_url, workdir=None, sections=None, env=None):
        self.workdir = workdir or tempfile.mkdtemp(prefix='minisched-bench-')
        self.procs = {}
        self.env = dict(env or {})
        base = {'DEFAULT': {'transport_url': transport_url,
                            'state_path': os.path.join(self.workdir, 'state'),
                            'control_exchange': 'minisched-bench',
                            # Synthetic hosts never report: keep them "up" for ComputeFilter.
                            'service_down_time': 86400, 'report_interval': 10,
                            'periodic_fuzzy_delay': 0, 'debug': DEBUG},
                'database': {'connection': db_url},
                'api_database': {'connection': db_url},
                # The path without Placement unless a bench names its Placement.
                'placement': {'enabled': False},
                'oslo_concurrency': {'lock_path': os.path.join(self.workdir, 'locks')}}
        for section, options in (sections or {}).items():
            base.setdefault(section, {}).update(options)
        self.conf_file = common.write_conf(os.path.join(self.workdir, 'bench.conf'), base)

    def start(self, name, module, sections=None, ready='ready', ready_count=1, wait=True):
        """Run ``python -m module --config-file <shared> [--config-file <own>]``."""
        cmd = [sys.executable, '-m', module, '--config-file', self.conf_file]
        if sections:
            cmd += ['--config-file', common.write_conf(
                os.path.join(self.workdir, name + '.conf'), sections)]
        log_path = os.path.join(self.workdir, name + '.log')
        with open(log_path, 'wb') as log:
            env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get('PYTHONPATH',
                                                                                  ''),
                       **self.env)
            popen = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, cwd=REPO, env=env,
                                     start_new_session=True,
                                     preexec_fn=functools.partial(die_with_parent,
                                                                  os.getpid()))
        self.procs[name] = (popen, log_path, ready, ready_count)
        if wait:
            self.wait_ready(name)
        return popen

    def log(self, name):
        with open(self.procs[name][1], errors='replace') as handle:
            return handle.read()

    def wait_ready(self, *names, timeout=START_TIMEOUT):
        deadline = time.monotonic() + timeout
        for name in names:
            popen, _path, ready, count = self.procs[name]
            while self.log(name).count(ready) < count:
                if popen.poll() is not None:
                    raise RuntimeError('%s exited with %s:\n%s' % (
                        name, popen.returncode, self.log(name)[-3000:]))
                if time.monotonic() > deadline:
                    raise RuntimeError('%s not ready after %d s:\n%s' % (
                        name, timeout, self.log(name)[-3000:]))
                time.sleep(0.2)

    def pid(self, name):
        return self.procs[name][0].pid

    def cpu_seconds(self):
        """CPU seconds (user + system) used so far by the running services and their
        workers (the direct children of each)."""
        total = 0.0
        for popen, *_rest in self.procs.values():
            if popen.poll() is None:
                total += sum(process_cpu_seconds(pid)
                             for pid in [popen.pid] + children(popen.pid))
        return total

    def stop(self, name, timeout=20):
        self._stop([name], timeout)

    def stop_all(self, timeout=20):
        """SIGTERM to every service at once, then SIGKILL to what is left after ``timeout``
        (one deadline for all: 20 launchers of 100 computes each took 20 s apiece, one
        after the other)."""
        self._stop(list(reversed(list(self.procs))), timeout)

    def _stop(self, names, timeout):
        popens = [self.procs[name][0] for name in names]
        for popen in popens:
            if popen.poll() is None:
                popen.terminate()
        deadline = time.monotonic() + timeout
        for popen in popens:
            try:
                popen.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for popen in popens:
            try:  # workers of a stopped launcher, whatever state they are in
                os.killpg(popen.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            popen.wait(timeout=timeout)

    def cleanup(self):
        """Stop everything and remove the files (kept, and named, when the environment sets
        ``MINISCHED_BENCH_KEEP``: the service logs are there)."""
        self.stop_all()
        if os.environ.get('MINISCHED_BENCH_KEEP'):
            sys.stderr.write('  bench files kept under %s\n' % self.workdir)
            return
        shutil.rmtree(self.workdir, ignore_errors=True)


def children(pid):
    """Pids of the direct children of ``pid`` (Linux /proc)."""
    found = []
    for task in os.listdir('/proc/%d/task' % pid):
        try:
            with open('/proc/%d/task/%s/children' % (pid, task)) as handle:
                found += [int(p) for p in handle.read().split()]
        except OSError:
            continue
    return found


def rss_mb(pid):
    """VmRSS of ``pid`` in MB (from /proc/<pid>/status)."""
    with open('/proc/%d/status' % pid) as handle:
        for line in handle:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024.0
    return float('nan')


def private_mb(pid):
    """Memory only ``pid`` uses (Private_Clean + Private_Dirty of smaps_rollup), in MB: its
    RSS less the pages it still shares with the process it was forked from."""
    total = 0
    try:
        with open('/proc/%d/smaps_rollup' % pid) as handle:
            for line in handle:
                if line.startswith(('Private_Clean:', 'Private_Dirty:')):
                    total += int(line.split()[1])
    except OSError:
        return float('nan')
    return total / 1024.0


def _stat_fields(pid):
    """The fields of ``/proc/<pid>/stat`` after the command name (the state first: utime is
    11, stime 12, cutime 13, cstime 14, in clock ticks), or None once the process is gone."""
    try:
        with open('/proc/%s/stat' % pid) as handle:
            return handle.read().rsplit(')', 1)[1].split()
    except (OSError, IndexError):
        return None


def process_cpu_seconds(pid):
    """User + system CPU seconds of ``pid`` so far (0.0 once it is gone)."""
    fields = _stat_fields(pid)
    if fields is None:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def _is_rabbitmq(argv0):
    return os.path.basename(argv0) == 'beam.smp'


def _is_postgresql(argv0):
    # The postmaster runs as .../bin/postgres; its backends retitle themselves "postgres: ...".
    return os.path.basename(argv0) == 'postgres' or argv0.startswith('postgres:')


#: The servers whose CPU the build bench reports: name -> test of a process's first argument.
SERVERS = {'rabbitmq': _is_rabbitmq, 'postgresql': _is_postgresql}


def server_cpu_seconds(servers=None):
    """CPU seconds (user + system) each server of ``servers`` (default :data:`SERVERS`) used
    so far, from /proc: the CPU of its processes, plus that of the children its topmost
    processes reaped (a PostgreSQL backend that exits stays counted in its postmaster's).
    Servers shared with other users count their work too."""
    servers = SERVERS if servers is None else servers
    hertz = os.sysconf('SC_CLK_TCK')
    found = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % entry, 'rb') as handle:
                argv0 = handle.read().split(b'\0', 1)[0].decode(errors='replace')
        except OSError:
            continue
        fields = _stat_fields(entry)
        if fields is None:
            continue
        name = next((n for n, test in servers.items() if test(argv0)), None)
        if name is not None:
            found[int(entry)] = (name, fields)
    totals = dict.fromkeys(servers, 0.0)
    for name, fields in found.values():
        ticks = int(fields[11]) + int(fields[12])  # utime, stime
        parent = found.get(int(fields[1]))
        if parent is None or parent[0] != name:
            ticks += int(fields[13]) + int(fields[14])  # cutime, cstime: reaped children
        totals[name] += ticks / hertz
    return totals


def run_children(target, argses, timeout, on_ready=None):
    """Run ``target(*args, queue, start)`` in one spawned process per ``args``.

    Each child sets itself up, puts ``'ready'`` on the queue, waits for the ``start`` event
    (set once every child is ready, so they start together; ``on_ready()`` is called just
    before), then puts exactly one result, or ``'ERROR <traceback>'`` (raised here). Returns
    the results.
    """
    ctx = multiprocessing.get_context('spawn')
    queue, start = ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_owned, args=(os.getpid(), target) + tuple(args) +
                         (queue, start)) for args in argses]
    for proc in procs:
        proc.start()
    try:
        for expected in ('ready', 'result'):
            results = []
            for _ in procs:
                result = queue.get(timeout=timeout)
                if isinstance(result, str) and result.startswith('ERROR'):
                    raise RuntimeError('bench client failed: %s' % result)
                results.append(result)
            if expected == 'ready' and on_ready is not None:
                on_ready()
            start.set()
        return results
    finally:
        for proc in procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()


def _owned(parent_pid, target, *args):
    """A spawned client's entry: die with the bench, then ``target(*args)``."""
    die_with_parent(parent_pid)
    target(*args)


def child_main(queue, start, work, *args):
    """Body of a spawned client: ``work(*args, ready)`` where ``ready()`` reports ready and
    waits for the start; its return value (or the traceback) goes on ``queue``."""
    import traceback

    def ready():
        queue.put('ready')
        start.wait()
    try:
        queue.put(work(*args, ready))
    except BaseException:
        queue.put('ERROR ' + traceback.format_exc())


def client_setup(conf_file):
    """In a spawned client: parse the bench config, set up RPC and objects; returns CONF."""
    import warnings
    warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
    from minisched import monkey_patch
    monkey_patch.embed()  # the client keeps native threads, whatever the services run
    from minisched import config
    from minisched.db import engines
    from minisched import objects
    config.parse_args(['minisched-bench', '--config-file', conf_file])
    objects.register_all()
    engines.configure(config.CONF)
    return config.CONF
