"""``minisched-manage --help`` of every category and action (issue 37): plain option names,
no ``ACTION_KWARG_`` destinations, no ``--shell_completion``, and the output options of
the commands that print tables."""
import os
import subprocess
import sys

import pytest
from oslo_config import cfg

from minisched import monkey_patch
from tests.unit import base

manage = base.import_without_eventlet('minisched.cmd.manage')

#: Categories -> actions, read from ``--help`` itself so that a new action is covered.
CATEGORIES = ('db', 'api_db', 'service') + manage.EXTRA_CATEGORIES
DISPLAYS = {('service', 'list'), ('flavor', 'list'), ('flavor', 'create'), ('flavor', 'set'),
            ('group', 'list'), ('group', 'show'), ('group', 'create'), ('aggregate', 'list'),
            ('aggregate', 'create'), ('aggregate', 'set'), ('aggregate', 'add-host'),
            ('aggregate', 'remove-host'), ('server', 'list'), ('server', 'show'),
            ('scheduler', 'select'), ('scheduler', 'snapshot'), ('scheduler', 'replay')}


@pytest.fixture
def help_of(capsys):
    def help_of(*args):
        cfg.CONF.reset()
        try:
            with pytest.raises(SystemExit) as caught:
                manage.main(['minisched-manage'] + list(args) + ['--help'])
        finally:
            cfg.CONF.reset()
            cfg.CONF.unregister_opt(manage.CATEGORY_OPT)
        out, err = capsys.readouterr()
        assert (caught.value.code, err) == (0, ''), (args, err)
        return out
    return help_of


def _actions(help_text):
    listing = help_text.split('positional arguments:')[1].split('options:')[0]
    names = [line.split()[0] for line in listing.splitlines()
             if line.startswith('    ') and not line.startswith('      ')]
    return names


def test_every_help_is_clean(help_of):
    top = help_of()
    assert '--shell_completion' not in top and 'shell-completion' not in top
    seen = set()
    for category in CATEGORIES:
        actions = _actions(help_of(category))
        assert actions, category
        for action in actions:
            text = help_of(category, action)
            seen.add((category, action))
            assert 'usage: minisched-manage %s %s' % (category, action) in text
            assert 'action_kwarg' not in text.lower(), (category, action, text)
            # help text, here and in the man pages, is plain: no reST markup leaks into it
            assert '``' not in text and ':func:`' not in text, (category, action, text)
            assert ('-f {' in text) == ((category, action) in DISPLAYS), (category, action)
    assert DISPLAYS <= seen


def test_list_help_offers_openstacks_output_options(help_of):
    text = help_of('server', 'list')
    for option in ('-f {csv,json,table,value,yaml}', '-c COLUMN', '--sort-column SORT_COLUMN',
                   '--sort-ascending', '--sort-descending', '--all-projects', '--host HOST'):
        assert option in text, option
    assert '--all ' not in text  # the deprecated spelling works, unadvertised
    assert '--long' in text  # as the openstack client's
    assert 'Instance name or UUID' in help_of('server', 'show')
    assert 'Instance name or UUID' in help_of('server', 'delete')


@pytest.fixture
def manage_cmd(tmp_path):
    """``minisched-manage --config-file`` of a synced API database, in a process of its own."""
    conf = tmp_path / 'minisched.conf'
    conf.write_text('[api_database]\nconnection = sqlite:///%s\n' % (tmp_path / 'api.sqlite'))
    command = [sys.executable, '-m', 'minisched.cmd.manage', '--config-file', str(conf)]
    subprocess.run(command + ['api_db', 'sync'], check=True, capture_output=True, timeout=120)
    return command


def test_a_reader_that_stopped_ends_the_command_quietly(manage_cmd):
    # As 'minisched-manage flavor create ... | head -1' once its reader has gone.
    read, write = os.pipe()
    os.close(read)
    try:
        result = subprocess.run(manage_cmd + ['flavor', 'create', '--ram', '64', '--vcpus',
                                              '1', '--disk', '0', 'tiny'],
                                stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert (result.returncode, result.stderr) == (1, '')


@pytest.mark.parametrize('args', [
    ['--help'],  # argparse swallows the write error: the exit status was 0
    ['cell', 'list'],  # print_table
    ['flavor', 'list'],  # a cliff lister
])
def test_output_that_cannot_be_written_is_one_line_and_status_1(manage_cmd, args):
    subprocess.run(manage_cmd + ['flavor', 'create', '--ram', '64', '--vcpus', '1', '--disk',
                                 '0', 'tiny'], check=True, capture_output=True, timeout=120)
    with open('/dev/full', 'w') as full:
        result = subprocess.run(manage_cmd + args, stdout=full, stderr=subprocess.PIPE,
                                text=True, timeout=120,
                                env=dict(os.environ, PYTHONWARNINGS='ignore'))
    assert (result.returncode, result.stderr) == (
        1, 'Cannot write to standard output: No space left on device\n')


def _manage(*args, env=None):
    import os
    import subprocess
    import sys
    return subprocess.run([sys.executable, '-m', 'minisched.cmd.manage'] + list(args),
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, **(env or {})))


def test_a_mistyped_category_gets_one_line_with_the_closest_name(tmp_path):
    conf = tmp_path / 'minisched.conf'
    conf.write_text('')
    result = _manage('--config-file', str(conf), 'sever', 'list')
    assert result.returncode == 2
    assert result.stderr.splitlines() == [result.stderr.strip()], result.stderr
    assert "unknown category 'sever'; did you mean 'server'?" in result.stderr
    assert "did you mean" not in _manage('xyzzy').stderr


def test_nova_manage_spelling_of_the_cell_category_is_accepted(help_of):
    assert 'discover_hosts' in help_of('cell_v2')
    assert manage.unknown_category(['minisched-manage', '--config-file', 'f', 'cell_v2',
                                    'discover_hosts']) is None
    assert manage.unknown_category(['minisched-manage', '--debug', 'cel']) == 'cel'


def test_the_category_names_are_the_categories_built():
    built = [name for name, _help, _builder in manage._category_builders()]
    assert sorted(manage.category_names()) == sorted(
        built + [alias for aliases in manage.CATEGORY_ALIASES.values() for alias in aliases])
    assert manage.canonical_category('cell_v2') == 'cell'
    assert manage.canonical_category('flavor') == 'flavor'


def test_a_command_builds_its_own_category_only():
    """``minisched-manage service ...`` imports no other category's module (the scheduler's
    replay, the filters...): a third of the CPU of a short command went on them."""
    code = ('import sys\n'
            'from minisched.cmd import manage\n'
            'try:\n'
            '    manage.main(["minisched-manage", "cell_v2", "--help"])\n'
            'except SystemExit:\n'
            '    pass\n'
            'print(sorted(m for m in sys.modules if m.startswith("minisched.cmd.manage_")))\n')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            check=True, env=dict(os.environ, **{monkey_patch.ENV: '1'}))
    assert 'list_cells' in result.stdout
    assert result.stdout.strip().splitlines()[-1] == \
        "['minisched.cmd.manage_cell', 'minisched.cmd.manage_display']"
