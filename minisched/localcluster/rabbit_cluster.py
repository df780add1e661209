"""RabbitMQ clusters of our own: N nodes of :mod:`minisched.localcluster.rabbit_node` joined
into one.

A :class:`Cluster` starts an epmd of its own (on a private port, loopback only), its nodes
at once with one Erlang cookie, and joins every node to the first with ``rabbitmqctl
join_cluster``. AMQP listens on ``listen`` (``127.0.0.1``, or an address inside a network
namespace when ``netns`` names one), and a user with a random password replaces ``guest``
(who may only log in over loopback). :attr:`Cluster.transport_url` names every node, as
oslo.messaging takes a cluster: ``rabbit://u:p@h:P1,u:p@h:P2,u:p@h:P3/``.

Why in the package and not under ``tests/``: ``minisched-cluster up --rabbit-nodes 3`` ships
with minisched and cannot import the tests, while the tests can import the package; one
implementation serves both (and the private node of the older tests is a ``Node``).

A cluster saves a record of its PIDs and ports in :data:`STATE_FILE`, in its directory:
``minisched-cluster down``, in another process than the ``up --detach`` that started it,
stops it from there (:func:`stop_recorded`), and ``status`` reads it
(:func:`recorded_status`, :meth:`Cluster.load`).
"""
import json
import logging
import os
import secrets
import shutil
import signal
import subprocess
import threading
import time

from minisched import exception
from minisched.localcluster import rabbit_node
from minisched.localcluster.rabbit_node import BrokerError, Node  # noqa: F401  (raised and built here)

LOG = logging.getLogger(__name__)
LOG_TAIL_LINES = rabbit_node.LOG_TAIL_LINES
#: The cluster's record, in its directory (PIDs and ports, for ``stop_recorded``).
STATE_FILE = 'cluster.json'
#: Added for the nodes of a cluster: its user, and what a 3-node cluster of quorum queues
#: needs (the minority side of a partition pauses instead of diverging).
_CLUSTER_CONFIG = '''\
default_user = %(user)s
default_pass = %(password)s
cluster_partition_handling = pause_minority
'''


class Cluster:
    """``size`` nodes under ``directory`` joined into one RabbitMQ cluster.

    ``start()`` starts an epmd of their own, the nodes (at once), and joins every node to
    the first; ``kill(i)`` / ``restart(i)`` crash and restart node ``i``; ``close()`` stops
    everything and removes ``directory``. ``ports`` gives the AMQP ports (chosen free on
    loopback otherwise); ``listen``/``netns`` where they listen (see the module docstring).
    """

    def __init__(self, directory, size=3, listen='127.0.0.1', netns=None, ports=None,
                 user='minisched', password=None, prefix='rabbit', watchdog=True):
        if size < 1:
            raise ValueError('a cluster needs at least one node')
        self.directory = os.path.abspath(directory)
        self.listen = listen
        self.netns = netns
        self.user = user
        self.password = password or secrets.token_urlsafe(18)
        self.use_watchdog = watchdog
        self.epmd_port = None
        self._epmd = None
        self._watchdog = None
        self.nodes = []
        ports = list(ports or [])
        extra = _CLUSTER_CONFIG % {'user': user, 'password': self.password}
        for index in range(size):
            name = '%s%d' % (prefix, index + 1)
            self.nodes.append(Node(os.path.join(self.directory, name), name=name,
                                   port=ports[index] if index < len(ports) else None,
                                   listen=listen, netns=netns, cookie_home=self.directory,
                                   extra_config=extra, watchdog=watchdog))

    @classmethod
    def load(cls, directory):
        """The cluster recorded in ``directory`` by another process, to ask its nodes
        (``running_nodes``, ``ctl``); its processes are not this object's to stop (see
        :func:`stop_recorded`). Its password is not recorded (it is in the nodes' configs)."""
        record = load_record(directory)
        if record is None:
            raise BrokerError('no RabbitMQ cluster is recorded in %s' % directory)
        cluster = cls(directory, size=len(record['nodes']), listen=record['listen'],
                      netns=record['netns'], user=record.get('user', 'minisched'),
                      password='-', watchdog=False)
        cluster.epmd_port = record['epmd_port']
        for node, saved in zip(cluster.nodes, record['nodes']):
            node.nodename, node.directory = saved['name'], saved['directory']
            node.port, node.dist_port = saved['port'], saved['dist_port']
            node.epmd_port = record['epmd_port']
        return cluster

    @property
    def transport_url(self):
        """oslo.messaging's URL naming every node (it picks one, and fails over to the
        others)."""
        return self.url()

    def url(self, vhost=''):
        hosts = ','.join('%s:%s@%s:%d' % (self.user, self.password, node.listen, node.port)
                         for node in self.nodes)
        return 'rabbit://%s/%s' % (hosts, vhost)

    # -- life cycle -------------------------------------------------------------------------

    def start(self, timeout=180):
        """Start and join every node; return once all of them run in one cluster.

        Raises BrokerError naming the step that failed; call ``close()`` in any case.
        """
        deadline = time.monotonic() + timeout
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        rabbit_node.write_private(os.path.join(self.directory, '.erlang.cookie'),
                                  secrets.token_hex(16))
        self._start_epmd()
        taken = set()
        for node in self.nodes:
            node.epmd_port = self.epmd_port
            node.port = node.port or rabbit_node.free_port(exclude=taken)
            node.dist_port = rabbit_node.free_port(exclude=taken | {node.port})
            taken |= {node.port, node.dist_port}
            node.launch()
        for node in self.nodes:
            node.wait_started(_remaining(deadline))
        seed = self.nodes[0]
        joining = self.nodes[1:]
        # The joins go one at a time (two nodes joining the same seed at once may collide on
        # its schema lock), and so do the starts that follow: two joined nodes starting at
        # once race in the feature-flag negotiation, and one of them may fail to boot
        # ("{killed, ... negotiate_protocol ...}", seen in CI on a loaded machine). A start
        # that fails anyway is tried once more. Stopping the applications goes in parallel.
        _parallel([lambda n=node: n.stop_app() for node in joining])
        for node in joining:
            node.ctl('join_cluster', seed.nodename, timeout=_remaining(deadline))
        for node in joining:
            _start_app(node, deadline)
        seed.ctl('await_online_nodes', len(self.nodes), timeout=_remaining(deadline))
        self.save()

    def kill(self, index):
        """SIGKILL node ``index``'s Erlang VM: the node is lost as in a crash. Returns the
        VM's PID."""
        beam = self.nodes[index].kill()
        self.save()
        return beam

    def restart(self, index, timeout=120):
        """Start node ``index`` again (after ``kill``): it rejoins with its data."""
        self.nodes[index].start(timeout)
        self.save()

    def close(self, remove=True):
        """Kill every node and the epmd; remove the directory. Idempotent."""
        for node in self.nodes:
            node.close()
        epmd, self._epmd = self._epmd, None
        if epmd is not None:
            rabbit_node.kill_group(epmd.pid)
            epmd.wait()
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            rabbit_node.stop_watchdog(watchdog)
        if remove:
            shutil.rmtree(self.directory, ignore_errors=True)

    # -- state ------------------------------------------------------------------------------

    def running_nodes(self, via=None):
        """Node names the cluster reports running (asked of node ``via``, default: the
        first one whose VM runs); [] when none answers."""
        candidates = [self.nodes[via]] if via is not None else self.nodes
        for node in candidates:
            if node.beam_pid() is None:
                continue
            try:
                return _running_nodes(node.ctl('cluster_status', '--formatter', 'json'))
            except BrokerError:
                continue
        return []

    def queues(self, vhost='/'):
        """``{name: {'type': ..., 'leader': node name, 'messages': n}}`` of the vhost's
        queues, asked of the first node that answers ({} when none does)."""
        for node in self.nodes:
            if node.beam_pid() is None:
                continue
            try:
                rows = node.ctl('list_queues', '-p', vhost, 'name', 'type', 'leader',
                                'messages', '--formatter', 'json')
            except BrokerError:
                continue
            return {row['name']: row for row in json.loads(rows or '[]')}
        return {}

    def queue_types(self, vhost='/'):
        """``{queue name: 'classic'|'quorum'|'stream'}``."""
        return {name: row.get('type') for name, row in self.queues(vhost).items()}

    def queue_leader(self, queue, vhost='/'):
        """The node leading quorum queue ``queue`` (None when unknown)."""
        return self.queues(vhost).get(queue, {}).get('leader')

    def index_of(self, nodename):
        return [node.nodename for node in self.nodes].index(nodename)

    def record(self):
        """What ``stop_recorded`` and ``status`` need: PIDs, names and ports."""
        return {'epmd_pid': self._epmd.pid if self._epmd else None,
                'epmd_port': self.epmd_port, 'netns': self.netns, 'listen': self.listen,
                'user': self.user,
                'nodes': [{'name': node.nodename, 'port': node.port,
                           'dist_port': node.dist_port, 'pid': node.pid,
                           'directory': node.directory} for node in self.nodes]}

    def save(self):
        rabbit_node.write_private(os.path.join(self.directory, STATE_FILE),
                                  json.dumps(self.record()))

    def log_tails(self, lines=LOG_TAIL_LINES):
        return '\n'.join('----- %s (%s) -----\n%s' % (node.nodename, node.log_path,
                                                      node.log_tail(lines))
                         for node in self.nodes)

    # -- internals --------------------------------------------------------------------------

    def _start_epmd(self):
        self.epmd_port = rabbit_node.free_port()
        command = [_epmd(), '-port', str(self.epmd_port), '-address', '127.0.0.1']
        with open(os.path.join(self.directory, 'epmd.log'), 'ab') as log:
            self._epmd = subprocess.Popen(
                rabbit_node.netns_command(self.netns, command), stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        if self.use_watchdog:
            # The nodes have watchdogs of their own; this one takes the epmd and the data.
            self._watchdog = rabbit_node.start_watchdog([self._epmd.pid], [self.directory])
        # Until it answers, a node would start an epmd of its own (and leave it behind).
        names = rabbit_node.netns_command(self.netns, [_epmd(), '-port', str(self.epmd_port),
                                                       '-names'])
        deadline = time.monotonic() + 10
        while subprocess.run(names, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             stdin=subprocess.DEVNULL).returncode != 0:
            if self._epmd.poll() is not None or time.monotonic() > deadline:
                raise BrokerError('epmd did not listen on port %d' % self.epmd_port)
            time.sleep(0.05)


# -- a cluster started by another process (minisched-cluster up --detach) ---------------------

def load_record(directory):
    """The record a Cluster saved in ``directory``, or None."""
    try:
        with open(os.path.join(directory, STATE_FILE)) as stream:
            return json.load(stream)
    except (OSError, ValueError):
        return None


def recorded_status(directory):
    """``[(node name, AMQP port, 'running'|'stopped')]`` from the record in ``directory``."""
    record = load_record(directory) or {'nodes': []}
    return [(node['name'], node['port'], 'running' if _node_runs(node['pid']) else 'stopped')
            for node in record['nodes']]


def _node_runs(pid):
    return bool(pid) and rabbit_node.running(pid, 'rabbitmq-server')


def stop_recorded(directory, timeout=30, remove=True):
    """Stop the nodes and the epmd recorded in ``directory`` (SIGTERM, then SIGKILL of each
    process group after ``timeout`` s) and remove it; returns how many nodes were running.

    A PID is signalled only while it still runs the program recorded for it.
    """
    record = load_record(directory)
    if record is None:
        return 0
    nodes = [node['pid'] for node in record['nodes'] if _node_runs(node['pid'])]
    for pid in nodes:
        rabbit_node.send_signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for pid in nodes:
        while rabbit_node.running(pid, 'rabbitmq-server') and time.monotonic() < deadline:
            time.sleep(0.2)
        rabbit_node.kill_group(pid)
    epmd = record.get('epmd_pid')
    if epmd and rabbit_node.running(epmd, 'epmd'):
        rabbit_node.kill_group(epmd)
    if remove:
        shutil.rmtree(directory, ignore_errors=True)
    return len(nodes)


# -- helpers ---------------------------------------------------------------------------------

def _epmd():
    path = shutil.which('epmd')
    if path is None:
        raise BrokerError('epmd (Erlang) not found on PATH')
    return path


def _running_nodes(status_json):
    """Running node names of ``rabbitmqctl cluster_status --formatter json``."""
    try:
        status = json.loads(status_json)
    except ValueError:
        return []
    return sorted(status.get('running_nodes') or [])


def _parallel(jobs):
    """Run ``jobs`` in threads; raise the first error once all have ended."""
    errors = []

    def run(job):
        try:
            job()
        except Exception as exc:  # handed to the caller below
            errors.append(exc)
    threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]




def _start_app(node, deadline):
    """``node.start_app()``, once more if it fails (within ``deadline``)."""
    try:
        node.start_app(_remaining(deadline))
    except rabbit_node.BrokerError as exc:
        LOG.warning('RabbitMQ node %s did not start (%s); trying once more', node.nodename,
                    exception.first_line(exc))
        node.start_app(_remaining(deadline))


def _remaining(deadline):
    return max(1, deadline - time.monotonic())
