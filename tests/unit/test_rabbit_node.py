"""``minisched.localcluster.rabbit_node`` without starting RabbitMQ: a lone node's files, the
environment that keeps the machine's broker out, commands in a namespace."""
import os
import stat
import subprocess

import pytest

from minisched.localcluster import rabbit_node


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_lone_node_has_a_cookie_of_its_own(tmp_path):
    node = rabbit_node.Node(str(tmp_path / 'n'), name='solo', port=5998, dist_port=25998)
    node.prepare()
    assert _mode(node.path('.erlang.cookie')) == 0o400
    assert len(open(node.path('.erlang.cookie')).read()) == 32


def test_environment_keeps_the_machine_broker_out(tmp_path):
    node = rabbit_node.Node(str(tmp_path / 'n'), name='x', port=1, dist_port=2,
                               cookie_home='/cookies', epmd_port=4444)
    environ = node.environ()
    assert environ['HOME'] == '/cookies'
    assert environ['RABBITMQ_NODENAME'] == 'x@localhost'
    assert environ['ERL_EPMD_PORT'] == '4444'
    assert environ['RABBITMQ_DIST_PORT'] == '2'
    for key in ('RABBITMQ_CONFIG_FILE', 'RABBITMQ_CONF_ENV_FILE', 'RABBITMQ_MNESIA_BASE',
                'RABBITMQ_ENABLED_PLUGINS_FILE', 'RABBITMQ_PID_FILE'):
        assert environ[key].startswith(str(tmp_path)), key
    alone = rabbit_node.Node(str(tmp_path / 'm'), port=1, dist_port=2).environ()
    assert alone.get('ERL_EPMD_PORT') == os.environ.get('ERL_EPMD_PORT')


def test_commands_run_in_a_namespace_when_given_one():
    assert rabbit_node.netns_command(None, ['a', 'b']) == ['a', 'b']
    assert rabbit_node.netns_command('lab-mq', ['a']) == ['ip', 'netns', 'exec',
                                                              'lab-mq', 'a']


def test_a_process_just_started_is_recognised_by_its_program():
    # Popen returns while the child may still be inside execve, its command line empty for
    # an instant (about every other time on Linux): that is not another program.
    processes = [subprocess.Popen(['sh', '-c', 'sleep 30', 'rabbitmq-server'],
                                  start_new_session=True) for _ in range(20)]
    try:
        seen = [rabbit_node.running(process.pid, 'rabbitmq-server') for process in processes]
    finally:
        for process in processes:
            process.kill()
            process.wait()
    assert seen == [True] * 20
    assert not rabbit_node.running(processes[0].pid, 'rabbitmq-server')  # gone


def test_a_kernel_thread_runs_no_program_and_is_told_at_once():
    # PID 2 is kthreadd on Linux (outside a PID namespace): its command line stays empty.
    with open('/proc/2/stat') as stream:
        if '(kthreadd)' not in stream.read():
            pytest.skip('PID 2 is not kthreadd here')
    assert not rabbit_node.running(2, '')
