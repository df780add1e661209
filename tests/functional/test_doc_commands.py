"""The commands the documentation tells a reader to run, run as written.

Every shell block of the README's quick start and of ``doc/source/admin/running-a-cluster.rst``
runs, in order, in one ``bash -e`` per page, in a temporary directory that is also ``HOME`` (so
the embedded default ``state_path``, ``~/.local/state/minisched``, lands there too) and with
no configuration file: the embedded defaults, except for the broker's vhost, which is the
test's own (``MINISCHED_TRANSPORT_URL`` for ``minisched-cluster``,
``OS_DEFAULT__TRANSPORT_URL``, oslo.config's environment source, for the other commands).

Two steps are not run: ``pip install .`` (the environment running the tests is the
installation), and the README's test command, which is the whole suite: it is checked to be
the command ``.ci/run`` runs.
"""
import os
import re
import signal
import subprocess
import sys

import pytest

from tests.functional import base

pytestmark = [pytest.mark.functional, pytest.mark.timeout(660)]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(ROOT, 'README.md')
RUNNING_A_CLUSTER = os.path.join(ROOT, 'doc', 'source', 'admin', 'running-a-cluster.rst')
#: Seconds one page's commands may take (about a minute on an idle 2-core VM).
PAGE_TIMEOUT = 300
#: The install step of a block: the environment running the tests has done it.
PIP_INSTALL = re.compile(r"^pip install [^&]*&&\s*")


def _read(path):
    with open(path, encoding='utf-8') as f:
        return f.read()


def readme_quick_start_blocks():
    """The ```bash blocks of the README's "Quick start" section."""
    section = re.search(r'^## Quick start\n(.*?)(?=^## )', _read(README), re.S | re.M).group(1)
    return [block.strip() for block in re.findall(r'^```bash\n(.*?)^```', section, re.S | re.M)]


def rst_bash_blocks(path):
    """The ``.. code-block:: bash`` blocks of an rst page, unindented, in order."""
    blocks = re.findall(r'^\.\. code-block:: bash\n\n((?:(?:   .*)?\n)+)', _read(path), re.M)
    return ['\n'.join(line[3:] for line in block.splitlines()).strip() for block in blocks]


@pytest.fixture
def own_vhost():
    base.check_rabbit(base.TRANSPORT_URL)
    url, delete_vhost = base.make_vhost(base.TRANSPORT_URL)
    yield url
    delete_vhost()


def _run_page(blocks, workdir, transport_url):
    """Run ``blocks`` as one ``bash -e`` script in ``workdir``; the CompletedProcess.

    Whatever happens, nothing the commands started is left running: the script's own
    process group is killed, and a detached ``minisched-cluster`` is brought down.
    """
    home = workdir / 'home'
    home.mkdir()
    env = dict(os.environ, HOME=str(home), MINISCHED_TRANSPORT_URL=transport_url,
               OS_DEFAULT__TRANSPORT_URL=transport_url,
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ['PATH'])
    script = 'set -e\n' + '\n\n'.join(blocks) + '\n'
    proc = subprocess.Popen(['bash', '-c', script], cwd=str(workdir), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=PAGE_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        output += '\n*** still running after %d s: killed ***' % PAGE_TIMEOUT
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        if (workdir / 'minisched-cluster').exists():
            subprocess.run([base.script('minisched-cluster'), '--state-dir',
                            str(workdir / 'minisched-cluster'), 'down'],
                           env=env, capture_output=True, timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, output)


def test_readme_quick_start_runs_the_demo_and_names_the_ci_test_command(tmp_path, own_vhost):
    demo, tests = readme_quick_start_blocks()
    assert demo == 'pip install . && minisched-cluster demo'
    # The test command is the one .ci/run runs (the whole suite: not run from within it).
    pip, pytest_command = tests.split(' && ')
    assert pip == "pip install -e '.[test,nova-tests]'"
    ci_run = _read(os.path.join(ROOT, '.ci', 'run'))
    assert "python -m pip install -e '.[test,nova-tests]'" in ci_run
    assert '\n%s ' % pytest_command in ci_run, (pytest_command, ci_run)

    result = _run_page([PIP_INSTALL.sub('', demo)], tmp_path, own_vhost)

    assert result.returncode == 0, result.stdout[-6000:]
    assert 'Using RabbitMQ at' in result.stdout, result.stdout[-6000:]
    # the demo's table: its 12 instances, every one active (its exit status says so too)
    assert len(re.findall(r'\| demo-\d\d +\|.*\| active +\|', result.stdout)) == 12, \
        result.stdout[-6000:]


def test_running_a_cluster_page_runs_as_written(tmp_path, own_vhost):
    blocks = rst_bash_blocks(RUNNING_A_CLUSTER)
    assert len(blocks) == 6, blocks  # the page's blocks, all of which run here

    result = _run_page(blocks, tmp_path, own_vhost)

    assert result.returncode == 0, result.stdout[-6000:]
    output = result.stdout
    # minisched-cluster: four computes up, then stopped
    assert re.search(r'compute4 +\| enabled \| up ', output), output[-6000:]
    assert 'Stopped 6 service(s).' in output, output[-6000:]
    # up again in the same state directory, with the operator's file layered (the cell's
    # vhost stays the test's own here: OS_DEFAULT__TRANSPORT_URL wins in every process;
    # tests/functional/test_cluster_restart.py restarts on vhosts of the cluster's own)
    assert 'Layering 1 file(s) of ' in output and 'stacking.conf' in output, output[-6000:]
    assert 'Stopped 4 service(s).' in output, output[-6000:]
    # by hand: the compute was mapped, and the scheduler chose it
    assert 'Creating host mapping for compute host' in output, output[-6000:]
    assert re.search(r'\| +1 +\| selected \|', output), output[-6000:]
