"""minisched-cluster's command line and state directory, without starting a cluster: options
before or after the command, what ``demo`` and ``up`` do with an earlier state, the env file,
the vhost URL helpers and the refusal of a broker whose queues are in use."""
import argparse
import io
import os
import subprocess
import sys

import pytest

from minisched import localcluster
from minisched import monkey_patch
from minisched.localcluster import broker
from tests.unit import base

cluster_cmd = base.import_without_eventlet('minisched.cmd.cluster')

COMMON = ['--state-dir', 'sd', '--transport-url', 'rabbit://u:p@h:5672/v', '--computes', '4',
          '--rabbit-nodes', '0']


@pytest.mark.parametrize('command', ['up', 'demo', 'status', 'down'])
def test_common_options_work_before_or_after_the_command(command):
    before = cluster_cmd.parse_args(COMMON + [command])
    after = cluster_cmd.parse_args([command] + COMMON)
    for args in (before, after):
        assert (args.state_dir, args.transport_url, args.computes, args.rabbit_nodes) == (
            'sd', 'rabbit://u:p@h:5672/v', 4, 0)
    # Given before the command, not reset to a default by the command's own parser.
    mixed = cluster_cmd.parse_args(['--computes', '5', command, '--state-dir', 'x'])
    assert (mixed.computes, mixed.state_dir) == (5, 'x')


def test_the_readme_command_is_accepted():
    args = cluster_cmd.parse_args(['up', '--detach', '--computes', '4'])
    assert (args.command, args.detach, args.computes, args.fresh) == ('up', True, 4, False)
    assert cluster_cmd.parse_args(['down', '--purge']).purge
    assert cluster_cmd.parse_args(['demo']).state_dir is None  # a temporary one


@pytest.mark.parametrize('command', ['up', 'demo', 'status', 'down'])
def test_each_command_help_lists_the_common_options(command, capsys):
    with pytest.raises(SystemExit):
        cluster_cmd.parse_args([command, '--help'])
    out = capsys.readouterr().out
    for option in ('--state-dir', '--transport-url', '--computes', '--rabbit-nodes'):
        assert option in out, (command, option)


@pytest.mark.parametrize('argv, message', [
    (['demo', '--computes', '0'], '--computes must be at least 1'),
    (['demo', '--instances', '0'], '--instances must be at least 1'),
    (['up', '--rabbit-nodes', '3', '--transport-url', 'rabbit://h/'],
     '--rabbit-nodes and --transport-url exclude each other'),
])
def test_bad_combinations_are_refused_in_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exited:
        cluster_cmd.parse_args(argv)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def _cluster(path):
    return localcluster.LocalCluster(str(path), computes=2, out=io.StringIO(),
                                     transport_url='rabbit://u:p@127.0.0.1:5672/')


def _args(command, fresh=False):
    return argparse.Namespace(command=command, fresh=fresh)


def _said(cluster):
    return cluster.out.getvalue()


def test_demo_starts_from_a_clean_state_dir_and_says_so(tmp_path):
    cluster = _cluster(tmp_path / 'state')
    cluster.write_config()
    open(os.path.join(cluster.state_dir, 'minisched.sqlite'), 'w').close()
    cluster_cmd._prepare_state(cluster, _args('demo'), temporary=False)
    assert not os.path.exists(cluster.state_dir)
    assert _said(cluster) == 'Removed the earlier cluster state in %s.\n' % cluster.state_dir


def test_up_says_it_reuses_a_state_dir_and_fresh_wipes_it(tmp_path):
    cluster = _cluster(tmp_path / 'state')
    cluster_cmd._prepare_state(cluster, _args('up'), temporary=False)
    assert _said(cluster) == ''  # nothing to reuse
    cluster.write_config()
    cluster_cmd._prepare_state(cluster, _args('up'), temporary=False)
    assert _said(cluster).startswith('Reusing the state directory %s (its databases'
                                     % cluster.state_dir)
    assert os.path.exists(cluster.config_file)
    cluster_cmd._prepare_state(cluster, _args('up', fresh=True), temporary=False)
    assert not os.path.exists(cluster.state_dir)


def test_purge_refuses_a_directory_that_is_not_a_cluster_state(tmp_path):
    cluster = _cluster(tmp_path)
    (tmp_path / 'thesis.tex').write_text('years of work')
    with pytest.raises(localcluster.StateDirError, match='holds no minisched-cluster state'):
        cluster.purge()
    assert (tmp_path / 'thesis.tex').exists()
    assert not _cluster(tmp_path / 'missing').purge()


def test_the_env_file_points_minisched_manage_at_the_cluster(tmp_path):
    cluster = _cluster(tmp_path / "it's here")
    cluster.write_config()
    path = cluster.write_env_file()
    assert path == os.path.join(cluster.state_dir, 'minisched.env')
    assert os.stat(path).st_mode & 0o777 == 0o600
    # Sourced by a script (no aliases there; the directory's name has a quote and a space),
    # minisched-manage then works on the cluster's databases: the API one appears where
    # the cluster's configuration puts it, and nothing under the default state path.
    home = tmp_path / 'home'
    home.mkdir()
    env = dict(os.environ, HOME=str(home))
    env.pop(monkey_patch.CONFIG_FILE_ENV, None)
    shell = subprocess.run(
        ['bash', '-c', 'source "$1"; printf "%s\\n" "$MINISCHED_CONFIG_FILE"; '
         '"$2" -m minisched.cmd.manage api_db sync', 'bash', path, sys.executable],
        capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert shell.returncode == 0, shell.stderr
    assert shell.stdout.splitlines()[0] == cluster.config_file
    databases = sorted(name for name in os.listdir(cluster.state_dir)
                       if name.endswith('.sqlite'))
    assert databases, os.listdir(cluster.state_dir)
    assert not (home / '.local').exists()


def test_a_config_file_given_wins_over_the_environment(tmp_path):
    given, exported = str(tmp_path / 'given.conf'), str(tmp_path / 'exported.conf')
    env = {monkey_patch.CONFIG_FILE_ENV: exported}
    assert monkey_patch.env_config_files([], env) == [exported]
    assert monkey_patch.env_config_files(['--config-file', given], env) is None
    assert monkey_patch.env_config_files(['--config-dir=%s' % tmp_path], env) is None
    assert monkey_patch.env_config_files([], {monkey_patch.CONFIG_FILE_ENV: ' '}) is None
    # A file that is not there: one line naming it, exit 1.
    result = subprocess.run([sys.executable, '-m', 'minisched.cmd.manage', 'service', 'list'],
                            capture_output=True, text=True,
                            env=dict(os.environ, **env, HOME=str(tmp_path)))
    assert result.returncode == 1, result
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert exported in result.stderr


def test_the_recorded_vhost_keeps_no_password(tmp_path):
    cluster = _cluster(tmp_path / 'state')
    cluster.transport_url = 'rabbit://u:secret@127.0.0.1:5672,v:other@h2:5673/'
    cluster.record_vhost('minisched-cluster-x')
    text = open(os.path.join(cluster.state_dir, localcluster.VHOST_FILE)).read()
    assert 'secret' not in text and 'other' not in text
    assert cluster.recorded_vhost() == {
        'vhost': 'minisched-cluster-x', 'transport_url': 'rabbit://u@127.0.0.1:5672,v@h2:5673/'}


def test_vhost_urls():
    url = 'rabbit://u:p%40@h1:5672,u:p%40@h2:5673/old?ssl=1'
    assert broker.with_vhost(url, 'a/b') == 'rabbit://u:p%40@h1:5672,u:p%40@h2:5673/a%2Fb?ssl=1'
    assert broker.vhost_of(broker.with_vhost(url, 'a/b')) == 'a/b'
    assert broker.vhost_of('rabbit://h/') == '/'
    assert broker.user_of(url) == 'u'
    assert broker.user_of('rabbit://h/') == 'guest'
    assert broker.rabbitmqctl_for('rabbit://u:p@192.0.2.1:5672/') is None
    assert broker.topic_queues(['c1', 'c2']) == ['conductor', 'scheduler', 'compute',
                                                 'compute.c1', 'compute.c2']


def test_busy_queues_are_named_with_what_to_do(tmp_path, monkeypatch):
    cluster = _cluster(tmp_path)
    asked = []

    def busy(url, queues):
        asked.append((url, queues))
        return {'conductor': 1, 'compute.compute1': 2}
    monkeypatch.setattr(broker, 'busy_queues', busy)
    url = 'rabbit://u:p@127.0.0.1:5672/'
    with pytest.raises(RuntimeError) as raised:
        cluster_cmd._refuse_busy_queues(cluster, url, explicit=True)
    assert asked == [(url, broker.topic_queues(['compute1', 'compute2']))]
    message = str(raised.value)
    assert message.startswith('the queues this cluster would consume from already have '
                              'consumers on vhost / of rabbit://u:****@127.0.0.1:5672/: '
                              'compute.compute1 (2), conductor (1).')
    assert 'rabbitmqctl add_vhost NAME' in message
    assert '--transport-url rabbit://u:****@127.0.0.1:5672/NAME' in message
    monkeypatch.setattr(broker, 'busy_queues', lambda url, queues: {})
    cluster_cmd._refuse_busy_queues(cluster, url, explicit=False)  # nothing in use: fine


def test_a_cluster_in_this_process_is_recorded_as_running_here(tmp_path):
    cluster = _cluster(tmp_path / 'state')
    cluster.make_state_dir()
    cluster.record_in_process()
    assert cluster.running_services() == {name: os.getpid() for name in (
        'conductor', 'scheduler', 'compute1', 'compute2')}
    cluster.forget_pids()
    assert cluster.running_services() == {}


def test_a_recorded_vhost_is_forgotten_once_deleted(tmp_path):
    cluster = _cluster(tmp_path / 'state')
    assert cluster.delete_vhost() is None  # none recorded
    cluster.transport_url = 'rabbit://u:p@192.0.2.1:5672/'  # no rabbitmqctl reaches it
    cluster.record_vhost('minisched-cluster-old')
    assert cluster.delete_vhost() == 'minisched-cluster-old'
    assert cluster.recorded_vhost() is None
    assert not os.path.exists(os.path.join(cluster.state_dir, localcluster.VHOST_FILE))


def test_the_directory_beside_the_exported_file_is_read_after_it(tmp_path):
    exported = tmp_path / 'minisched.conf'
    exported.write_text('[DEFAULT]\nconcurrency_backend = threading\n')
    assert monkey_patch.env_config_dirs([str(exported)]) is None  # none there yet
    (tmp_path / 'minisched.conf.d').mkdir()
    (tmp_path / 'minisched.conf.d' / 'mine.conf').write_text(
        '[DEFAULT]\nconcurrency_backend = eventlet\n')
    assert monkey_patch.env_config_dirs([str(exported)]) == [str(exported) + '.d']
    result = subprocess.run(
        [sys.executable, '-c', 'from minisched import monkey_patch; '
         'print(monkey_patch.backend_from_config([]))'],
        capture_output=True, text=True,
        env=dict(os.environ, **{monkey_patch.CONFIG_FILE_ENV: str(exported)}))
    assert result.stdout.strip() == 'eventlet', result
