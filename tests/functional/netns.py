"""Several "hosts" on one machine: Linux network namespaces on a private bridge, for tests.

``Lab`` makes a namespace per host, each with a veth whose other end is plugged into a bridge
living in a "switch" namespace of the lab's own, so that nothing is added to the machine's
own (root) namespace: no link, no address, no route. Hosts reach each other at their
addresses in a private range (``10.234.0.0/24``); nothing in them reaches the machine's
network, and the machine reaches them only through what a test builds on purpose::

    lab = Lab()                                  # a prefix of its own: ms<pid>x<n>
    lab.add_host('ctl1', '10.234.0.11')          # namespace ms...-ctl1, eth0 10.234.0.11/24
    lab.command('ctl1', ['minisched-conductor', ...])   # ['ip', 'netns', 'exec', ...]
    lab.cut('cmp6')                              # its veth down: the host is cut off
    lab.close()                                  # processes left in them killed, all deleted

What crosses the boundary is a ``NetnsProxy``: a listening socket opened inside one namespace
(``setns(2)`` on ``/run/netns/<name>`` from a short-lived thread: Python 3.11 has no
``os.setns``, and the call changes only the calling thread) whose connections are forwarded
from the test process, e.g. PostgreSQL of the machine (``127.0.0.1:5432``) at
``10.234.0.3:5432`` of a "db" host.

Everything is removed by ``close()``, and by a watchdog shell if the test process dies first
(SIGKILL): it kills what runs in the lab's namespaces and deletes them. Creating namespaces
needs root and iproute2 (``unavailable()`` says why not).
"""
import ctypes
import itertools
import os
import shutil
import socket
import subprocess
import threading

import sqlalchemy as sa

from minisched.db import migration
from tests.functional import base
from tests.functional import tcp_proxy

#: Linux's CLONE_NEWNET, for setns(2).
CLONE_NEWNET = 0x40000000
NETNS_DIR = '/run/netns'
_counter = itertools.count()
_libc = ctypes.CDLL(None, use_errno=True)


def unavailable_reason():
    """Why namespaces cannot be made here (None when they can)."""
    if os.geteuid() != 0:
        return 'network namespaces need root'
    if shutil.which('ip') is None:
        return 'iproute2 (ip) is not installed'
    probe = 'msprobe%d' % os.getpid()
    result = subprocess.run(['ip', 'netns', 'add', probe], capture_output=True, text=True)
    if result.returncode:
        return 'ip netns add failed: %s' % result.stderr.strip()
    subprocess.run(['ip', 'netns', 'del', probe], capture_output=True)
    return None


class Lab:
    """The namespaces of one test: a switch (a bridge) and the hosts plugged into it."""

    def __init__(self, prefixlen=24):
        self.prefix = 'ms%dx%d' % (os.getpid(), next(_counter))
        self.prefixlen = prefixlen
        self.hosts = {}  # name -> address
        self.switch = self.prefix + '-sw'
        self._namespaces = []
        self._watchdog = self._start_watchdog()
        self._add_namespace(self.switch)
        self._ip('-n', self.switch, 'link', 'add', 'name', 'br0', 'type', 'bridge')
        self._ip('-n', self.switch, 'link', 'set', 'dev', 'br0', 'up')

    def ns(self, host):
        """The namespace name of ``host``."""
        return '%s-%s' % (self.prefix, host)

    def add_host(self, host, address):
        """A namespace for ``host`` with loopback up and ``eth0`` at ``address`` on the
        switch (its veth there is called ``v<host>``)."""
        assert len('v' + host) <= 15, 'interface names have 15 characters at most'
        namespace = self.ns(host)
        self._add_namespace(namespace)
        port = 'v' + host
        self._ip('-n', self.switch, 'link', 'add', 'name', port, 'type', 'veth', 'peer',
                 'name', 'eth0', 'netns', namespace)
        self._ip('-n', self.switch, 'link', 'set', 'dev', port, 'master', 'br0', 'up')
        self._ip('-n', namespace, 'link', 'set', 'dev', 'lo', 'up')
        self._ip('-n', namespace, 'addr', 'add', '%s/%d' % (address, self.prefixlen), 'dev',
                 'eth0')
        self._ip('-n', namespace, 'link', 'set', 'dev', 'eth0', 'up')
        self.hosts[host] = address
        return namespace

    def cut(self, host):
        """Cut ``host`` off the network: its veth on the switch goes down (its processes run
        on, their connections see nothing more: no reset, no answer)."""
        self._ip('-n', self.switch, 'link', 'set', 'dev', 'v' + host, 'down')

    def restore(self, host):
        self._ip('-n', self.switch, 'link', 'set', 'dev', 'v' + host, 'up')

    def command(self, host, argv):
        """``argv`` to run on ``host``."""
        return ['ip', 'netns', 'exec', self.ns(host)] + list(argv)

    def run(self, host, argv, timeout=60, **kwargs):
        return subprocess.run(self.command(host, argv), capture_output=True, text=True,
                              timeout=timeout, **kwargs)

    def socket_in(self, host, family=socket.AF_INET, kind=socket.SOCK_STREAM):
        """A new socket of ``host``'s namespace (made by a thread that enters it)."""
        made = []

        def make():
            fd = os.open(os.path.join(NETNS_DIR, self.ns(host)), os.O_RDONLY)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    made.append(OSError(ctypes.get_errno(), 'setns into %s' % self.ns(host)))
                    return
                made.append(socket.socket(family, kind))
            finally:
                os.close(fd)
        thread = threading.Thread(target=make, name='netns-socket')
        thread.start()
        thread.join()
        if isinstance(made[0], Exception):
            raise made[0]
        return made[0]

    def pids(self):
        """PIDs of the processes running in the lab's namespaces."""
        found = set()
        for namespace in self._namespaces:
            result = subprocess.run(['ip', 'netns', 'pids', namespace], capture_output=True,
                                    text=True)
            found.update(int(pid) for pid in result.stdout.split())
        found.discard(os.getpid())
        return sorted(found)

    def close(self):
        """Kill what still runs in the namespaces, delete them (with their links). Idempotent."""
        for pid in self.pids():
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        for namespace in reversed(self._namespaces):
            subprocess.run(['ip', 'netns', 'del', namespace], capture_output=True)
        self._namespaces = []
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            watchdog.kill()
            watchdog.wait()
            watchdog.stdin.close()

    # -- internals --------------------------------------------------------------------------

    def _add_namespace(self, namespace):
        self._ip('netns', 'add', namespace)
        self._namespaces.append(namespace)

    @staticmethod
    def _ip(*args):
        result = subprocess.run(['ip'] + list(args), capture_output=True, text=True)
        if result.returncode:
            raise OSError('ip %s: %s' % (' '.join(args), result.stderr.strip()))

    def _start_watchdog(self):
        """A shell that cleans the lab up once its stdin closes (this process died)."""
        script = ('read _; for ns in $(ip netns list | cut -d" " -f1 | grep "^$0-"); do '
                  'ip netns pids "$ns" | xargs -r kill -9; ip netns del "$ns"; done')
        return subprocess.Popen(['sh', '-c', script, self.prefix], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)


def NetnsProxy(lab, host, address, port, target):
    """A :class:`tcp_proxy.TcpProxy` listening on ``address:port`` inside ``host``'s
    namespace and forwarding to ``target`` (host, port) as this process reaches it (the
    machine's loopback): threads of the test process."""
    return tcp_proxy.TcpProxy(target[1], target_host=target[0], port=port, address=address,
                              make_socket=lambda: lab.socket_in(host))


class NetnsCluster(base.Cluster):
    """A ``base.Cluster`` whose services run on the lab's hosts.

    ``placement`` maps each service name to its host; the config files carry the URLs the
    hosts use (``db_url``), while the test process reads the same database through
    ``root_db_url``. ``minisched-manage`` runs on ``manage_host`` (a controller), as an
    operator would run it.
    """

    def __init__(self, workdir, lab, transport_url, db_url, root_db_url, manage_host, **kwargs):
        super().__init__(workdir, transport_url, db_url, own_vhost=True, **kwargs)
        self.lab = lab
        self.root_db_url = root_db_url
        self.manage_host = manage_host
        self.placement = {}

    def command(self, name, argv):
        return self.lab.command(self.placement[name], argv)

    def start_service(self, name, host, binary, topic, sections, ready_count=1, wait=False):
        """Start ``binary`` as service ``name`` on lab host ``host``."""
        self.placement[name] = host
        return self._start(name, binary, topic, sections, ready_count, wait)

    def sync_db(self):
        migration.db_sync(self.root_db_url, 'api')
        migration.db_sync(self.root_db_url, 'main')

    def query(self, sql, **params):
        engine = sa.create_engine(self.root_db_url, poolclass=sa.pool.NullPool)
        try:
            with engine.connect() as conn:
                return [dict(row) for row in conn.execute(sa.text(sql), params).mappings()]
        finally:
            engine.dispose()

    def run_manage(self, *args, check=True, timeout=60, host=None):
        """``minisched-manage`` on ``host`` (default: ``manage_host``)."""
        argv = [base.script('minisched-manage'), '--config-file', self.conf_file] + [
            str(arg) for arg in args]
        result = self.lab.run(host or self.manage_host, argv, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError('minisched-manage %s exited %d:\n%s%s' % (
                ' '.join(map(str, args)), result.returncode, result.stdout, result.stderr))
        return result
