"""Real minisched processes against the real RabbitMQ and a real database, for functional tests.

``Cluster`` writes the config files of one deployment into a directory, creates both schemas
in its database and starts the console scripts as processes (one log file each), stopping them
with SIGTERM, then SIGKILL, at the end. Each cluster has its own ``control_exchange``
(``minisched-test-<uuid hex>``).

Isolation on the broker: oslo.messaging names a topic queue after the topic alone
(``conductor``, ``compute``, ``compute.<host>``...), whatever the control exchange, so every
cluster in one vhost consumes from the same queues: two running at once take each other's
messages, and a message left in a queue reaches the next cluster. So each test session gets a
vhost of its own (made with ``rabbitmqctl``; without it a warning says that sessions running at
once on that broker may interfere), and each cluster deletes its queues when it stops.

Environment:

``MINISCHED_TEST_TRANSPORT_URL``
    Broker of the services (default ``rabbit://guest:guest@127.0.0.1:5672/``).
``MINISCHED_TEST_RABBITMQCTL``
    Command running rabbitmqctl for that broker, e.g. ``docker exec rabbitmq rabbitmqctl``
    (default: ``rabbitmqctl`` when the broker is on this machine; empty: no vhost per session).
``MINISCHED_TEST_DB_URL``
    Admin URL of the database server used when a test does not choose a backend, e.g.
    ``postgresql+psycopg2://postgres@127.0.0.1:5432/test``; unset or ``sqlite`` means SQLite.
``CI=true``
    An unreachable broker or database fails the test instead of skipping it.
"""
import configparser
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import uuid
import warnings

import pika
import pytest
import sqlalchemy as sa
from sqlalchemy import pool

from minisched.db import migration
from minisched import localcluster
from minisched import monkey_patch

TRANSPORT_URL = (os.environ.get('MINISCHED_TEST_TRANSPORT_URL')
                 or 'rabbit://guest:guest@127.0.0.1:5672/')
DB_URL = os.environ.get('MINISCHED_TEST_DB_URL') or 'sqlite'

#: Seconds a service gets to become ready, and to exit after SIGTERM before SIGKILL.
START_TIMEOUT = 30
STOP_TIMEOUT = 15
LOG_TAIL_LINES = 40

#: ``[oslo_messaging_rabbit]`` of a cluster on quorum queues, as ``minisched-cluster
#: --rabbit-nodes`` writes it, with quick reconnection (1 to 2 s between attempts).
QUORUM_RABBIT = dict(localcluster.QUORUM_OPTIONS, rabbit_retry_interval=1,
                     rabbit_retry_backoff=1, rabbit_interval_max=2)


def unavailable(message):
    """Skip the test with a loud ``message``, or fail it when ``CI=true``."""
    message = '*** %s ***' % message
    if os.environ.get('CI', '').lower() == 'true':
        pytest.fail(message)
    pytest.skip(message)


def wait_for(predicate, timeout=30, interval=0.2, message=None):
    """Call ``predicate`` until it returns something truthy, and return that.

    Raises AssertionError after ``timeout`` seconds, naming ``message`` (default: the
    predicate) and the last value it returned.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError('timed out after %ss waiting for %s (last value: %r)'
                                 % (timeout, message or getattr(predicate, '__name__', '?'),
                                    value))
        time.sleep(interval)


# -- the broker -------------------------------------------------------------------------------

def _public(url):
    return re.sub(r'//[^@/]*@', '//', url)  # no credentials in reports


def pika_parameters(transport_url, timeout=5):
    """pika connection parameters for the first host of an oslo.messaging ``rabbit://`` URL."""
    url = urllib.parse.urlsplit(transport_url.split(',')[0])
    credentials = pika.PlainCredentials(urllib.parse.unquote(url.username or 'guest'),
                                        urllib.parse.unquote(url.password or 'guest'))
    return pika.ConnectionParameters(host=url.hostname or 'localhost', port=url.port or 5672,
                                     virtual_host=urllib.parse.unquote(url.path[1:]) or '/',
                                     credentials=credentials, connection_attempts=1,
                                     socket_timeout=timeout, blocked_connection_timeout=timeout)


def all_pika_parameters(transport_url, timeout=5):
    """pika connection parameters for every host of a (multi-host) ``rabbit://`` URL: a
    ``BlockingConnection`` given the list tries them in turn, as oslo.messaging fails over."""
    head, _, rest = transport_url.partition('://')
    netlocs, slash, path = rest.partition('/')
    return [pika_parameters('%s://%s%s%s' % (head, netloc, slash, path), timeout)
            for netloc in netlocs.split(',')]


def check_rabbit(transport_url):
    """Skip (or, under CI, fail) unless a broker answers at ``transport_url``."""
    try:
        pika.BlockingConnection(pika_parameters(transport_url)).close()
    except Exception as exc:  # pika raises many unrelated classes for "not there"
        unavailable('RabbitMQ NOT AVAILABLE at %s (set MINISCHED_TEST_TRANSPORT_URL): %r'
                    % (_public(transport_url), exc))


def _rabbitmqctl(transport_url):
    command = os.environ.get('MINISCHED_TEST_RABBITMQCTL')
    if command is not None:
        return shlex.split(command) or None
    url = urllib.parse.urlsplit(transport_url)
    local = url.hostname in ('127.0.0.1', 'localhost', '::1')
    if local and url.path in ('', '/') and shutil.which('rabbitmqctl'):
        return ['rabbitmqctl']
    return None


def vhosts():
    """The names of the local broker's vhosts (``rabbitmqctl list_vhosts``)."""
    out = subprocess.run(['rabbitmqctl', '-q', 'list_vhosts'], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    return {line.strip() for line in out.splitlines()}


def make_vhost(transport_url):
    """A new vhost on the broker: ``(its transport URL, delete it)``.

    Without a usable rabbitmqctl: ``(transport_url, no-op)`` and a warning.
    """
    command = _rabbitmqctl(transport_url)
    name = 'minisched-test-%s' % uuid.uuid4().hex
    url = urllib.parse.urlsplit(transport_url)
    run = lambda *args: subprocess.run(command + ['-q'] + list(args), capture_output=True,
                                       text=True, timeout=60, check=True)
    try:
        if command is None:
            raise OSError('no rabbitmqctl; see tests/functional/base.py')
        run('add_vhost', name)
        run('set_permissions', '-p', name, urllib.parse.unquote(url.username or 'guest'),
            '.*', '.*', '.*')
    except (OSError, subprocess.SubprocessError) as exc:
        if command is not None:
            subprocess.run(command + ['-q', 'delete_vhost', name], capture_output=True)
        warnings.warn('minisched functional tests share the vhost of %s: test sessions running '
                      'at the same time on this broker may take each other\'s messages (%s)'
                      % (_public(transport_url), getattr(exc, 'stderr', None) or exc))
        return transport_url, lambda: None
    return (urllib.parse.urlunsplit(url._replace(path='/' + urllib.parse.quote(name))),
            lambda: run('delete_vhost', name))


# -- processes --------------------------------------------------------------------------------

def tcp_peer_ports(pid):
    """Remote ports of the TCP connections process ``pid`` holds open (Linux /proc)."""
    inodes = set()
    for fd in os.listdir('/proc/%d/fd' % pid):
        try:
            target = os.readlink('/proc/%d/fd/%s' % (pid, fd))
        except OSError:
            continue  # closed meanwhile
        if target.startswith('socket:['):
            inodes.add(target[len('socket:['):-1])
    ports = set()
    for table in ('tcp', 'tcp6'):
        with open('/proc/%d/net/%s' % (pid, table)) as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                if fields[9] in inodes:
                    ports.add(int(fields[2].rsplit(':', 1)[1], 16))
    return ports


def script(name):
    """The console script installed beside this interpreter (same environment), else PATH's."""
    beside = os.path.join(os.path.dirname(sys.executable), name)
    return beside if os.path.exists(beside) else name


def manage_env():
    """The environment of the tests' ``minisched-manage`` processes: native threads, unless
    the test runs its processes on eventlet (``services_backend`` sets
    ``OS_MINISCHED_DISABLE_EVENTLET_PATCHING=0``).

    ``minisched-manage`` patches eventlet by default, as nova-manage does
    (tests/unit/test_monkey_patch.py holds it to that); its commands do the same on either
    backend. The patching costs about 0.35 s of CPU a run (1.1 vs 0.75 s for ``--help``), and
    a suite run starts some 300 of them on a CPU-bound machine.
    """
    return dict(os.environ, **{monkey_patch.ENV: os.environ.get(monkey_patch.ENV, '1')})


class Process:
    """One service started by a Cluster: its Popen, log file and RPC queues."""

    def __init__(self, name, binary, topic, host, popen, log_path, ready_count):
        self.name = name
        self.binary = binary
        self.queues = (topic, '%s.%s' % (topic, host))
        if binary == 'minisched-compute':  # its second RPC server (compute RPC 6.5)
            self.queues += ('compute-alt', 'compute-alt.%s' % host)
        self.popen = popen
        self.log_path = log_path
        self.ready_line = '%s ready' % binary
        self.ready_count = ready_count

    @property
    def pid(self):
        return self.popen.pid

    def log(self):
        with open(self.log_path, errors='replace') as f:
            return f.read()

    def tail(self, lines=LOG_TAIL_LINES):
        return '\n'.join(self.log().splitlines()[-lines:])

    def logged_ready(self):
        """Whether it logged "<binary> ready" once per worker."""
        return self.log().count(self.ready_line) >= self.ready_count


class Cluster:
    """One minisched deployment under ``workdir``; see the module docstring."""

    def __init__(self, workdir, transport_url, db_url, report_interval=1, service_down_time=7,
                 conf=None, own_vhost=False):
        """``conf`` ({section: {option: value}}) is merged into the shared config file.

        A service is up while ``created_at`` (then ``last_seen_up``) is at most
        ``service_down_time`` old, and its first state report comes 5 s after it starts
        (``INITIAL_REPORTING_DELAY``): keep ``service_down_time`` above that with a margin, or
        fresh services briefly look down (and a scheduler's ComputeFilter rejects them).
        ``own_vhost`` says that nothing else uses the vhost, so stopping may delete queues.
        """
        self.workdir = str(workdir)
        self.transport_url = transport_url
        self.db_url = db_url
        self.control_exchange = 'minisched-test-%s' % uuid.uuid4().hex
        self.report_interval = report_interval
        self.service_down_time = service_down_time
        self.own_vhost = own_vhost
        self.processes = {}  # name -> Process, in start order
        sections = {
            'DEFAULT': {'state_path': os.path.join(self.workdir, 'state'),
                        'transport_url': transport_url,
                        'control_exchange': self.control_exchange,
                        'report_interval': report_interval,
                        'service_down_time': service_down_time,
                        'periodic_fuzzy_delay': 0},
            'database': {'connection': db_url},
            'api_database': {'connection': db_url},  # both schemas fit in one database
            'conductor': {'workers': 1},
            # The path without Placement; the Placement tests (placement_helpers) say theirs.
            'placement': {'enabled': 'false'},
        }
        self.conf_file = self.write_conf('minisched', _merge(sections, conf))

    # -- files, database, commands ----------------------------------------------------

    def write_conf(self, name, sections):
        """Write ``<workdir>/<name>.conf`` from {section: {option: value}}; returns its path."""
        parser = configparser.ConfigParser(interpolation=None)
        for section, options in sections.items():
            if section != 'DEFAULT':
                parser.add_section(section)
            for option, value in options.items():
                parser.set(section, option, str(value))
        path = os.path.join(self.workdir, name + '.conf')
        with open(path, 'w') as f:
            parser.write(f)
        return path

    def sync_db(self):
        """Create both schemas: ``minisched-manage api_db sync`` and ``db sync``, in-process
        (two interpreters fewer per test)."""
        migration.db_sync(self.db_url, 'api')
        migration.db_sync(self.db_url, 'main')

    def query(self, sql, **params):
        """Rows (as dicts) of ``sql`` run on the cluster's database, read from the test."""
        engine = sa.create_engine(self.db_url, poolclass=pool.NullPool)
        try:
            with engine.connect() as conn:
                return [dict(row) for row in conn.execute(sa.text(sql), params).mappings()]
        finally:
            engine.dispose()

    def report_counts(self):
        """{(topic, host): report_count} of the services, read from the database (cheaper
        than a manage call); each state report bumps a service's count."""
        rows = self.query('SELECT topic, host, report_count FROM services WHERE deleted = 0')
        return {(row['topic'], row['host']): row['report_count'] for row in rows}

    def run_manage(self, *args, check=True, timeout=60):
        """Run ``minisched-manage --config-file <shared> *args``; returns the CompletedProcess.

        With ``check`` a non-zero exit raises AssertionError showing its output.
        """
        result = subprocess.run([script('minisched-manage'), '--config-file', self.conf_file] +
                                [str(a) for a in args], env=manage_env(),
                                capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError('minisched-manage %s exited %d:\n%s%s' % (
                ' '.join(map(str, args)), result.returncode, result.stdout, result.stderr))
        return result

    def services(self):
        """Rows of ``minisched-manage service list`` as {(binary, host): {column: value}}."""
        rows = _parse_table(self.run_manage('service', 'list').stdout)
        return {(row['binary'], row['host']): row for row in rows}

    # -- services -----------------------------------------------------------------------

    def start_conductor(self, workers=1, conf=None, wait=True):
        return self._start('conductor', 'minisched-conductor', 'conductor',
                           _merge({'conductor': {'workers': workers}}, conf), workers, wait)

    def start_scheduler(self, workers=2, conf=None, wait=True):
        return self._start('scheduler', 'minisched-scheduler', 'scheduler',
                           _merge({'scheduler': {'workers': workers}}, conf), workers, wait)

    def start_compute(self, host, vcpus=16, memory_mb=32768, local_gb=1024, conf=None,
                      wait=True):
        """Start a compute named ``host`` (also its process name) with fake-driver sizes."""
        sections = {'DEFAULT': {'host': host},
                    'fake_driver': {'vcpus': vcpus, 'memory_mb': memory_mb,
                                    'local_gb': local_gb}}
        return self._start(host, 'minisched-compute', 'compute', _merge(sections, conf), 1,
                           wait)

    def _start(self, name, binary, topic, sections, ready_count, wait):
        assert name not in self.processes, 'a process named %s was already started' % name
        conductor = self.processes.get('conductor')
        if binary == 'minisched-compute' and conductor:
            # A compute pings the conductor as it starts; a ping sent before the conductor
            # declared its queue is lost, and the compute waits out a 10 s RPC timeout. (A
            # conductor that exits, as tests of bad settings want, is not waited for.)
            wait_for(lambda: conductor.popen.poll() is not None or conductor.logged_ready(),
                     START_TIMEOUT, message='conductor to log %r' % conductor.ready_line)
        own_conf = self.write_conf(name, sections)
        host = sections.get('DEFAULT', {}).get('host') or socket.gethostname()
        log_path = os.path.join(self.workdir, name + '.log')
        with open(log_path, 'w') as log:
            # A session of its own, so that a stuck launcher is killed with its workers.
            popen = subprocess.Popen(self.command(name, [script(binary), '--config-file',
                                                         self.conf_file, '--config-file',
                                                         own_conf]),
                                     stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        self.processes[name] = Process(name, binary, topic, host, popen, log_path, ready_count)
        if wait:
            self.wait_ready(name)
        return self.processes[name]

    def command(self, name, argv):
        """The command line starting service ``name`` (a subclass may wrap it, e.g. to run it
        in a network namespace: ``tests/functional/netns.py``)."""
        return argv

    def wait_ready(self, *names, timeout=START_TIMEOUT):
        """Wait until each named service logged "<binary> ready" (once per worker)."""
        for name in names:
            process = self.processes[name]

            def ready():
                if process.popen.poll() is not None:
                    raise AssertionError('%s exited with %s before it was ready:\n%s' % (
                        name, process.popen.returncode, process.tail()))
                return process.logged_ready()
            wait_for(ready, timeout, message='%s to log %r' % (name, process.ready_line))

    def kill(self, name, sig=signal.SIGKILL):
        """Send ``sig`` to the service's main process; after SIGKILL, reap it."""
        process = self.processes[name]
        process.popen.send_signal(sig)
        if sig == signal.SIGKILL:
            process.popen.wait(timeout=STOP_TIMEOUT)

    def stop(self, name, timeout=STOP_TIMEOUT):
        """SIGTERM, then SIGKILL (of its session) after ``timeout``; returns the exit code."""
        return self._stop([self.processes[name]], timeout)[name]

    def stop_all(self, timeout=STOP_TIMEOUT):
        """Stop every service at once (each may take seconds to drain its RPC server)."""
        return self._stop(list(self.processes.values()), timeout)

    def kill_all(self):
        """Teardown: SIGKILL every service's session (forked workers with it) and reap it.

        A graceful stop waits out each RPC listener's poll, one after the other (up to 1 s
        each: ``minisched.messaging.incoming.POLL_CEILING_SECONDS``), seconds per test that
        say nothing once the test is over. Tests of a clean stop call :meth:`stop` or
        :meth:`stop_all` themselves; the messages a killed service leaves unacknowledged go
        with its queues (:meth:`cleanup_broker`)."""
        for process in self.processes.values():
            if process.popen.poll() is None:
                _killpg(process.pid)
        for process in self.processes.values():
            process.popen.wait(timeout=STOP_TIMEOUT)

    @staticmethod
    def _stop(processes, timeout):
        for process in processes:
            if process.popen.poll() is None:
                process.popen.terminate()
        deadline = time.monotonic() + timeout
        for process in processes:
            try:
                process.popen.wait(timeout=max(0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                # Not reaped yet, so the group id is still ours: kill forked workers too.
                # (Workers of a parent killed earlier exit on their own: oslo.service
                # children watch a pipe to their parent.)
                _killpg(process.pid)
                process.popen.wait(timeout=timeout)
        return {process.name: process.popen.returncode for process in processes}

    def cleanup_broker(self):
        """Delete this cluster's exchange and, in a vhost of its own, its services' queues.

        Quorum queues are deleted as classic ones are; with ``rabbit_stream_fanout`` each topic
        also has a ``<topic>_fanout`` stream, which outlives its consumers (deleting a queue
        that does not exist succeeds). Any node of a cluster URL will do.
        """
        connection = pika.BlockingConnection(all_pika_parameters(self.transport_url))
        try:
            channel = connection.channel()
            channel.exchange_delete(self.control_exchange)
            if self.own_vhost:
                queues = {q for p in self.processes.values() for q in p.queues}
                queues |= {'%s_fanout' % p.queues[0] for p in self.processes.values()}
                for queue in queues:
                    channel.queue_delete(queue)
        finally:
            connection.close()

    # -- logs ---------------------------------------------------------------------------

    def log(self, name):
        return self.processes[name].log()

    def log_tails(self, lines=LOG_TAIL_LINES):
        """The last ``lines`` of every service log, for failure reports."""
        return '\n'.join('----- %s (%s, exit %s): %s -----\n%s' % (
            p.name, p.binary, p.popen.poll(), p.log_path, p.tail(lines))
            for p in self.processes.values())


def _killpg(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _merge(base, extra):
    merged = {section: dict(options) for section, options in base.items()}
    for section, options in (extra or {}).items():
        merged.setdefault(section, {}).update(options)
    return merged


def _parse_table(text):
    """Rows of a ``print_table`` table as dicts keyed by snake_case headers."""
    lines = [line for line in text.splitlines() if line.startswith('|')]
    split = lambda line: [cell.strip() for cell in line.strip('|').split('|')]
    headers = [h.lower().replace(' ', '_') for h in split(lines[0])]
    return [dict(zip(headers, split(line))) for line in lines[1:]]
