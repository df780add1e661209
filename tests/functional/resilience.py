"""Helpers of the fuzz, fault and security tests: raw RPC clients, clusters on a vhost of their
own (optionally behind a TcpProxy), child PIDs, and RabbitMQ users made for one test.

``raw_client(cluster, topic)`` sends exactly what it is given: its serializer passes arguments
and the context through untouched, so garbage really reaches the server, and replies come back
as primitives. Remote exceptions of ``minisched.exception`` are rebuilt as their classes; any
other remote exception arrives as ``oslo_messaging.RemoteError`` naming its class.
"""
import os
import subprocess
import time
import urllib.parse
import uuid

import oslo_messaging as messaging
from oslo_config import cfg
from oslo_messaging._metrics import client as metrics
from oslo_messaging._tracing import client as tracing

from minisched import rpc
from tests.functional import base


class RawSerializer(messaging.Serializer):
    """No conversion either way: the context is a dict, entities are sent as they are."""

    def serialize_entity(self, ctxt, entity):
        return entity

    def deserialize_entity(self, ctxt, entity):
        return entity

    def serialize_context(self, ctxt):
        return ctxt

    def deserialize_context(self, ctxt):
        return ctxt


def admin_context(**overrides):
    """A context dict as minisched services send it, with a fresh ``request_id``."""
    values = {'user_id': None, 'project_id': None, 'is_admin': True, 'read_deleted': 'no',
              'request_id': 'req-%s' % uuid.uuid4(), 'global_request_id': None,
              'roles': [], 'timestamp': '2024-01-01T00:00:00.000000',
              'remote_address': None, 'quota_class': None, 'user_name': None,
              'project_name': None, 'service_catalog': []}
    values.update(overrides)
    return values


def client_conf(cluster, transport_url=None):
    """A ConfigOpts read from the cluster's shared config file (optionally another URL)."""
    conf = cfg.ConfigOpts()
    conf(['--config-file', cluster.conf_file], project='minisched-test',
         default_config_files=[], default_config_dirs=[])
    # oslo.messaging registers these on the global CONF only, and its client reads them.
    conf.register_opts(tracing.oslo_messaging_tracing, group='oslo_messaging_tracing')
    conf.register_opts(metrics.oslo_messaging_metrics, group='oslo_messaging_metrics')
    transport = messaging.get_rpc_transport(conf, url=transport_url or cluster.transport_url,
                                            allowed_remote_exmods=rpc.ALLOWED_EXMODS)
    return conf, transport


class RawClients:
    """RPC clients on one transport of the test process; ``close()`` releases it."""

    def __init__(self, cluster, transport_url=None, timeout=10):
        self.conf, self.transport = client_conf(cluster, transport_url)
        self.timeout = timeout

    def client(self, topic, version='1.0', namespace=None, server=None, fanout=False,
               timeout=None, serializer=None):
        target = messaging.Target(topic=topic, version=version, namespace=namespace,
                                  server=server, fanout=fanout)
        return messaging.get_rpc_client(self.transport, target,
                                        serializer=serializer or RawSerializer(),
                                        timeout=timeout or self.timeout)

    def object_client(self, topic, version, namespace=None, timeout=None):
        """A client with minisched's own serializer (objects in, objects out)."""
        return self.client(topic, version, namespace, timeout=timeout,
                           serializer=rpc.get_serializer())

    def close(self):
        self.transport.cleanup()


# -- processes -------------------------------------------------------------------------------

def children(pid):
    """PIDs of the live children of ``pid`` (scheduler workers of a launcher), from /proc."""
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as f:
                stat = f.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces, so split after its ')'.
        fields = stat.rsplit(')', 1)[1].split()
        if fields[0] != 'Z' and int(fields[1]) == pid:
            found.append(int(entry))
    return sorted(found)


def alive(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


def process_tree(cluster):
    """{service name: (main pid, worker pids)} of the running services of ``cluster``."""
    return {name: (p.pid, tuple(children(p.pid))) for name, p in cluster.processes.items()
            if p.popen.poll() is None}


def restart(cluster, name, start, **kwargs):
    """Forget the (dead) process ``name`` and start it again with ``start(**kwargs)``.

    Its previous log is kept beside the new one as ``<name>.log.1``.
    """
    old = cluster.processes.pop(name)
    assert old.popen.poll() is not None, '%s is still running' % name
    os.replace(old.log_path, old.log_path + '.1')
    return start(**kwargs)


# -- the broker --------------------------------------------------------------------------------

def rabbitmqctl(*args, check=True):
    command = base._rabbitmqctl(base.TRANSPORT_URL)
    if command is None:
        base.unavailable('rabbitmqctl is needed to make a vhost or a user for this test '
                         '(see MINISCHED_TEST_RABBITMQCTL in tests/functional/base.py)')
    return subprocess.run(command + ['-q'] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=60, check=check)


def own_vhost(request):
    """The transport URL of a vhost made for this test (deleted after it)."""
    base.check_rabbit(base.TRANSPORT_URL)
    url, delete = base.make_vhost(base.TRANSPORT_URL)
    if url == base.TRANSPORT_URL:
        base.unavailable('no vhost of its own for this test: rabbitmqctl is needed '
                         '(see MINISCHED_TEST_RABBITMQCTL in tests/functional/base.py)')
    request.addfinalizer(delete)
    return url


def with_user(url, user, password):
    """``url`` with its credentials replaced."""
    parts = urllib.parse.urlsplit(url)
    netloc = '%s:%s@%s' % (urllib.parse.quote(user, safe=''),
                           urllib.parse.quote(password, safe=''),
                           parts.netloc.rpartition('@')[2])
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def rabbit_port(url):
    """The broker port of a rabbit transport URL (AMQP's 5672 when it names none)."""
    return urllib.parse.urlsplit(url).port or 5672


def with_port(url, port):
    """``url`` pointing at ``127.0.0.1:port`` (a TcpProxy), credentials and path kept."""
    parts = urllib.parse.urlsplit(url)
    userinfo = parts.netloc.rpartition('@')[0]
    netloc = ('%s@' % userinfo if userinfo else '') + '127.0.0.1:%d' % port
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def vhost_of(url):
    return urllib.parse.unquote(urllib.parse.urlsplit(url).path[1:]) or '/'


def make_cluster(request, tmp_path, transport_url, db_url, shared_vhost=False, **kwargs):
    """A ``base.Cluster`` on ``transport_url``/``db_url`` with schemas, stopped after the test.

    ``shared_vhost``: the vhost outlives the test (the session's), so its exchange and queues
    are deleted after the services stop. The test's report shows the tail of its service logs
    when it fails (conftest's hook).
    """
    cluster = base.Cluster(tmp_path, transport_url, db_url, own_vhost=True, **kwargs)
    request.node.minisched_clusters = getattr(request.node, 'minisched_clusters', []) + [cluster]
    if shared_vhost:
        request.addfinalizer(cluster.cleanup_broker)
    request.addfinalizer(cluster.kill_all)  # finalizers run last-in first-out
    cluster.sync_db()
    return cluster


def wait_log(cluster, name, text, timeout=30, count=1):
    """Wait until the log of service ``name`` holds ``text`` at least ``count`` times."""
    return base.wait_for(lambda: cluster.log(name).count(text) >= count, timeout,
                         message='%r in the log of %s' % (text, name))


class Stopwatch:
    def __init__(self):
        self.start = time.monotonic()

    @property
    def elapsed(self):
        return time.monotonic() - self.start
