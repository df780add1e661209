"""minisched-cluster with RabbitMQ nodes of its own (``--rabbit-nodes``), without starting
them: the config it writes, the broker probe, and what ``up`` refuses."""
import io
import os

import pytest

from minisched import localcluster
from tests.unit import base

cluster_cmd = base.import_without_eventlet('minisched.cmd.cluster')

URL = 'rabbit://u:p1@127.0.0.1:5701,u:p1@127.0.0.1:5702,u:p1@127.0.0.1:5703/'


def _cluster(tmp_path, **kwargs):
    return localcluster.LocalCluster(str(tmp_path / 'state'), computes=1, out=io.StringIO(),
                                     transport_url=URL, **kwargs)


def _lines(cluster):
    with open(cluster.config_file) as handle:
        return handle.read().splitlines()


def test_services_of_a_cluster_with_its_own_nodes_use_quorum_queues(tmp_path):
    cluster = _cluster(tmp_path, rabbit_nodes=3)
    cluster.write_config()
    lines = _lines(cluster)
    assert 'transport_url = %s' % URL in lines
    section = lines.index('[oslo_messaging_rabbit]')
    assert lines[section + 1:section + 5] == [
        'rabbit_quorum_queue = true', 'rabbit_transient_quorum_queue = true',
        'rabbit_stream_fanout = true', 'rabbit_qos_prefetch_count = 100']
    assert cluster.rabbit_dir == os.path.join(cluster.state_dir, 'rabbit')


def test_other_clusters_keep_the_library_defaults(tmp_path):
    for kwargs, fake in (({}, False), ({'rabbit_nodes': 3}, True)):
        cluster = _cluster(tmp_path / str(fake), **kwargs)
        cluster.write_config(fake=fake)
        assert '[oslo_messaging_rabbit]' not in _lines(cluster)


def test_the_probe_tries_every_host_of_a_cluster_url(monkeypatch):
    tried = []

    class Connection:
        def __init__(self, params):
            tried.extend((p.host, p.port, p.virtual_host, p.credentials.username,
                          p.credentials.password) for p in params)

        def close(self):
            pass
    monkeypatch.setattr('pika.BlockingConnection', Connection)
    assert localcluster.probe_rabbit('rabbit://u:p%40ss@h1:5701,v:w@h2/vh')
    assert tried == [('h1', 5701, 'vh', 'u', 'p@ss'), ('h2', 5672, 'vh', 'v', 'w')]


def test_up_refuses_a_state_dir_whose_detached_cluster_runs(tmp_path, monkeypatch, capsys):
    state = str(tmp_path / 'state')
    monkeypatch.setattr(localcluster.LocalCluster, 'running_services',
                        lambda self: {'conductor': 12345})
    stopped = []
    monkeypatch.setattr(localcluster.LocalCluster, 'stop_processes',
                        lambda self, pids=None: stopped.append(pids))
    for command in (['up', '--detach'], ['demo']):
        assert cluster_cmd.main(['--state-dir', state, '--rabbit-nodes', '3'] + command) == 1
        assert 'stop it first' in capsys.readouterr().err
    assert stopped == []  # its record of PIDs is left alone


def test_negative_node_counts_are_refused(capsys):
    with pytest.raises(SystemExit) as exited:
        cluster_cmd.main(['--rabbit-nodes', '-1', 'up'])
    assert exited.value.code == 2
    assert '--rabbit-nodes must not be negative' in capsys.readouterr().err
