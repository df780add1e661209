"""A private, throwaway RabbitMQ node that a test may stop and start again.

Why: the shared broker (``127.0.0.1:5672``) serves every test running at the same time, so a
test that needs "the broker is down for 20 s" cannot stop it. ``TcpProxy`` fakes an outage
for one cluster's connections; this module gives a real one: a node of its own (own name,
ports, Erlang cookie, database and logs in a temporary directory), started from the RabbitMQ
installed on this machine::

    broker = PrivateBroker()
    broker.start()          # rabbit://guest:guest@127.0.0.1:<port>/ accepts connections
    broker.stop_app()       # the outage
    broker.start_app()      # the recovery
    broker.close()          # node killed, temporary directory removed

What ``stop_app()`` / ``start_app()`` (``rabbitmqctl stop_app`` / ``start_app``) mean for
clients: on ``stop_app`` every connection is closed by the broker (``CONNECTION_FORCED``) and
the AMQP port refuses new connections, while the Erlang node keeps running (``ctl()`` still
works). Durable queues and their persistent messages are kept on disk; messages delivered but
not acknowledged go back to their queue, marked redelivered. On ``start_app`` the port accepts
connections again, durable queues are back with those messages, and non-durable queues (with
their messages) are gone. Clients have to reconnect and declare again what they need.

The ``private_broker`` fixture (one node per test module) skips the test when no node can be
started here, or fails it when ``CI=true``. Import it into the test module::

    from tests.functional.private_broker import private_broker  # noqa: F401
"""
import itertools
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

#: Where the Debian/RPM packages keep RabbitMQ's own scripts, which run as the calling user.
#: (``/usr/sbin/rabbitmq*`` are wrappers that switch root to the ``rabbitmq`` user, whose home
#: holds the shared node's cookie, and who could not write to our temporary directory.)
PACKAGE_SCRIPTS = '/usr/lib/rabbitmq/bin'
#: Seconds a ``rabbitmqctl`` command may take (each one boots an Erlang VM: ~0.5 s here).
CTL_TIMEOUT = 30
LOG_TAIL_LINES = 40

#: The node's rabbitmq.conf: AMQP on loopback only, its whole log in its output (log_path).
_CONFIG = '''\
listeners.tcp.default = 127.0.0.1:%d
log.file = false
log.console = true
log.console.level = info
log.console.use_colors = off
'''

_random = random.SystemRandom()
_instances = itertools.count()


class BrokerError(Exception):
    """The private node could not be started or controlled; the message says why."""


class PrivateBroker:
    """A RabbitMQ node of this process's own: ``start()``, ``stop_app()``, ``start_app()``,
    ``close()``.

    ``url``, ``port`` (AMQP, on 127.0.0.1) and ``nodename`` identify it; ``ctl(*args)`` runs
    ``rabbitmqctl`` against it. The ``guest`` user may log in, as it may over loopback on any
    fresh node.
    """

    def __init__(self):
        self.nodename = 'minisched-test-%d-%d@localhost' % (os.getpid(), next(_instances))
        self.port = None
        self.dist_port = None
        self.tmpdir = None
        self.log_path = None
        self._server = None  # the rabbitmq-server process
        self._watchdog = None

    @property
    def url(self):
        return 'rabbit://guest:guest@127.0.0.1:%d/' % self.port

    # -- life cycle -------------------------------------------------------------------------

    def start(self, timeout=60):
        """Start the node; return once its AMQP port accepts and the app is running.

        Raises BrokerError (the node's output is in ``log_path``, see ``log_tail()``); call
        ``close()`` afterwards in any case.
        """
        assert self._server is None, 'already started'
        self.tmpdir = tempfile.mkdtemp(prefix='minisched-rabbit-')
        self.log_path = self._path('server.log')
        self.port = _free_port()
        self.dist_port = _free_port(exclude=(self.port,))
        self._write_files()
        deadline = time.monotonic() + timeout
        self._server = _launch(self._environ(), self.log_path)
        self._watchdog = _watchdog(self._server.pid, self.tmpdir)
        # Polling the port is cheap; it opens near the end of the boot. Then await_startup
        # (which fails at once while the node is not yet known to epmd) confirms the app runs.
        self._wait_for_port(deadline)
        self.ctl('await_startup', timeout=_remaining(deadline))

    def stop_app(self):
        """Stop the RabbitMQ application: connections closed, port refusing, data kept."""
        self.ctl('stop_app')

    def start_app(self, timeout=60):
        """Start the application again; return once the port accepts and the app runs.

        (``rabbitmqctl start_app`` returns when the application has started.)
        """
        deadline = time.monotonic() + timeout
        self.ctl('start_app', timeout=timeout)
        self._wait_for_port(deadline)

    def close(self):
        """Kill the node (it is thrown away: no clean shutdown) and remove its directory.

        Idempotent. ``rabbitmq-server`` is reaped only after its process group was killed, so
        the group id is still ours when the Erlang VM in it gets SIGKILL.
        """
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            watchdog.kill()
            watchdog.wait()
            watchdog.stdin.close()
        server, self._server = self._server, None
        if server is not None:
            _killpg(server.pid)
            server.wait()
        tmpdir, self.tmpdir = self.tmpdir, None
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)

    # -- control ----------------------------------------------------------------------------

    def ctl(self, *args, timeout=CTL_TIMEOUT):
        """Run ``rabbitmqctl -n <node> -q <args>``; return its stdout.

        Raises BrokerError with its stderr when it fails or takes more than ``timeout`` s.
        """
        command = [_script('rabbitmqctl'), '-n', self.nodename, '-q'] + list(args)
        popen = subprocess.Popen(command, env=self._environ(), stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
        try:
            stdout, stderr = popen.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _killpg(popen.pid)
            popen.communicate()
            raise BrokerError('rabbitmqctl %s: no answer within %s s'
                              % (' '.join(args), timeout)) from None
        if popen.returncode:
            raise BrokerError('rabbitmqctl %s: exit status %d: %s' % (
                ' '.join(args), popen.returncode, (stderr or stdout).strip()))
        return stdout

    def log_tail(self, lines=LOG_TAIL_LINES):
        """The last ``lines`` lines of the node's output ('' before ``start()``, or once
        ``close()`` removed it)."""
        if self.log_path is None or not os.path.exists(self.log_path):
            return ''
        with open(self.log_path, errors='replace') as log:
            return ''.join(log.readlines()[-lines:])

    # -- internals --------------------------------------------------------------------------

    def _path(self, name):
        return os.path.join(self.tmpdir, name)

    def _environ(self):
        """The environment of the node and of ``rabbitmqctl``: nothing shared with the
        machine's broker (its rabbitmq-env.conf, rabbitmq.conf, plugins and cookie)."""
        return dict(
            os.environ,
            HOME=self.tmpdir,  # its .erlang.cookie is the node's and rabbitmqctl's
            RABBITMQ_NODENAME=self.nodename,
            RABBITMQ_CONF_ENV_FILE=self._path('rabbitmq-env.conf'),
            RABBITMQ_CONFIG_FILE=self._path('rabbitmq.conf'),
            RABBITMQ_ADVANCED_CONFIG_FILE=self._path('advanced.config'),
            RABBITMQ_ENABLED_PLUGINS_FILE=self._path('enabled_plugins'),
            RABBITMQ_MNESIA_BASE=self._path('mnesia'),
            RABBITMQ_LOG_BASE=self._path('log'),
            RABBITMQ_PID_FILE=self._path('rabbitmq.pid'),
            RABBITMQ_DIST_PORT=str(self.dist_port),
            RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS='-kernel inet_dist_use_interface {127,0,0,1}',
        )

    def _write_files(self):
        files = {
            '.erlang.cookie': secrets.token_hex(16),
            'rabbitmq-env.conf': '',
            'rabbitmq.conf': _CONFIG % self.port,
            'enabled_plugins': '[].\n',  # no management plugin, hence no port of its own
        }
        for name, text in files.items():
            with open(self._path(name), 'w') as stream:
                stream.write(text)
        os.chmod(self._path('.erlang.cookie'), 0o400)  # Erlang refuses a readable cookie

    def _wait_for_port(self, deadline):
        """Return once the AMQP port accepts a TCP connection."""
        while True:
            if self._server.poll() is not None:
                raise BrokerError('rabbitmq-server exited (status %d), port %d closed'
                                  % (self._server.returncode, self.port))
            try:
                socket.create_connection(('127.0.0.1', self.port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise BrokerError('port %d still refused connections after the timeout'
                                      % self.port) from None
                time.sleep(0.1)


def _launch(environ, log_path):
    """Start ``rabbitmq-server`` in the foreground, in a process group of its own."""
    with open(log_path, 'wb') as log:
        return subprocess.Popen([_script('rabbitmq-server')], env=environ, cwd=environ['HOME'],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)


def _watchdog(server_pid, tmpdir):
    """A shell that stops the node and removes ``tmpdir`` once its stdin is closed.

    ``close()`` kills it first; so it acts only when this process dies without ``close()``
    (SIGKILL, ``os._exit``), closing the pipe: SIGTERM, which ``rabbitmq-server`` turns into a
    clean stop of the Erlang VM, then SIGKILL to whatever is left of the group after 10 s.
    """
    script = 'read _; kill -TERM "$0"; sleep 10; kill -KILL -- -"$0" 2>/dev/null; rm -rf "$1"'
    return subprocess.Popen(['sh', '-c', script, str(server_pid), tmpdir],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def _script(name):
    """The command running RabbitMQ's ``name`` script as the calling user."""
    packaged = os.path.join(PACKAGE_SCRIPTS, name)
    path = packaged if os.access(packaged, os.X_OK) else shutil.which(name)
    if path is None:
        raise BrokerError('%s not found (neither in %s nor on PATH)' % (name, PACKAGE_SCRIPTS))
    return path


def _free_port(exclude=()):
    """A port of 127.0.0.1 that nobody listens on, below the kernel's ephemeral range.

    Below it, no client connection of this machine is given the port as its own while the
    application is stopped, so ``start_app`` can always listen on it again.
    """
    with open('/proc/sys/net/ipv4/ip_local_port_range') as stream:
        ephemeral_low = int(stream.read().split()[0])
    for _ in range(100):
        port = _random.randrange(1024, ephemeral_low)
        if port not in exclude and _bindable(port):
            return port
    raise BrokerError('no free port below %d' % ephemeral_low)


def _bindable(port):
    with socket.socket() as sock:
        try:
            sock.bind(('127.0.0.1', port))
        except OSError:
            return False
    return True


def _killpg(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _remaining(deadline):
    return max(1, deadline - time.monotonic())


@pytest.fixture(scope='module')
def private_broker():
    """A started PrivateBroker for the test module, closed after it.

    When no node can be started, the test is skipped, or failed when ``CI=true``.
    """
    broker = PrivateBroker()
    try:
        broker.start()
    except (BrokerError, OSError) as exc:
        tail = broker.log_tail()
        broker.close()
        _unavailable('no private RabbitMQ node: %s\n--- its output:\n%s' % (exc, tail))
    try:
        yield broker
    finally:
        broker.close()


def _unavailable(message):
    if os.environ.get('CI', '').lower() == 'true':
        pytest.fail(message)
    pytest.skip(message)
