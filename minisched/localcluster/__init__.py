"""A local minisched cluster in one command: config, databases, cells, services, a demo.

With a reachable RabbitMQ (probed with pika) the conductor, the scheduler and N fake
computes of mixed sizes run as real child processes on it; without one, everything runs in
this one process on oslo.messaging's in-memory ``fake://`` transport. The databases are the
embedded SQLite default under the state directory in both cases.

With ``rabbit_nodes`` (``--rabbit-nodes 3``) the cluster brings its own RabbitMQ: that many
nodes joined into one cluster under ``<state dir>/rabbit``
(``minisched.localcluster.rabbit_cluster``), and every service gets a transport URL naming all
of them with quorum queues on (the settings in :data:`QUORUM_OPTIONS`, those the README
describes). ``down`` stops the nodes and removes
their data.

On a broker of the user's the cluster runs on a vhost of its own (``minisched-cluster`` makes
it, see :mod:`minisched.localcluster.broker`, and records it in ``vhost.json`` for ``down``).
The state directory keeps the config, databases, logs and those records between runs:
``purge`` removes it (only a directory holding such state) and ``write_env_file`` writes what
to source for ``minisched-manage``; what the cluster reads from and writes to its databases
is in :mod:`minisched.localcluster.records`.

The config holds the broker's password, so the state directory is made 0700 and every file
written into it 0600, from their creation (``os.open`` with the mode: no moment when another
user could read them). An existing directory or file with looser permissions is tightened,
with a one-line note.
"""
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

from minisched.messaging.bus_check import pika_parameters

#: (vcpus, memory_mb, local_gb) of the fake computes, cycled: mixed sizes. Memory binds
#: first at Placement's ratio of 1.0 (512 MB reserved); the first two computes hold six of the
#: demo's flavors in whatever order the weighers spread them.
COMPUTE_SIZES = ((4, 16384, 200), (8, 32768, 400), (16, 65536, 800))
#: Flavors the demo boots, cycled: (name, memory_mb, vcpus, root_gb).
DEMO_FLAVORS = (('m1.small', 2048, 1, 20), ('m1.medium', 4096, 2, 40), ('m1.large', 8192, 4, 80))
SERVICES_FILE = 'cluster.json'
#: The vhost the cluster made on the broker (deleted when it stops).
VHOST_FILE = 'vhost.json'
#: What to source for ``minisched-manage`` to reach the cluster.
ENV_FILE = 'minisched.env'
#: The operator's own configuration files (``*.conf``), read after the generated ones by
#: every service and command of the cluster; ``up`` makes the directory and never writes
#: into it (oslo.config's ``<project>.conf.d`` beside ``<project>.conf``).
CONF_DIR = 'minisched.conf.d'
#: SHA-256 of each file ``write_config`` wrote, to tell an operator's edit from its own.
GENERATED_FILE = 'generated.json'
#: Suffix of the copy ``up`` keeps of a generated file an operator edited.
EDITED_SUFFIX = '.edited'
#: Files that mark a directory as a cluster's state directory (which ``purge`` may remove).
STATE_MARKERS = ('minisched.conf', SERVICES_FILE, VHOST_FILE)
#: Where the cluster's own RabbitMQ nodes keep their data, under the state directory.
RABBIT_DIR = 'rabbit'
#: ``[oslo_messaging_rabbit]`` of a cluster with its own RabbitMQ nodes: topic, reply and
#: fanout queues replicated on every node (quorum queues), fanout through streams (which
#: need a consumer prefetch).
QUORUM_OPTIONS = (('rabbit_quorum_queue', 'true'), ('rabbit_transient_quorum_queue', 'true'),
                  ('rabbit_stream_fanout', 'true'), ('rabbit_qos_prefetch_count', '100'))
#: Permissions of the state directory and of the files written into it.
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
#: The embedded databases' files (``[database]`` and ``[api_database]`` defaults).
SQLITE_FILES = ('minisched.sqlite', 'minisched_api.sqlite')


class StateDirError(Exception):
    """The state directory cannot be used as asked; the message says why."""


def probe_rabbit(url, timeout=2.0):
    """True when an AMQP broker accepts a connection at ``url`` (a rabbit:// URL; with
    several hosts, when any of them does)."""
    import pika
    try:
        pika.BlockingConnection(pika_parameters(url, timeout)).close()
        return True
    except Exception:
        return False


class LocalCluster:
    """Files and processes of one local cluster under ``state_dir``."""

    def __init__(self, state_dir, computes=3, transport_url=None, out=None, rabbit_nodes=0,
                 placement=False):
        self.state_dir = os.path.abspath(state_dir)
        self.computes = computes
        self.transport_url = transport_url
        self.out = out or sys.stdout
        self.config_file = os.path.join(self.state_dir, 'minisched.conf')
        self.conf_dir = os.path.join(self.state_dir, CONF_DIR)
        self.procs = {}
        self.rabbit_nodes = rabbit_nodes
        self.rabbit = None  # the RabbitMQ cluster this command started, if any
        #: Run the real Placement service (``start_placement``) and use it.
        self.placement = placement
        self.placement_server = None  # the Placement this command started, if any

    def say(self, message):
        self.out.write(message + '\n')
        self.out.flush()

    # -- configuration --------------------------------------------------------------------

    def compute_names(self):
        return ['compute%d' % (i + 1) for i in range(self.computes)]

    def make_state_dir(self):
        """Create the state directory 0700 (its parents as usual), or tighten it."""
        os.makedirs(self.state_dir, mode=PRIVATE_DIR_MODE, exist_ok=True)
        mode = os.stat(self.state_dir).st_mode & 0o777
        if mode & ~PRIVATE_DIR_MODE:
            os.chmod(self.state_dir, PRIVATE_DIR_MODE)
            self._tightened(self.state_dir, mode, PRIVATE_DIR_MODE)

    def open_private(self, path, mode='w'):
        """``open(path, mode)`` for a file of the state directory, created 0600; an existing
        file readable by others is tightened before anything is written to it."""
        handle = open(path, mode, opener=_private_opener)
        try:
            current = os.fstat(handle.fileno()).st_mode & 0o777
            if current & ~PRIVATE_FILE_MODE:
                os.fchmod(handle.fileno(), PRIVATE_FILE_MODE)
                self._tightened(path, current, PRIVATE_FILE_MODE)
        except BaseException:
            handle.close()
            raise
        return handle

    def _tightened(self, path, old, new):
        self.say('Tightened the permissions of %s from %04o to %04o (the cluster config holds '
                 'the broker password).' % (path, old, new))

    def write_config(self, fake=False):
        """Write the shared config and one per compute. ``fake``: the in-memory transport,
        the computes' sizes in ``[fake_driver] host_sizes`` (all services run in this
        process) and their log in ``services.log``, apart from this command's output."""
        self.make_state_dir()
        os.makedirs(self.conf_dir, mode=PRIVATE_DIR_MODE, exist_ok=True)
        self._generated = self._read_generated()
        lines = [
            '# Written by minisched-cluster up, anew on every up: put lasting options in',
            '# %s/*.conf (read after this file, by every service).' % CONF_DIR,
            '[DEFAULT]',
            'state_path = %s' % self.state_dir,
            'transport_url = %s' % ('fake://' if fake else self.transport_url),
            'report_interval = 2',
            'service_down_time = 10',
            'periodic_fuzzy_delay = 0',
            'update_resources_interval = 10',
            'reserved_host_memory_mb = 512',
            '[conductor]',
            'workers = 1',
            '[scheduler]',
            'workers = 1',
            'discover_hosts_in_cells_interval = -1',
        ]
        if self.rabbit_nodes and not fake:
            lines += ['[oslo_messaging_rabbit]'] + ['%s = %s' % item for item in QUORUM_OPTIONS]
        if self.placement_server is not None:
            from minisched.localcluster import placement
            lines += ['[placement]', 'enabled = true'] + [
                '%s = %s' % item for item in placement.client_options(self.placement_server.url)]
        else:
            lines += ['[placement]', 'enabled = false']
        if fake:
            lines.insert(lines.index('[DEFAULT]') + 1,
                         'log_file = %s' % os.path.join(self.state_dir, 'services.log'))
            sizes = ','.join('%s:%d/%d/%d' % (name, *size) for name, size in zip(
                self.compute_names(), _cycle(COMPUTE_SIZES, self.computes)))
            lines += ['[fake_driver]', 'host_sizes = %s' % sizes]
        self._write_generated(self.config_file, lines)
        for name, (vcpus, memory_mb, local_gb) in zip(self.compute_names(),
                                                      _cycle(COMPUTE_SIZES, self.computes)):
            self._write_generated(self.compute_config(name), [
                '[DEFAULT]', 'host = %s' % name, '[fake_driver]', 'vcpus = %d' % vcpus,
                'memory_mb = %d' % memory_mb, 'local_gb = %d' % local_gb])
        with self.open_private(os.path.join(self.state_dir, GENERATED_FILE)) as handle:
            json.dump(self._generated, handle, indent=1, sort_keys=True)
        layered = self.operator_files()
        if layered:
            self.say('Layering %d file(s) of %s over the generated config: %s.' % (
                len(layered), self.conf_dir, ', '.join(layered)))

    def operator_files(self):
        """The ``*.conf`` files of the operator's directory, in the order they are read."""
        try:
            return sorted(name for name in os.listdir(self.conf_dir) if name.endswith('.conf'))
        except FileNotFoundError:
            return []

    def config_args(self, *extra_files):
        """``--config-file`` the generated config (and ``extra_files``), then
        ``--config-dir`` the operator's directory: its files win."""
        args = ['--config-file', self.config_file]
        for path in extra_files:
            args += ['--config-file', path]
        if os.path.isdir(self.conf_dir):
            args += ['--config-dir', self.conf_dir]
        return args

    def _read_generated(self):
        try:
            with open(os.path.join(self.state_dir, GENERATED_FILE)) as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return {}

    def _write_generated(self, path, lines):
        """Write a generated file; one that changed since this command last wrote it (an
        operator's edit) is kept as ``<file>.edited`` first, and the change is said."""
        name = os.path.basename(path)
        recorded = self._generated.get(name)
        try:
            with open(path, 'rb') as handle:
                current = handle.read()
        except FileNotFoundError:
            current = None
        text = '\n'.join(lines) + '\n'
        if (current is not None and recorded is not None
                and hashlib.sha256(current).hexdigest() != recorded):
            kept = path + EDITED_SUFFIX
            with self.open_private(kept, 'wb') as handle:
                handle.write(current)
            added = [line.strip() for line in current.decode('utf-8', 'replace').splitlines()
                     if line.strip() and not line.startswith('#')
                     and line.strip() not in lines]
            self.say('Replaced %s, which was edited since the last up (%s); the edited copy '
                     'is %s. Options that last go in %s/*.conf.' % (
                         name, ', '.join(added[:4]) + (', ...' if len(added) > 4 else '')
                         if added else 'lines removed', kept, self.conf_dir))
        self._write(path, lines)
        self._generated[name] = hashlib.sha256(text.encode('utf-8')).hexdigest()

    def compute_config(self, name):
        return os.path.join(self.state_dir, '%s.conf' % name)

    def _write(self, path, lines):
        with self.open_private(path) as handle:
            handle.write('\n'.join(lines) + '\n')

    def manage(self, *args, check=True):
        """Run ``minisched-manage`` against this cluster's config; returns its output."""
        cmd = [sys.executable, '-m', 'minisched.cmd.manage'] + self.config_args()
        result = subprocess.run(cmd + list(args), capture_output=True, text=True)
        if check and result.returncode != 0:
            raise RuntimeError('minisched-manage %s failed (%d): %s' % (
                ' '.join(args), result.returncode, result.stderr.strip()[-2000:]))
        return result.stdout

    def sync_databases(self):
        """Create (0600) and sync the API and cell databases."""
        self.say('Syncing the API and cell databases...')
        # Created 0600 before SQLite opens them (its journals take the same mode): the API
        # database holds the cells' transport URLs, broker password included.
        for name in SQLITE_FILES:
            self.open_private(os.path.join(self.state_dir, name), 'a').close()
        self.manage('api_db', 'sync')
        self.manage('db', 'sync')

    def map_cells(self):
        """Map cell0 and cell1 (once ``records.align_cells`` pointed existing ones at this
        run, so that the setup finds cell1 by its database)."""
        self.manage('cell', 'simple_cell_setup')

    # -- the state directory as a whole ------------------------------------------------------

    def has_state(self):
        """True when an earlier run left a config (hence databases) here."""
        return os.path.exists(self.config_file)

    def purge(self):
        """Remove the state directory (its RabbitMQ nodes and vhost first); True if there was
        one. Refuses a non-empty directory that holds no cluster state: it is not ours."""
        if not os.path.isdir(self.state_dir) or not os.listdir(self.state_dir):
            return False
        if not any(os.path.exists(os.path.join(self.state_dir, name))
                   for name in STATE_MARKERS):
            raise StateDirError('%s is not empty and holds no minisched-cluster state (no %s): '
                                'not removing it; choose another --state-dir'
                                % (self.state_dir, ' or '.join(STATE_MARKERS)))
        from minisched.localcluster import rabbit_cluster
        rabbit_cluster.stop_recorded(self.rabbit_dir)
        self.delete_vhost()
        shutil.rmtree(self.state_dir)
        return True

    def write_env_file(self):
        """Write ``minisched.env``: source it and ``minisched-manage`` reaches this cluster."""
        path = os.path.join(self.state_dir, ENV_FILE)
        self._write(path, [
            '# Source this file: minisched-manage then uses the cluster under %s.'
            % self.state_dir,
            'export MINISCHED_CONFIG_FILE=%s' % shlex.quote(self.config_file)])
        return path

    def record_vhost(self, vhost):
        self.make_state_dir()
        with self.open_private(os.path.join(self.state_dir, VHOST_FILE)) as handle:
            json.dump({'vhost': vhost, 'transport_url': _without_password(
                self.transport_url or '')}, handle)

    def recorded_vhost(self):
        try:
            with open(os.path.join(self.state_dir, VHOST_FILE)) as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return None

    def delete_vhost(self):
        """Delete the vhost this cluster made (if any); returns its name."""
        from minisched.localcluster import broker
        record = self.recorded_vhost()
        if not record:
            return None
        command = broker.rabbitmqctl_for(record['transport_url'] or 'rabbit://127.0.0.1/')
        if command is not None:
            broker.delete_vhost(command, record['vhost'], check=False)
        os.unlink(os.path.join(self.state_dir, VHOST_FILE))
        return record['vhost']

    # -- its own RabbitMQ -----------------------------------------------------------------

    @property
    def rabbit_dir(self):
        return os.path.join(self.state_dir, RABBIT_DIR)

    def start_rabbit(self, detach=False):
        """Start ``rabbit_nodes`` RabbitMQ nodes joined into a cluster; the services' transport
        URL names them all. ``detach``: the nodes outlive this command (``down`` stops them);
        otherwise they die with it."""
        from minisched.localcluster import rabbit_cluster
        if self.has_rabbit():
            raise RuntimeError('RabbitMQ nodes of an earlier cluster are recorded in %s: run '
                               '"minisched-cluster --state-dir %s down" first'
                               % (self.rabbit_dir, self.state_dir))
        self.make_state_dir()
        self.say('Starting a %d-node RabbitMQ cluster under %s...' % (self.rabbit_nodes,
                                                                      self.rabbit_dir))
        self.rabbit = rabbit_cluster.Cluster(self.rabbit_dir, size=self.rabbit_nodes,
                                             watchdog=not detach)
        try:
            self.rabbit.start()
        except (rabbit_cluster.BrokerError, OSError) as exc:
            tails = self.rabbit.log_tails(10)
            self.rabbit.close()
            self.rabbit = None
            raise RuntimeError('the RabbitMQ cluster did not start: %s\n%s' % (exc, tails))
        self.transport_url = self.rabbit.transport_url
        for node in self.rabbit.nodes:
            self.say('  %s: AMQP on 127.0.0.1:%d' % (node.nodename, node.port))

    def stop_rabbit(self):
        """Stop this cluster's RabbitMQ nodes (started here or recorded by a detached ``up``)
        and remove their data; returns how many were running."""
        from minisched.localcluster import rabbit_cluster
        if self.rabbit is not None:
            running = sum(1 for node in self.rabbit.nodes if node.pid)
            self.rabbit.close()
            self.rabbit = None
            return running
        return rabbit_cluster.stop_recorded(self.rabbit_dir)

    def has_rabbit(self):
        """True when RabbitMQ nodes of this cluster are recorded (running or not)."""
        from minisched.localcluster import rabbit_cluster
        return bool(rabbit_cluster.recorded_status(self.rabbit_dir))

    def rabbit_status(self):
        """Lines describing the cluster's RabbitMQ nodes ([] when it has none)."""
        from minisched.localcluster import rabbit_cluster
        nodes = rabbit_cluster.recorded_status(self.rabbit_dir)
        if not nodes:
            return []
        lines = ['RabbitMQ nodes (%s):' % self.rabbit_dir]
        lines += ['  %-20s 127.0.0.1:%-6d %s' % node for node in nodes]
        if any(state == 'running' for _name, _port, state in nodes):
            members = rabbit_cluster.Cluster.load(self.rabbit_dir).running_nodes()
            lines.append('  running cluster members: %s' % (', '.join(members) or 'none'))
        return lines

    # -- its own Placement ------------------------------------------------------------------

    def start_placement(self):
        """Start the cluster's Placement (its SQLite database under the state directory, a
        free loopback port) before the config is written: ``[placement]`` names its URL."""
        from minisched.localcluster import placement
        self.make_state_dir()
        server = placement.PlacementServer(self.state_dir, opener=self.open_private)
        self.open_private(os.path.join(self.state_dir, placement.SQLITE_FILE), 'a').close()
        server.write_config()
        self.say('Syncing the Placement database and starting Placement (uWSGI)...')
        try:
            server.db_sync()
            server.start()
        except placement.PlacementError as exc:
            raise RuntimeError('%s; or run the cluster without Placement: --no-placement'
                               % exc)
        self.placement_server = server
        self.procs['placement'] = server.proc
        self._save_pids()
        self.say('  Placement: %s' % server.url)

    def stop_placement(self):
        """Stop the Placement this command started (``stop_processes`` stops it too)."""
        server, self.placement_server = self.placement_server, None
        if server is not None:
            self.procs.pop('placement', None)
            server.stop()

    # -- processes ------------------------------------------------------------------------

    def _spawn(self, name, binary, extra_config=None):
        log = self.open_private(os.path.join(self.state_dir, '%s.log' % name), 'ab')
        cmd = [sys.executable, '-m', 'minisched.cmd.%s' % binary]
        cmd += self.config_args(*([extra_config] if extra_config else []))
        self.procs[name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)

    def start_processes(self, timeout=90):
        """Spawn the services, the computes once the conductor's record is up: a compute
        pings the conductor as it starts and waits 10 s for each unanswered ping (Nova's
        ``wait_until_ready``), and a ping sent before the conductor declared its queue is
        lost. Each PID is saved as soon as it runs, so that ``down`` stops whatever an
        interrupted ``up`` had started."""
        self._spawn('conductor', 'conductor')
        self._spawn('scheduler', 'scheduler')
        self._save_pids()
        self.wait_until_up(timeout, names=['conductor'], report=False)
        for name in self.compute_names():
            self._spawn(name, 'compute', self.compute_config(name))
            self._save_pids()

    def _save_pids(self, pids=None):
        pids = dict(pids or {name: proc.pid for name, proc in self.procs.items()})
        if 'placement' in self.procs:
            pids['placement'] = self.procs['placement'].pid
        with self.open_private(os.path.join(self.state_dir, SERVICES_FILE)) as handle:
            json.dump(pids, handle)

    def record_in_process(self):
        """Record this process as every service's (they run in it on fake://), so that
        ``status`` and ``down`` from another shell see them."""
        names = ['conductor', 'scheduler'] + self.compute_names()
        self._save_pids({name: os.getpid() for name in names})

    def wait_until_up(self, timeout=90, names=None, report=True):
        """Poll the service records until ``names`` (default: every service) are up,
        printing which are up and which wait (``report``)."""
        expected = names or ['conductor', 'scheduler'] + self.compute_names()
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            self._check_alive()
            up = self._up_services()
            status = ', '.join('%s %s' % (name, 'up' if name in up else 'waiting')
                               for name in expected)
            if report and status != last:
                self.say('  services: %s' % status)
                last = status
            if all(name in up for name in expected):
                return
            time.sleep(0.5 if report else 0.2)
        raise RuntimeError('%s not up after %d s; logs are in %s' % (
            'services' if names is None else ', '.join(names), timeout, self.state_dir))

    def _check_alive(self):
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise RuntimeError('%s exited with status %s; see %s' % (
                    name, proc.returncode, os.path.join(self.state_dir, name + '.log')))

    def _up_services(self):
        from minisched.localcluster import records
        return {records.service_name(svc)
                for svc, is_up in records.services() if is_up}

    def service_rows(self):
        """See :func:`minisched.localcluster.records.service_rows` (with this cluster's
        recorded PIDs)."""
        from minisched.localcluster import records
        return records.service_rows(self.saved_pids(), _alive)

    def retire_lost_instances(self):
        """See :func:`minisched.localcluster.records.retire_lost_instances`."""
        from minisched.localcluster import records
        return records.retire_lost_instances()

    def stop_processes(self, pids=None):
        pids = pids or {name: proc.pid for name, proc in self.procs.items()}
        for name in sorted(pids, key=lambda n: n.startswith('compute'), reverse=True):
            try:
                os.kill(pids[name], signal.SIGTERM)
            except ProcessLookupError:
                continue
        deadline = time.monotonic() + 15
        for name, pid in pids.items():
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
        path = os.path.join(self.state_dir, SERVICES_FILE)
        if os.path.exists(path):
            os.unlink(path)

    def forget_pids(self):
        path = os.path.join(self.state_dir, SERVICES_FILE)
        if os.path.exists(path):
            os.unlink(path)

    def running_services(self):
        """``{name: pid}`` of the services a detached ``up`` recorded that still run."""
        return {name: pid for name, pid in self.saved_pids().items() if _alive(pid)}

    def saved_pids(self):
        path = os.path.join(self.state_dir, SERVICES_FILE)
        if not os.path.exists(path):
            return {}
        with open(path) as handle:
            return json.load(handle)


def _without_password(url):
    return re.sub(r'(//|,)([^:@/,]*):[^@/,]*@', r'\1\2@', url)


def _private_opener(path, flags):
    return os.open(path, flags, PRIVATE_FILE_MODE)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        waited, _status = os.waitpid(pid, os.WNOHANG)
        return waited == 0
    except ChildProcessError:
        return True


def _cycle(items, count):
    return [items[i % len(items)] for i in range(count)]
