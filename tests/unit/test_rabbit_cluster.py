"""``minisched.localcluster.rabbit_cluster`` without starting RabbitMQ: its URL, its nodes' files,
the record a detached cluster leaves, and who ``stop_recorded`` may signal."""
import json
import os
import stat
import subprocess
import time

import pytest

from minisched.localcluster import rabbit_cluster


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_transport_url_names_every_node_with_the_cluster_user(tmp_path):
    cluster = rabbit_cluster.Cluster(str(tmp_path / 'c'), ports=[5672, 5673, 5674],
                                     listen='10.234.0.2', password='s3cret')
    assert cluster.transport_url == (
        'rabbit://minisched:s3cret@10.234.0.2:5672,minisched:s3cret@10.234.0.2:5673,'
        'minisched:s3cret@10.234.0.2:5674/')
    assert cluster.url('vh').endswith('@10.234.0.2:5674/vh')
    assert [node.nodename for node in cluster.nodes] == [
        'rabbit1@localhost', 'rabbit2@localhost', 'rabbit3@localhost']
    generated = rabbit_cluster.Cluster(str(tmp_path / 'd'), size=1).password
    assert len(generated) >= 24 and generated.replace('-', '').replace('_', '').isalnum()
    with pytest.raises(ValueError):
        rabbit_cluster.Cluster(str(tmp_path / 'e'), size=0)


def test_node_files_are_private_and_name_its_listener_and_user(tmp_path):
    cluster = rabbit_cluster.Cluster(str(tmp_path / 'c'), size=1, ports=[5999],
                                     password='pw')
    node = cluster.nodes[0]
    node.dist_port = 25999
    node.prepare()
    config = open(node.path('rabbitmq.conf')).read()
    assert 'listeners.tcp.default = 127.0.0.1:5999\n' in config
    assert 'default_user = minisched\ndefault_pass = pw\n' in config
    assert 'cluster_partition_handling = pause_minority' in config
    assert open(node.path('enabled_plugins')).read() == '[].\n'
    for name in ('rabbitmq.conf', 'rabbitmq-env.conf', 'enabled_plugins'):
        assert _mode(node.path(name)) == 0o600, name
    # The cookie is the cluster's (HOME of every node and of rabbitmqctl), not the node's.
    assert not os.path.exists(node.path('.erlang.cookie'))


def test_running_nodes_from_cluster_status_json():
    status = json.dumps({'running_nodes': ['b@localhost', 'a@localhost'], 'disk_nodes': []})
    assert rabbit_cluster._running_nodes(status) == ['a@localhost', 'b@localhost']
    assert rabbit_cluster._running_nodes('not json') == []


def test_record_round_trip(tmp_path):
    cluster = rabbit_cluster.Cluster(str(tmp_path / 'c'), ports=[11, 12, 13],
                                     netns='lab-mq', listen='10.0.0.2')
    os.makedirs(cluster.directory)
    cluster.epmd_port = 4369
    for index, node in enumerate(cluster.nodes):
        node.dist_port = 21 + index
    cluster.save()
    assert _mode(os.path.join(cluster.directory, rabbit_cluster.STATE_FILE)) == 0o600
    loaded = rabbit_cluster.Cluster.load(cluster.directory)
    assert [(n.nodename, n.port, n.dist_port, n.epmd_port, n.netns, n.listen)
            for n in loaded.nodes] == [
        ('rabbit%d@localhost' % (i + 1), 11 + i, 21 + i, 4369, 'lab-mq', '10.0.0.2')
        for i in range(3)]
    assert rabbit_cluster.recorded_status(cluster.directory) == [
        ('rabbit1@localhost', 11, 'stopped'), ('rabbit2@localhost', 12, 'stopped'),
        ('rabbit3@localhost', 13, 'stopped')]
    with pytest.raises(rabbit_cluster.BrokerError):
        rabbit_cluster.Cluster.load(str(tmp_path / 'nothing'))


def test_stop_recorded_signals_only_the_programs_it_recorded(tmp_path):
    directory = str(tmp_path / 'c')
    os.makedirs(directory)
    # A process that looks like a node's script, and one that does not (a reused PID).
    node = subprocess.Popen(['sh', '-c', 'sleep 30', 'rabbitmq-server'],
                            start_new_session=True)
    stranger = subprocess.Popen(['sleep', '30'])
    try:
        record = {'epmd_pid': stranger.pid, 'epmd_port': 1, 'netns': None,
                  'listen': '127.0.0.1', 'user': 'minisched',
                  'nodes': [{'name': 'rabbit1@localhost', 'port': 11, 'dist_port': 21,
                             'pid': node.pid, 'directory': directory},
                            {'name': 'rabbit2@localhost', 'port': 12, 'dist_port': 22,
                             'pid': stranger.pid, 'directory': directory}]}
        with open(os.path.join(directory, rabbit_cluster.STATE_FILE), 'w') as stream:
            json.dump(record, stream)
        assert [state for _n, _p, state in rabbit_cluster.recorded_status(directory)] == [
            'running', 'stopped']
        started = time.monotonic()
        assert rabbit_cluster.stop_recorded(directory, timeout=5) == 1
        assert time.monotonic() - started < 5
        assert node.wait(timeout=5) is not None
        assert stranger.poll() is None  # neither as a node nor as the epmd
        assert not os.path.exists(directory)
        assert rabbit_cluster.stop_recorded(directory) == 0
    finally:
        for process in (node, stranger):
            if process.poll() is None:
                process.kill()
            process.wait()


class _FlakyNode:
    """A node whose application fails to start ``failures`` times (as two joined nodes
    starting at once may), recording the time left it was given each time."""

    nodename = 'rabbit2@localhost'

    def __init__(self, failures):
        self.failures = failures
        self.timeouts = []

    def start_app(self, timeout):
        self.timeouts.append(timeout)
        if len(self.timeouts) <= self.failures:
            raise rabbit_cluster.BrokerError('rabbitmqctl start_app on %s: exit status 69: '
                                             'Error:\n{:rabbit, {{:killed, ...' % self.nodename)


def test_a_joined_node_that_fails_to_start_is_started_once_more(caplog):
    deadline = time.monotonic() + 100
    node = _FlakyNode(failures=1)
    rabbit_cluster._start_app(node, deadline)
    assert len(node.timeouts) == 2 and all(0 < t <= 100 for t in node.timeouts)
    [record] = caplog.records
    assert record.getMessage() == ('RabbitMQ node rabbit2@localhost did not start (rabbitmqctl '
                                   'start_app on rabbit2@localhost: exit status 69: Error:); '
                                   'trying once more')

    twice = _FlakyNode(failures=2)
    with pytest.raises(rabbit_cluster.BrokerError, match='exit status 69'):
        rabbit_cluster._start_app(twice, deadline)
    assert len(twice.timeouts) == 2
