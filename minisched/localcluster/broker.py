"""The RabbitMQ side of a local cluster: a vhost of its own, or proof that it is alone.

oslo.messaging names a topic queue after its topic alone (``conductor``, ``scheduler``,
``compute``, ``compute.<host>``), whatever the control exchange: two clusters on one vhost
consume from the same queues and answer each other's calls. So ``minisched-cluster`` runs
each cluster on a vhost of its own, made with ``rabbitmqctl`` when the broker is on this
machine (:func:`add_vhost`) and deleted when the cluster stops. Where it cannot make one, or
when the user gave a transport URL, it refuses to start while the queues it would consume
from already have consumers (:func:`busy_queues`).
"""
import shutil
import subprocess
import urllib.parse
import uuid

#: Prefix of the vhosts ``minisched-cluster`` makes (a random suffix follows).
VHOST_PREFIX = 'minisched-cluster-'
CTL_TIMEOUT = 60
_LOCAL = ('127.0.0.1', 'localhost', '::1')


class VhostError(Exception):
    """rabbitmqctl could not make or delete a vhost; the message says why."""


def rabbitmqctl_for(url):
    """``['rabbitmqctl']`` when ``url``'s broker is on this machine and rabbitmqctl is on the
    PATH (the one command that can make a vhost there), else None."""
    host = urllib.parse.urlsplit(url.split(',')[0]).hostname
    if host in _LOCAL and shutil.which('rabbitmqctl'):
        return ['rabbitmqctl']
    return None


def with_vhost(url, vhost):
    """``url`` (one or several hosts) with its path replaced by ``vhost``."""
    scheme, _, rest = url.partition('://')
    netlocs, _slash, path = rest.partition('/')
    query = ''
    if '?' in path:
        query = '?' + path.split('?', 1)[1]
    return '%s://%s/%s%s' % (scheme, netlocs, urllib.parse.quote(vhost, safe=''), query)


def vhost_of(url):
    """The vhost ``url`` names (``/`` when its path is empty)."""
    path = url.partition('://')[2].partition('/')[2].split('?', 1)[0]
    return urllib.parse.unquote(path) or '/'


def user_of(url):
    return urllib.parse.unquote(urllib.parse.urlsplit(url.split(',')[0]).username or 'guest')


def add_vhost(command, user):
    """Make a new vhost that ``user`` may use fully; returns its name."""
    name = VHOST_PREFIX + uuid.uuid4().hex[:12]
    try:
        _ctl(command, 'add_vhost', name)
        _ctl(command, 'set_permissions', '-p', name, user, '.*', '.*', '.*')
    except VhostError:
        delete_vhost(command, name, check=False)
        raise
    return name


def delete_vhost(command, name, check=True):
    """Delete vhost ``name`` and every queue in it."""
    try:
        _ctl(command, 'delete_vhost', name)
    except VhostError:
        if check:
            raise


def _ctl(command, *args):
    try:
        subprocess.run(list(command) + ['-q'] + list(args), capture_output=True, text=True,
                       timeout=CTL_TIMEOUT, check=True)
    except subprocess.CalledProcessError as exc:
        raise VhostError('%s %s: %s' % (' '.join(command), ' '.join(args),
                                        (exc.stderr or exc.stdout or '').strip()[-500:]))
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise VhostError('%s %s: %s' % (' '.join(command), ' '.join(args), exc))


def topic_queues(compute_names):
    """The queues a cluster's services consume from (their topic and ``topic.host``)."""
    queues = ['conductor', 'scheduler', 'compute']
    return queues + ['compute.%s' % name for name in compute_names]


def busy_queues(url, queues, timeout=5.0):
    """``{queue: consumer count}`` of those ``queues`` that exist on ``url``'s vhost with
    consumers (a passive declare, which creates nothing)."""
    import pika
    from minisched import localcluster
    connection = pika.BlockingConnection(localcluster.pika_parameters(url, timeout))
    busy = {}
    try:
        for queue in queues:
            channel = connection.channel()
            try:
                declared = channel.queue_declare(queue, passive=True)
            except pika.exceptions.ChannelClosedByBroker:
                continue  # no such queue (404): nobody consumes from it
            if declared.method.consumer_count:
                busy[queue] = declared.method.consumer_count
            channel.close()
    finally:
        connection.close()
    return busy
