"""Commands run with no configuration at all say what to give them, and touch nothing.

Without a configuration file the embedded defaults name SQLite files under ``state_path``
and RabbitMQ's root vhost on localhost, where no cluster lives: a service would create an
empty database there, and the tap would wait on a vhost nobody uses.
"""
import os
import subprocess
import sys

from minisched.cmd import manage_flavor


def _run(module, *args, home):
    env = dict(os.environ, HOME=str(home))
    for name in ('MINISCHED_CONFIG_FILE', 'OS_DEFAULT__TRANSPORT_URL', 'OS_DATABASE__CONNECTION',
                 'OS_API_DATABASE__CONNECTION'):
        env.pop(name, None)
    return subprocess.run([sys.executable, '-m', module] + list(args), capture_output=True,
                          text=True, timeout=120, env=env, cwd=str(home))


def test_a_service_without_configuration_creates_no_database(tmp_path):
    result = _run('minisched.cmd.scheduler', home=tmp_path)

    assert result.returncode == 1
    assert result.stderr.count('\n') == 1, result.stderr
    assert 'no configuration file' in result.stderr and '--config-file' in result.stderr
    assert [name for _d, _s, names in os.walk(tmp_path) for name in names
            if name.endswith('.sqlite')] == []


def test_rpc_tap_without_configuration_refuses_to_tap_the_root_vhost(tmp_path):
    result = _run('minisched.cmd.manage', 'rpc', 'tap', '--timeout', '5', home=tmp_path)

    assert result.returncode == 1
    assert result.stderr.startswith('rpc tap: no configuration: give --config-file'), \
        result.stderr
    assert 'vhost /' in result.stderr


def test_a_deleted_vhost_points_at_the_clusters_status():
    detail = "Connection.open: (530) NOT_ALLOWED - vhost minisched-cluster-x not found"
    assert 'is the cluster running? minisched-cluster status' in manage_flavor._hint(detail)
    assert 'is RabbitMQ running' in manage_flavor._hint('[Errno 111] Connection refused')
    assert manage_flavor._hint('something else') == ''
