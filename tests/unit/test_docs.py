"""The documentation cannot drift: it builds without a warning, its configuration reference
lists every option the services register, its CLI reference every command, and nothing in
the repository points at files a clone does not have.

The build needs Sphinx (the ``test`` and ``docs`` extras install it): without it these tests
skip, loudly, and fail under ``CI=true``.
"""
import argparse
import fcntl
import html
import json
import os
import re
import subprocess
import sys

import pytest

from tests.unit import base
from tests.unit.conf import test_sample_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = os.path.join(ROOT, 'doc', 'source')
#: The man pages conf.py declares, one per command minisched installs.
COMMANDS = ('minisched-manage', 'minisched-cluster', 'minisched-scheduler',
            'minisched-conductor', 'minisched-compute')
#: Seconds the two builds may take together (about 15 on an idle 2-core VM).
BUILD_TIMEOUT = 240


def _require_sphinx():
    try:
        import sphinx  # noqa: F401
    except ImportError:
        message = ('*** Sphinx is not installed: the documentation build is not tested '
                   "(pip install -e '.[test]') ***")
        if os.environ.get('CI', '').lower() == 'true':
            pytest.fail(message)
        pytest.skip(message)


def _build(out):
    """``{builder: (output dir, exit status, stderr)}`` of the html and man builds, run as
    ``tox -e docs`` runs them: warnings are errors."""
    doctrees = os.path.join(out, 'doctrees')  # the man build reuses what html parsed
    results = {}
    for builder in ('html', 'man'):
        target = os.path.join(out, builder)
        result = subprocess.run(
            [sys.executable, '-m', 'sphinx', '-W', '--keep-going', '-q', '-d', doctrees,
             '-b', builder, SOURCE, target],
            capture_output=True, text=True, timeout=BUILD_TIMEOUT, cwd=ROOT)
        results[builder] = (target, result.returncode, result.stderr)
    return results


@pytest.fixture(scope='module')
def built(tmp_path_factory):
    """The builds of :func:`_build`, made once per test run: the pytest-xdist workers that
    get tests of this module share one build (xdist's own recipe: a lock in the run's
    common temporary directory) instead of each building again."""
    _require_sphinx()
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get('PYTEST_XDIST_WORKER'):
        shared = shared.parent  # the run's directory, above each worker's own
    with open(shared / 'docs-build.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record = shared / 'docs-build.json'
        if not record.exists():
            record.write_text(json.dumps(_build(str(shared / 'docs'))))
        return json.loads(record.read_text())


def _read(path):
    with open(path, encoding='utf-8') as f:
        return f.read()


@pytest.mark.parametrize('builder', ['html', 'man'])
def test_docs_build_without_warnings(built, builder):
    _, returncode, stderr = built[builder]
    assert returncode == 0, 'sphinx-build -W -b %s failed:\n%s' % (builder, stderr[-6000:])
    # nothing else on stderr either: the build runs native threads, as the services do
    assert stderr.strip() == '', stderr[-6000:]


def test_html_uses_the_openstack_docs_theme(built):
    target, _, _ = built['html']
    page = _read(os.path.join(target, 'index.html'))
    assert 'openstackdocstheme' in page or '_static/css/combined.css' in page, page[:2000]
    assert 'alabaster' not in page


#: Characters a code block's line may have: what the openstackdocs theme's column shows at
#: 14 px monospace without a scroll bar on a 1200 px wide window (its content column is 3/4
#: of a 1140 px container, less the block's padding).
CODE_COLUMNS = 88


def _literal_block_lines(text):
    """``(line number, line)`` of each line of the literal blocks of an rst text (``::`` and
    ``.. code-block::``), without the block's indentation."""
    found, indent = [], None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if indent is not None and stripped:
            depth = len(line) - len(line.lstrip())
            if depth <= indent:
                indent = None
            else:
                found.append((number, line[indent + 3:]))
                continue
        if re.match(r'\s*\.\. (code-block|parsed-literal)::', line) or (
                stripped.endswith('::') and not stripped.startswith('..')):
            indent = len(line) - len(line.lstrip())
    return found


def test_code_blocks_fit_the_column():
    too_wide = []
    for directory, _dirs, names in os.walk(SOURCE):
        for name in names:
            if name.endswith(('.rst', '.inc')):
                path = os.path.join(directory, name)
                too_wide += ['%s:%d (%d)' % (os.path.relpath(path, SOURCE), number, len(line))
                             for number, line in _literal_block_lines(_read(path))
                             if len(line) > CODE_COLUMNS]
    assert too_wide == []


def test_every_command_has_a_man_page(built):
    target, _, _ = built['man']
    for command in COMMANDS:
        page = os.path.join(target, '%s.1' % command)
        assert os.path.exists(page), 'no man page %s.1' % command
        assert '%s \\-' % command in _read(page)  # NAME: "command \- summary"


def test_configuration_reference_lists_every_registered_option(built):
    from oslo_config import generator

    # the namespaces of etc/minisched/minisched-config-generator.conf, as the generator reads it
    namespaces = test_sample_config._generator_conf().namespace
    assert 'minisched' in namespaces
    target, _, _ = built['html']
    page = html.unescape(_read(os.path.join(target, 'configuration', 'config.html')))
    anchors = set(re.findall(r'id="([^"]+)"', page))
    missing = ['[%s] %s (%s)' % (group, opt.dest, namespace)
               for namespace, groups in generator._list_opts(namespaces)
               for group, opts in groups
               for opt in opts
               if '%s.%s' % (getattr(group, 'name', group) or 'DEFAULT', opt.dest)
               not in anchors]
    assert not missing, ('options registered but missing from doc/source/configuration/'
                         'config.rst (add their namespace to its show-options): %s'
                         % ', '.join(missing))


def test_cli_reference_has_every_manage_action(built):
    manage = base.import_without_eventlet('minisched.cmd.manage')
    target, _, _ = built['html']
    page = html.unescape(re.sub(r'<[^>]+>', '', _read(
        os.path.join(target, 'cli', 'minisched-manage.html'))))
    for category, _, builder in manage._category_builders():
        actions = argparse.ArgumentParser().add_subparsers()
        builder(actions)
        for action in actions.choices:
            assert 'usage: minisched-manage %s %s' % (category, action) in page, \
                'minisched-manage %s %s is not in the CLI reference' % (category, action)


#: The paths of the design share the project was written from, which a clone does not have
#: (spelt in two parts so that this file does not match itself).
DESIGN_SHARE = ('..' + '/shared', '/work' + '/shared')


def test_nothing_in_the_repository_points_at_the_design_share():
    try:
        listing = subprocess.run(['git', 'ls-files', '-z'], cwd=ROOT, capture_output=True,
                                 check=True, timeout=60).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        if os.environ.get('CI', '').lower() == 'true':
            pytest.fail('git ls-files failed: %s' % exc)
        pytest.skip('not a git checkout: %s' % exc)
    offenders = []
    for name in filter(None, listing.decode().split('\0')):
        path = os.path.join(ROOT, name)
        if not os.path.isfile(path):
            continue  # deleted in the work tree
        with open(path, 'rb') as f:
            content = f.read()
        offenders += ['%s: %s' % (name, share) for share in DESIGN_SHARE
                      if share.encode() in content]
    assert not offenders, 'files a clone cannot follow are referenced: %s' % offenders
