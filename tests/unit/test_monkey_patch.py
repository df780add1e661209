"""The concurrency backend of each command: Nova 34's rules (minisched/monkey_patch.py).

What a command chooses is global to its process, so the commands' own choices are checked
in fresh interpreters; the rules themselves (:func:`choose`) in this one.
"""
import os
import subprocess
import sys
import textwrap

import pytest

from minisched import monkey_patch

#: Prints, from a fresh interpreter that imported MODULE: whether eventlet patched the
#: process, oslo.service's backend, and whether eventlet can still be imported.
PROBE = textwrap.dedent('''
    import sys
    import {module}
    patched = False
    if 'eventlet' in sys.modules:
        from eventlet import patcher
        patched = patcher.is_monkey_patched('thread')
    from oslo_service import backend
    try:
        import eventlet  # noqa: F401
        importable = True
    except ImportError:
        importable = False
    chosen = backend.get_backend_type()
    print(patched, chosen.value if chosen else 'unset', importable)
''')


def probe(module, argv=(), env=None):
    environ = {k: v for k, v in os.environ.items() if k != monkey_patch.ENV}
    environ.update(env or {})
    result = subprocess.run(
        [sys.executable, '-c', PROBE.format(module=module), *argv], capture_output=True,
        text=True, env=environ, cwd=os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))), timeout=120)
    return result


def backend_of(module, argv=(), env=None):
    result = probe(module, argv, env)
    assert result.returncode == 0, result.stderr
    patched, service_backend, importable = result.stdout.split()
    return patched == 'True', service_backend, importable == 'True'


def write_conf(tmp_path, text, name='minisched.conf'):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


class TestCommandsDefaults:
    def test_importing_the_commands_package_patches_nothing(self):
        assert backend_of('minisched.cmd') == (False, 'unset', True)

    @pytest.mark.parametrize('command', ['scheduler', 'compute', 'conductor', 'cluster'])
    def test_services_and_the_cluster_tool_run_native_threads(self, command):
        patched, service_backend, importable = backend_of('minisched.cmd.%s' % command)
        assert (patched, service_backend, importable) == (False, 'threading', False)

    def test_manage_runs_eventlet_as_nova_manage_does(self):
        assert backend_of('minisched.cmd.manage') == (True, 'eventlet', True)


class TestEnvironment:
    @pytest.mark.parametrize('value', ['1', 'true', 'YES'])
    def test_true_values_choose_threads_even_for_manage(self, value):
        patched, service_backend, _ = backend_of('minisched.cmd.manage',
                                                 env={monkey_patch.ENV: value})
        assert (patched, service_backend) == (False, 'threading')

    @pytest.mark.parametrize('value', ['0', 'false', 'no'])
    def test_other_values_choose_eventlet(self, value):
        patched, service_backend, _ = backend_of('minisched.cmd.scheduler',
                                                 env={monkey_patch.ENV: value})
        assert (patched, service_backend) == (True, 'eventlet')

    def test_the_environment_wins_over_the_option(self, tmp_path):
        conf = write_conf(tmp_path, '[DEFAULT]\nconcurrency_backend = eventlet\n')
        patched, _, _ = backend_of('minisched.cmd.scheduler', ['--config-file', conf],
                                   env={monkey_patch.ENV: '1'})
        assert not patched


class TestOption:
    def test_eventlet_in_the_config_file_patches_a_service(self, tmp_path):
        conf = write_conf(tmp_path, '[DEFAULT]\nconcurrency_backend = eventlet\n')
        assert backend_of('minisched.cmd.scheduler',
                          ['--config-file', conf])[:2] == (True, 'eventlet')

    def test_threading_in_a_config_dir_keeps_manage_on_threads(self, tmp_path):
        write_conf(tmp_path, '[DEFAULT]\nconcurrency_backend = threading\n', 'backend.conf')
        assert backend_of('minisched.cmd.manage',
                          ['--config-dir', str(tmp_path)])[:2] == (False, 'threading')

    def test_auto_keeps_the_command_default(self, tmp_path):
        conf = write_conf(tmp_path, '[DEFAULT]\nconcurrency_backend = auto\n')
        assert backend_of('minisched.cmd.conductor',
                          ['--config-file=%s' % conf])[:2] == (False, 'threading')

    def test_a_bad_value_stops_the_command_with_one_line(self, tmp_path):
        conf = write_conf(tmp_path, '[DEFAULT]\nconcurrency_backend = greenlets\n')
        result = probe('minisched.cmd.scheduler', ['--config-file', conf])
        assert result.returncode == 1
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert 'concurrency_backend' in lines[0] and 'greenlets' in lines[0]

    def test_the_exported_config_file_is_read_early_too(self, tmp_path):
        conf = write_conf(tmp_path, '[DEFAULT]\nconcurrency_backend = eventlet\n')
        assert backend_of('minisched.cmd.scheduler',
                          env={'MINISCHED_CONFIG_FILE': conf})[:2] == (True, 'eventlet')
        # ... unless a file is given: the arguments win.
        given = write_conf(tmp_path, '[DEFAULT]\n', 'given.conf')
        assert backend_of('minisched.cmd.scheduler', ['--config-file', given],
                          env={'MINISCHED_CONFIG_FILE': conf})[:2] == (False, 'threading')

    @pytest.mark.parametrize('exported', [False, True])
    def test_a_missing_file_is_named_not_the_option(self, tmp_path, exported):
        missing = str(tmp_path / 'nowhere.conf')
        result = probe('minisched.cmd.conductor', [] if exported else ['--config-file', missing],
                       env={'MINISCHED_CONFIG_FILE': missing} if exported else None)
        assert result.returncode == 1
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert 'concurrency_backend' not in lines[0] and missing in lines[0]
        assert ('MINISCHED_CONFIG_FILE' in lines[0]) == exported


class TestChoose:
    """The rules, in this process (no patching: ``choose`` only decides)."""

    def test_config_file_args_keeps_only_the_config_arguments(self):
        argv = ['db', 'sync', '--config-file', 'a.conf', '--verbose', '--config-dir=d',
                '--config-file=b.conf', 'version', '--config-dir']
        assert monkey_patch.config_file_args(argv) == [
            '--config-file', 'a.conf', '--config-dir=d', '--config-file=b.conf',
            '--config-dir']

    def test_an_empty_variable_falls_back_to_the_option(self, tmp_path):
        conf = write_conf(tmp_path, '[DEFAULT]\nconcurrency_backend = eventlet\n')
        assert monkey_patch.choose('threading', environ={monkey_patch.ENV: ' '},
                                   argv=['--config-file', conf]) == 'eventlet'

    def test_sub_command_arguments_do_not_disturb_the_early_parse(self, tmp_path):
        conf = write_conf(tmp_path, '[DEFAULT]\nconcurrency_backend = threading\n')
        assert monkey_patch.choose('eventlet', environ={},
                                   argv=['cell', 'list', '--verbose', '--config-file',
                                         conf]) == 'threading'

    def test_an_unknown_default_is_a_programming_error(self):
        with pytest.raises(ValueError):
            monkey_patch.choose('asyncio', environ={})

    def test_this_test_process_embeds_minisched_on_native_threads(self):
        assert monkey_patch.backend() == 'threading'
        assert monkey_patch.patch() == 'threading'  # embed() decided; patch changes nothing
        assert not monkey_patch.is_patched()
