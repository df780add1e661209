"""The real Placement service (``openstack-placement``) of a local cluster, under uWSGI.

Placement runs as its own process, as devstack runs it: the ``placement.wsgi.api``
application under uWSGI (the ``pyuwsgi`` wheel, which installs without a compiler), one
master and ``processes`` workers on a loopback port of its own. Its database is its own
(``[placement_database] connection``): an embedded SQLite file under the state directory by
default, or a PostgreSQL/MariaDB URL; ``placement-manage db sync`` creates its schema.
Without Keystone, its ``[api] auth_strategy`` is ``noauth2``: a request's ``X-Auth-Token``
names its user, and the token ``admin`` has the admin role, which is what minisched's
``[placement]`` client sends with ``auth_type = admin_token`` (:func:`client_options`).

Requires the ``placement`` extra (``pip install minisched[placement]``).
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from minisched.localcluster import _alive

CONFIG_FILE = 'placement.conf'
SQLITE_FILE = 'placement.sqlite'
LOG_FILE = 'placement.log'
#: The WSGI application devstack serves (Placement's ``wsgi/api.py`` module).
WSGI_MODULE = 'placement.wsgi.api:application'
#: The token Placement's noauth2 middleware takes as an admin user.
NOAUTH_TOKEN = 'admin'


class PlacementError(RuntimeError):
    """Placement could not be set up, started or reached; the message says why."""


def _binary(name):
    """The console script ``name`` beside this interpreter (a venv's), else on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), name)
    found = here if os.access(here, os.X_OK) else shutil.which(name)
    if not found:
        raise PlacementError('%s not found: install the placement extra '
                             '(pip install "minisched[placement]")' % name)
    return found


def free_port(host='127.0.0.1'):
    """A TCP port nothing listens on right now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def client_options(url):
    """``[placement]`` settings of minisched's services for a noauth2 Placement at ``url``."""
    return [('auth_type', 'admin_token'), ('endpoint', url), ('token', NOAUTH_TOKEN)]


class PlacementServer:
    """Config, database and process of one Placement service under ``state_dir``.

    ``database_url``: an SQLAlchemy URL of an existing, empty database; None for the SQLite
    file ``placement.sqlite`` in ``state_dir``. ``port``: None for a free one. ``threads``
    per uWSGI worker: None for 1 on SQLite (its writers must not overlap), else 4.
    """

    #: Attempts to start on a fresh free port when another process took the port first.
    START_ATTEMPTS = 3

    def __init__(self, state_dir, database_url=None, host='127.0.0.1', port=None,
                 processes=1, threads=None, debug=False, opener=None):
        self.state_dir = os.path.abspath(state_dir)
        self.database_url = database_url or 'sqlite:///%s' % os.path.join(self.state_dir,
                                                                          SQLITE_FILE)
        self.host = host
        self.port = port
        self.processes = processes
        # One request at a time on SQLite: two transactions that both go on to write get
        # "database is locked" at once (SQLite does not wait there, it would deadlock).
        self.threads = threads or (1 if self.database_url.startswith('sqlite') else 4)
        self.debug = debug
        self._opener = opener or open
        self.proc = None

    @property
    def config_file(self):
        return os.path.join(self.state_dir, CONFIG_FILE)

    @property
    def log_file(self):
        return os.path.join(self.state_dir, LOG_FILE)

    @property
    def url(self):
        return 'http://%s:%d' % (self.host, self.port)

    # -- set-up -----------------------------------------------------------------------------

    def write_config(self):
        os.makedirs(self.state_dir, exist_ok=True)
        lines = ['[DEFAULT]', 'debug = %s' % str(self.debug).lower(),
                 '[api]', 'auth_strategy = noauth2',
                 '[placement_database]', 'connection = %s' % self.database_url]
        with self._opener(self.config_file, 'w') as handle:
            handle.write('\n'.join(lines) + '\n')

    def db_sync(self):
        """``placement-manage db sync`` on the configured database."""
        result = subprocess.run([_binary('placement-manage'), '--config-file',
                                 self.config_file, 'db', 'sync'],
                                capture_output=True, text=True, env=self._env())
        if result.returncode != 0:
            raise PlacementError('placement-manage db sync failed (%d): %s' % (
                result.returncode, result.stderr.strip()[-2000:]))

    def _env(self):
        # Placement's WSGI application reads placement.conf from this directory.
        return dict(os.environ, OS_PLACEMENT_CONFIG_DIR=self.state_dir)

    # -- the process ----------------------------------------------------------------------------

    def command(self):
        # One request per connection: a keep-alive connection holds its worker thread while
        # idle, and every other client (computes, schedulers) would wait behind it.
        return [_binary('uwsgi'), '--http-socket', '%s:%d' % (self.host, self.port),
                '--add-header', 'Connection: close',
                '--module', WSGI_MODULE, '--master', '--processes', str(self.processes),
                '--threads', str(self.threads), '--enable-threads', '--thunder-lock',
                # SIGTERM stops uWSGI (by default it reloads); no application: exit.
                '--die-on-term', '--need-app', '--strict', '--buffer-size', '65535',
                '--procname-prefix', 'placement-']

    def start(self, timeout=60):
        """Start Placement and wait until it answers ``GET /``; returns its URL."""
        fixed_port = self.port is not None
        for attempt in range(1 if fixed_port else self.START_ATTEMPTS):
            if not fixed_port:
                self.port = free_port(self.host)
            log = self._opener(self.log_file, 'ab')
            try:
                self.proc = subprocess.Popen(self.command(), stdout=log,
                                             stderr=subprocess.STDOUT, env=self._env(),
                                             start_new_session=True)
            finally:
                log.close()
            if self.wait_ready(timeout):
                return self.url
            if not self._port_taken():
                break
            self.stop()
        self.stop()
        raise PlacementError('Placement did not answer on %s within %d s; see %s'
                             % (self.url, timeout, self.log_file))

    def _port_taken(self):
        """True when uWSGI exited because the port was in use (raced by another process)."""
        try:
            with open(self.log_file, errors='replace') as handle:
                handle.seek(max(0, os.fstat(handle.fileno()).st_size - 4096))
                return 'Address already in use' in handle.read()
        except OSError:
            return False

    def wait_ready(self, timeout):
        """True once ``GET /`` answers 200; False when the process exits or time runs out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                return False
            if self.answers():
                return True
            time.sleep(0.2)
        return False

    def answers(self, timeout=2.0):
        """True when Placement's root (its versions document) answers 200."""
        try:
            with urllib.request.urlopen(self.url + '/', timeout=timeout) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def stop(self, timeout=15):
        """SIGTERM the uWSGI master (it stops its workers), SIGKILL the group after
        ``timeout``; returns the exit status (None when nothing ran)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        return stop_pid(proc.pid, timeout, proc)


def stop_pid(pid, timeout=15, proc=None):
    """Stop a Placement started by :class:`PlacementServer` (``pid`` is the uWSGI master,
    the leader of its own session); for ``down`` from another command, ``proc`` is None."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return proc.wait() if proc is not None else None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None:
            if proc.poll() is not None:
                return proc.returncode
        elif not _alive(pid):
            return 0
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return proc.wait() if proc is not None else None

