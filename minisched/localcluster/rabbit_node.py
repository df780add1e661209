"""A RabbitMQ node of our own, started from the RabbitMQ installed on this machine.

Nothing here touches the machine's broker: the node has its own name, ports, data and log
directory, configuration and plugins file, and runs as the calling user from the package's
scripts (``/usr/lib/rabbitmq/bin``; ``/usr/sbin/rabbitmq*`` switch to the ``rabbitmq`` user,
whose home holds the machine broker's cookie). Alone (``tests/functional/private_broker.py``)
a node uses the machine's epmd (Erlang's port mapper, ``4369``) and a cookie of its own;
:mod:`minisched.localcluster.rabbit_cluster` joins several, with an epmd and a cookie of theirs, on
loopback or inside a network namespace (``netns``: every command then runs under ``ip netns
exec``).

Who stops what: a node started with ``watchdog=True`` (the tests) is killed, and the paths
given removed, when the process that started it dies without ``close()`` (a shell reading a
pipe from us notices). Without one (``minisched-cluster up --detach``) the node outlives its
starter, which records its PID (see ``rabbit_cluster.stop_recorded``).
"""
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import time

#: Where the Debian/RPM packages keep RabbitMQ's own scripts, which run as the calling user.
PACKAGE_SCRIPTS = '/usr/lib/rabbitmq/bin'
#: Seconds a ``rabbitmqctl`` command may take (each one boots an Erlang VM: ~1 s here).
CTL_TIMEOUT = 60
LOG_TAIL_LINES = 40
#: What a node logs once its application runs and its listeners accept.
STARTED_LINE = 'Server startup complete'
#: Seconds :func:`running` waits for the command line of a process still in ``execve``.
EXEC_WAIT = 5.0
#: ``/proc/PID/stat`` flags: a kernel thread (whose command line is always empty), a process
#: on its way out (whose command line is gone with its memory).
_PF_KTHREAD = 0x00200000
_PF_EXITING = 0x00000004

#: A node's rabbitmq.conf: AMQP on one address, the whole log on its standard output.
_CONFIG = '''\
listeners.tcp.default = %(listen)s:%(port)d
log.file = false
log.console = true
log.console.level = info
log.console.use_colors = off
'''

_random = random.SystemRandom()


class BrokerError(Exception):
    """A node or cluster could not be started or controlled; the message says why."""


class Node:
    """One RabbitMQ node in ``directory``: ``start()``, ``kill()``, ``stop_app()``,
    ``start_app()``, ``close()``, and ``ctl(*args)`` for ``rabbitmqctl``.

    ``port`` (AMQP) and ``dist_port`` (Erlang distribution) are chosen free on loopback when
    not given. ``cookie_home`` is the directory whose ``.erlang.cookie`` the node and its
    ``rabbitmqctl`` share (default: ``directory``, with a new cookie); ``epmd_port`` an epmd of
    the caller's (default: the machine's); ``extra_config`` lines added to its rabbitmq.conf.
    """

    def __init__(self, directory, name='rabbit', port=None, dist_port=None, listen='127.0.0.1',
                 netns=None, epmd_port=None, cookie_home=None, extra_config='',
                 watchdog=True):
        self.directory = directory
        self.nodename = '%s@localhost' % name
        self.listen = listen
        self.netns = netns
        self.epmd_port = epmd_port
        self.cookie_home = cookie_home or directory
        self.extra_config = extra_config
        self.port = port
        self.dist_port = dist_port
        self.use_watchdog = watchdog
        #: What the watchdog removes besides stopping the node (its whole directory, for a
        #: node thrown away with it).
        self.watchdog_paths = ()
        self._server = None    # the rabbitmq-server process (a Popen) while it runs
        self._watchdog = None
        self._prepared = False
        self._log_offset = 0   # where the output of the current start begins

    @property
    def log_path(self):
        """The node's output, all its starts appended (None before it has a directory)."""
        return os.path.join(self.directory, 'server.log') if self.directory else None

    # -- life cycle -------------------------------------------------------------------------

    def start(self, timeout=60):
        """Start the node (again, after ``kill()``, with the same data); return once it
        logged :data:`STARTED_LINE`. Raises BrokerError (see ``log_tail()``)."""
        self.launch()
        self.wait_started(timeout)

    def launch(self):
        """Start ``rabbitmq-server`` without waiting for it (see ``wait_started``)."""
        assert self._server is None or self._server.poll() is not None, 'already running'
        if not self._prepared:
            self.prepare()
        self._log_offset = _size(self.log_path)
        with open(self.log_path, 'ab') as log:
            self._server = subprocess.Popen(
                self._command([_script('rabbitmq-server')]), env=self.environ(),
                cwd=self.directory, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)
        if self.use_watchdog:
            self._stop_watchdog()
            self._watchdog = start_watchdog([self._server.pid], self.watchdog_paths)

    def wait_started(self, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            if self._server.poll() is not None:
                raise BrokerError('%s exited (status %d) before it started'
                                  % (self.nodename, self._server.returncode))
            if STARTED_LINE in self._log_since(self._log_offset):
                break
            if time.monotonic() > deadline:
                raise BrokerError('%s did not start within %s s' % (self.nodename, timeout))
            time.sleep(0.2)
        if self.netns is None:  # from here the port is reachable: check it answers
            wait_for_port(self.listen, self.port, deadline, self._server)

    def prepare(self):
        """Create the directory and write the node's files (ports chosen if not given)."""
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        if self.port is None:
            self.port = free_port()
        if self.dist_port is None:
            self.dist_port = free_port(exclude=(self.port,))
        files = {'rabbitmq-env.conf': '',
                 'rabbitmq.conf': _CONFIG % {'listen': self.listen, 'port': self.port} +
                 self.extra_config,
                 'enabled_plugins': '[].\n'}  # no management plugin, hence no port of its own
        if self.cookie_home == self.directory:
            files['.erlang.cookie'] = secrets.token_hex(16)
        for name, text in files.items():
            write_private(self.path(name), text)
        self._prepared = True

    def kill(self):
        """SIGKILL the node's Erlang VM (a crash: no clean stop) and reap its script.

        Returns the VM's PID. The data stays; ``start()`` brings the node back.
        """
        beam = self.beam_pid()
        if beam is None:
            raise BrokerError('%s has no running Erlang VM' % self.nodename)
        send_signal(beam, signal.SIGKILL)
        try:
            self._server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            kill_group(self._server.pid)
            self._server.wait()
        return beam

    def stop_app(self):
        """Stop the RabbitMQ application: connections closed, port refusing, data kept."""
        self.ctl('stop_app')

    def start_app(self, timeout=60):
        """Start the application again; return once it runs and (on loopback) accepts."""
        deadline = time.monotonic() + timeout
        self.ctl('start_app', timeout=timeout)
        if self.netns is None:
            wait_for_port(self.listen, self.port, deadline, self._server)

    def close(self):
        """Kill the node's process group and reap it. Idempotent; the directory stays."""
        self._stop_watchdog()
        server, self._server = self._server, None
        if server is not None:
            kill_group(server.pid)
            server.wait()

    # -- state ------------------------------------------------------------------------------

    @property
    def pid(self):
        """PID of the running ``rabbitmq-server`` script (its process group), or None."""
        if self._server is None or self._server.poll() is not None:
            return None
        return self._server.pid

    def beam_pid(self):
        """PID of the node's Erlang VM (from its PID file), or None when it is not running."""
        try:
            with open(self.path('rabbitmq.pid')) as stream:
                pid = int(stream.read().strip() or 0)
        except (OSError, ValueError):
            return None
        return pid if pid and running(pid, 'beam') else None

    def url(self, user='guest', password='guest', vhost=''):
        return 'rabbit://%s:%s@%s:%d/%s' % (user, password, self.listen, self.port, vhost)

    # -- control ----------------------------------------------------------------------------

    def ctl(self, *args, timeout=CTL_TIMEOUT):
        """Run ``rabbitmqctl -n <node> -q <args>``; return its stdout.

        Raises BrokerError with its stderr when it fails or takes more than ``timeout`` s.
        """
        command = self._command([_script('rabbitmqctl'), '-n', self.nodename, '-q'] +
                                [str(arg) for arg in args])
        popen = subprocess.Popen(command, env=self.environ(), stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
        try:
            stdout, stderr = popen.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(popen.pid)
            popen.communicate()
            raise BrokerError('rabbitmqctl %s on %s: no answer within %s s'
                              % (' '.join(map(str, args)), self.nodename, timeout)) from None
        if popen.returncode:
            raise BrokerError('rabbitmqctl %s on %s: exit status %d: %s' % (
                ' '.join(map(str, args)), self.nodename, popen.returncode,
                (stderr or stdout).strip()))
        return stdout

    def log_tail(self, lines=LOG_TAIL_LINES):
        """The last ``lines`` lines of the node's output ('' when there is none)."""
        if not self.log_path or not os.path.exists(self.log_path):
            return ''
        with open(self.log_path, errors='replace') as log:
            return ''.join(log.readlines()[-lines:])

    # -- internals --------------------------------------------------------------------------

    def path(self, name):
        return os.path.join(self.directory, name)

    def environ(self):
        """The environment of the node and of its ``rabbitmqctl``: nothing shared with the
        machine's broker (its rabbitmq-env.conf, rabbitmq.conf, plugins and cookie)."""
        environ = dict(
            os.environ,
            HOME=self.cookie_home,  # its .erlang.cookie is the node's and rabbitmqctl's
            RABBITMQ_NODENAME=self.nodename,
            RABBITMQ_CONF_ENV_FILE=self.path('rabbitmq-env.conf'),
            RABBITMQ_CONFIG_FILE=self.path('rabbitmq.conf'),
            RABBITMQ_ADVANCED_CONFIG_FILE=self.path('advanced.config'),
            RABBITMQ_ENABLED_PLUGINS_FILE=self.path('enabled_plugins'),
            RABBITMQ_MNESIA_BASE=self.path('mnesia'),
            RABBITMQ_LOG_BASE=self.path('log'),
            RABBITMQ_PID_FILE=self.path('rabbitmq.pid'),
            RABBITMQ_DIST_PORT=str(self.dist_port),
            RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS='-kernel inet_dist_use_interface {127,0,0,1}',
        )
        if self.epmd_port is not None:
            environ['ERL_EPMD_PORT'] = str(self.epmd_port)
        return environ

    def _command(self, argv):
        return netns_command(self.netns, argv)

    def _log_since(self, offset):
        try:
            with open(self.log_path, 'rb') as log:
                log.seek(offset)
                return log.read().decode('utf-8', 'replace')
        except OSError:
            return ''

    def _stop_watchdog(self):
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            stop_watchdog(watchdog)


# -- helpers ---------------------------------------------------------------------------------

def netns_command(netns, argv):
    """``argv`` run inside network namespace ``netns`` (``ip netns exec``), or as is."""
    return ['ip', 'netns', 'exec', netns] + list(argv) if netns else list(argv)


def write_private(path, text):
    """Write ``text`` to ``path``, readable by its owner only (Erlang refuses a cookie that
    others can read; the configs hold the cluster's password)."""
    if os.path.exists(path):
        os.chmod(path, 0o600)
    with open(path, 'w', opener=lambda p, flags: os.open(p, flags, 0o600)) as stream:
        stream.write(text)
    if path.endswith('.erlang.cookie'):
        os.chmod(path, 0o400)


def free_port(exclude=()):
    """A port of 127.0.0.1 that nobody listens on, below the kernel's ephemeral range.

    Below it, no client connection of this machine is given the port as its own while a node
    is down, so the node can always listen on it again.
    """
    with open('/proc/sys/net/ipv4/ip_local_port_range') as stream:
        ephemeral_low = int(stream.read().split()[0])
    for _ in range(100):
        port = _random.randrange(1024, ephemeral_low)
        if port not in exclude and _bindable(port):
            return port
    raise BrokerError('no free port below %d' % ephemeral_low)


def wait_for_port(host, port, deadline, process=None):
    """Return once ``host:port`` accepts a TCP connection; BrokerError at ``deadline`` or
    when ``process`` has exited."""
    while not _accepts(host, port):
        if process is not None and process.poll() is not None:
            raise BrokerError('rabbitmq-server exited (status %d), port %d closed'
                              % (process.returncode, port))
        if time.monotonic() > deadline:
            raise BrokerError('port %d still refused connections after the timeout' % port)
        time.sleep(0.1)


def start_watchdog(pgids, paths=()):
    """A shell that stops process groups ``pgids`` and removes ``paths`` once its stdin is
    closed: when the process that started it dies without stopping it (SIGKILL, a crash).

    SIGTERM first (``rabbitmq-server`` turns it into a clean stop), SIGKILL to whatever is
    left of the groups 10 s later.
    """
    groups = ' '.join(str(int(pgid)) for pgid in pgids)
    # "kill -SIG -PGID", without "--": dash, the usual /bin/sh, refuses "kill -SIG -- -PGID".
    script = ('read _; for g in %s; do kill -TERM -$g; done; sleep 10; '
              'for g in %s; do kill -KILL -$g; done; rm -rf "$@"' % (groups, groups))
    return subprocess.Popen(['sh', '-c', script, 'watchdog'] + list(paths),
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def stop_watchdog(watchdog):
    """Disarm a watchdog of ``start_watchdog`` (its groups and paths are left alone)."""
    watchdog.kill()
    watchdog.wait()
    watchdog.stdin.close()


def _script(name):
    """The command running RabbitMQ's ``name`` script as the calling user."""
    packaged = os.path.join(PACKAGE_SCRIPTS, name)
    path = packaged if os.access(packaged, os.X_OK) else shutil.which(name)
    if path is None:
        raise BrokerError('%s not found (neither in %s nor on PATH)' % (name, PACKAGE_SCRIPTS))
    return path


def _bindable(port):
    with socket.socket() as sock:
        try:
            sock.bind(('127.0.0.1', port))
        except OSError:
            return False
    return True


def _accepts(host, port):
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False


def running(pid, program):
    """True while ``pid`` runs and its command line names ``program``.

    A process that is still inside ``execve`` has an empty command line: the kernel resumes
    the parent of a ``vfork`` (which ``subprocess.Popen`` uses) once the new program's memory
    is mapped, before its arguments are set up. Its command line is read again until it is
    there (up to :data:`EXEC_WAIT` s), rather than taken for another program's.
    """
    deadline = time.monotonic() + EXEC_WAIT
    while True:
        try:
            with open('/proc/%d/cmdline' % pid, 'rb') as stream:
                cmdline = stream.read()
            with open('/proc/%d/stat' % pid) as stream:
                fields = stream.read().rsplit(')', 1)[1].split()
        except (OSError, IndexError):
            return False
        state, flags = fields[0], int(fields[6])
        if state == 'Z' or flags & (_PF_KTHREAD | _PF_EXITING):
            return False
        if cmdline or time.monotonic() >= deadline:
            return program.encode() in cmdline
        time.sleep(0.005)


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def send_signal(pid, sig):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
