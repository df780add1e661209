"""The first hour of an operator (issue 37), with the installed console scripts in subprocesses:
where ``minisched-manage`` finds its configuration, what it does without one, its ``--help``,
and what ``minisched-scheduler`` says of a filter name it does not know.

Each test runs with a ``HOME`` of its own (the user's configuration directory and the default
``state_path`` are under it) on real SQLite files; no broker is needed.
"""
import os
import subprocess

import pytest

from tests.functional import base

pytestmark = pytest.mark.functional

TIMEOUT = 120
SYSTEM_FILES = ('/etc/minisched/minisched.conf', '/etc/minisched.conf',
                '/etc/minisched-manage.conf', '/etc/minisched/minisched-manage.conf')


@pytest.fixture
def home(tmp_path):
    found = [path for path in SYSTEM_FILES if os.path.exists(path)]
    if found:
        pytest.skip('this machine has %s, which oslo.config would read' % ', '.join(found))
    path = tmp_path / 'home'
    path.mkdir()
    return path


def run(home, *args, script='minisched-manage', env=None, cwd=None):
    """``(exit code, stdout, stderr)`` of ``script *args`` with ``HOME=home``."""
    environ = dict(os.environ, HOME=str(home), **(env or {}))
    for name in list(environ):
        if name.startswith('OS_') and name not in (env or {}):
            del environ[name]  # oslo.config reads OS_<GROUP>__<OPTION> from the environment
    result = subprocess.run([base.script(script)] + [str(a) for a in args], env=environ,
                            capture_output=True, text=True, timeout=TIMEOUT, cwd=cwd or home)
    return result.returncode, result.stdout, result.stderr


def files_under(path):
    """What is under ``path``, but for stevedore's cache of entry points (``~/.cache``)."""
    return sorted(str(p.relative_to(path)) for p in path.rglob('*')
                  if p.relative_to(path).parts[0] != '.cache')


def write_conf(path, tmp_path, extra=''):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('[database]\nconnection = sqlite:///%s\n[api_database]\nconnection = '
                    'sqlite:///%s\n%s' % (tmp_path / 'cell.db', tmp_path / 'api.db', extra))


# -- 5: no configuration, no database: say so, create nothing ------------------------------

@pytest.mark.parametrize('args', [('service', 'list'), ('server', 'list'), ('db', 'sync'),
                                  ('api_db', 'sync'), ('cell', 'list_cells')])
def test_without_configuration_or_database_manage_says_so_and_creates_nothing(home, args):
    code, out, err = run(home, *args)
    assert (code, out, err.count('\n')) == (1, '', 1), err
    assert err.startswith('minisched-manage: error: no configuration file '), err
    assert '--config-file' in err and '.local/state/minisched/minisched' in err
    assert files_under(home) == []


def test_an_explicit_connection_without_configuration_file_still_syncs(home, tmp_path):
    env = {'OS_DATABASE__CONNECTION': 'sqlite:///%s' % (tmp_path / 'cell.db')}
    assert run(home, 'db', 'sync', env=env)[0] == 0
    code, out, _ = run(home, 'db', 'version', env=env)
    assert code == 0 and out.strip()
    assert (tmp_path / 'cell.db').exists()
    assert not [name for name in files_under(home) if name.endswith('.sqlite')]


def test_the_users_configuration_directory_is_searched(home, tmp_path):
    write_conf(home / '.minisched' / 'minisched.conf', tmp_path)
    assert run(home, 'api_db', 'sync')[0] == 0
    assert run(home, 'db', 'sync')[0] == 0
    assert run(home, 'flavor', 'create', 'm1', '--ram', 64, '--vcpus', 1, '--disk', 0)[0] == 0
    code, out, err = run(home, 'flavor', 'list', '-f', 'value', '-c', 'Name')
    assert (code, out, err) == (0, 'm1\n', '')
    assert (tmp_path / 'api.db').exists()
    assert files_under(home) == ['.minisched', '.minisched/minisched.conf']


def test_config_dir_is_read(home, tmp_path):
    write_conf(tmp_path / 'conf.d' / '10-db.conf', tmp_path)
    assert run(home, '--config-dir', tmp_path / 'conf.d', 'api_db', 'sync')[0] == 0
    assert (tmp_path / 'api.db').exists()
    assert files_under(home) == []


# -- 8: --shell_completion is not offered (--help of every action: tests/unit/cmd) ----------

def test_shell_completion_is_not_offered(home):
    assert '--shell_completion' not in run(home, '--help')[1]
    code, out, err = run(home, '--shell_completion', 'bash')
    assert (code, out) == (2, ''), err
    assert 'minisched-manage: error: ' in err and 'Traceback' not in err, err


# -- 8: an unknown filter lists the filters it could have been ----------------------------

def test_scheduler_with_an_unknown_filter_lists_the_available_ones(home, tmp_path):
    conf = tmp_path / 'minisched.conf'
    write_conf(conf, tmp_path, '[filter_scheduler]\nenabled_filters = RamFilter,RamFilterr\n')
    for category in ('api_db', 'db'):
        assert run(home, '--config-file', conf, category, 'sync')[0] == 0
    code, _out, err = run(home, '--config-file', conf, script='minisched-scheduler')
    assert code == 1
    line = err.strip().splitlines()[-1]
    assert line.startswith('minisched-scheduler: error: Scheduler Host Filter RamFilterr could '
                           'not be found. [filter_scheduler] enabled_filters may name the '
                           'filters of [filter_scheduler] available_filters: '), err
    assert 'RamFilter, RetryFilter' in line and 'ComputeFilter' in line
    assert 'Placement' not in err  # RamFilter starts without Nova's deprecation warning
