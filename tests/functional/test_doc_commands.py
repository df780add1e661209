"""The commands the documentation tells a reader to run, run as written.

Every shell block of the README's quick start, of the install guide, of
``doc/source/admin/running-a-cluster.rst``, ``doc/source/admin/replay.rst`` and
``doc/source/user/rpc-client.rst`` runs, in order, in one ``bash -e`` per page, in a
temporary directory that is also ``HOME`` (so the embedded default ``state_path``,
``~/.local/state/minisched``, lands there too; ``doc`` there is the clone's, for the commands
that run its examples) and with no configuration file: the embedded defaults, except for the
broker's vhost, which is the test's own (``MINISCHED_TRANSPORT_URL`` for ``minisched-cluster``,
``OS_DEFAULT__TRANSPORT_URL``, oslo.config's environment source, for the other commands).

Three kinds of step are not run: ``pip install`` (the environment running the tests is the
installation), the README's test command, which is the whole suite (it is checked to be the
command ``.ci/run`` runs), and the install guide's quick start, which is the README's (checked
to be the same commands, run once). :data:`RST_PAGES` names each page run and what its
output must show; :data:`NOT_RUN` each other page with shell blocks, and why.
"""
import os
import re
import signal
import subprocess
import sys

import pytest

from tests.functional import base

pytestmark = [pytest.mark.functional, pytest.mark.timeout(720)]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(ROOT, 'README.md')
DOC = os.path.join(ROOT, 'doc', 'source')
INSTALL_GUIDE = os.path.join(DOC, 'install', 'index.rst')
RUNNING_A_CLUSTER = os.path.join(DOC, 'admin', 'running-a-cluster.rst')
#: Seconds one page's commands may take (running-a-cluster's, the longest, with its three
#: cluster starts and a Placement started by hand: about two and a half minutes on an idle
#: 2-core VM, over six on a loaded one).
PAGE_TIMEOUT = 600
#: The install step of a block: the environment running the tests has done it.
PIP_INSTALL = re.compile(r"^pip install [^&]*&&\s*")
#: The pages under doc/source with shell blocks that no test runs, and why.
NOT_RUN = {
    'contributor/testing.rst': 'the test suite itself and the CI script',
    'contributor/benchmarks.rst': 'benchmarks: minutes of load, figures of their own',
    'install/index.rst': 'pip install, and the README\'s quick start (same commands, run '
                         'by the README test)',
}
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


def rst_shell_pages():
    """The pages under doc/source (relative paths) that have a ``code-block:: bash``."""
    found = []
    for directory, _dirs, names in os.walk(DOC):
        for name in names:
            path = os.path.join(directory, name)
            if name.endswith('.rst') and rst_bash_blocks(path):
                found.append(os.path.relpath(path, DOC))
    return sorted(found)


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
    (workdir / 'doc').symlink_to(os.path.join(ROOT, 'doc'))  # "from a clone"
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
    assert demo == "pip install '.[placement]' && minisched-cluster demo"
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
    # with Placement, as Nova 34: each instance's allocations, on the host it landed on
    assert 'Placement: the allocations of each instance:' in result.stdout, result.stdout[-6000:]
    landed = dict(re.findall(r'^\| (demo-\d\d) +\| m1\.\w+ +\| (compute\d) +\| active',
                             result.stdout, re.M))
    allocated = dict(re.findall(r'^\| (demo-\d\d) +\| (compute\d) +\| DISK_GB=\d+, '
                                r'MEMORY_MB=\d+, VCPU=\d \|', result.stdout, re.M))
    assert len(landed) == 12 and allocated == landed, result.stdout[-6000:]
    # what the install guide says of its state: a temporary directory, removed after it
    assert 'State directory (temporary): ' in result.stdout, result.stdout[:2000]
    assert 'Removed the temporary state directory.' in result.stdout, result.stdout[-2000:]
    temporary = re.search(r'State directory \(temporary\): (\S+)', result.stdout).group(1)
    assert not os.path.exists(temporary)
    assert not (tmp_path / 'minisched-cluster').exists()


def test_the_install_guides_quick_start_is_the_readmes():
    blocks = rst_bash_blocks(INSTALL_GUIDE)
    install, demo, tests = blocks
    assert all(line.split('#')[0].strip().startswith('pip install ')
               for line in install.splitlines()), install
    assert [demo, tests] == readme_quick_start_blocks()
    text = ' '.join(_read(INSTALL_GUIDE).split())
    assert 'config, databases and logs go to a new temporary directory' in text


def _check_running_a_cluster(blocks, output):
    assert len(blocks) == 7, blocks  # the page's blocks, all of which run here
    # minisched-cluster: four computes up, then stopped
    assert re.search(r'compute4 +\| enabled \| up ', output), output[-6000:]
    assert 'Stopped 7 service(s).' in output, output[-6000:]
    # up again in the same state directory, with the operator's file layered (the cell's
    # vhost stays the test's own here: OS_DEFAULT__TRANSPORT_URL wins in every process;
    # tests/functional/test_cluster_restart.py restarts on vhosts of the cluster's own)
    assert 'Layering 1 file(s) of ' in output and 'stacking.conf' in output, output[-6000:]
    assert 'Stopped 5 service(s).' in output, output[-6000:]
    # by hand: the compute was mapped, and the scheduler chose it
    assert 'Creating host mapping for compute host' in output, output[-6000:]
    assert re.search(r'\| +1 +\| selected \|', output), output[-6000:]


def _check_rpc_client(blocks, output):
    assert len(blocks) == 2, blocks
    # scheduler select: three instances, each selected with alternates
    assert len(re.findall(r'\| +\d +\| selected +\|', output)) == 3, output[-6000:]
    assert re.search(r'\| +\d +\| alternate \d +\|', output), output[-6000:]
    # the example, on the cluster's vhost taken from minisched.env: a host, then NoValidHost
    assert re.search(r'^instance 1: compute\d \(node compute\d, cell [0-9a-f-]{36}\); '
                     r'alternates: compute\d, compute\d$', output, re.M), output[-6000:]
    assert 'NoValidHost: No valid host was found.' in output, output[-6000:]
    assert 'Stopped 6 service(s).' in output, output[-6000:]


def _check_replay(blocks, output):
    assert len(blocks) == 3, blocks
    # the trace: both creates recorded, and replayed by the running configuration
    assert re.search(r'\| requests +\| +2 \|', output), output[-6000:]
    assert re.search(r'\| instances placed +\| +8 \|', output), output[-6000:]
    assert re.search(r'\| recorded answers reproduced +\| +\d/2 \|', output), output[-6000:]
    # the comparison over the mix: a column per configuration file
    assert re.search(r'\| requests +\| +80 \| +80 \|', output), output[-6000:]
    for name in ('capacity.png', 'utilization.png', 'funnel.png'):  # --plot figures
        assert 'Wrote figures/%s' % name in output, output[-6000:]
    assert 'Traceback' not in output and 'RetryFilter' not in output, output[-6000:]
    assert 'Stopped 7 service(s).' in output, output[-6000:]


#: The pages under doc/source run here, each with what its output must show. A page joins
#: by adding itself and its check.
RST_PAGES = {
    'admin/running-a-cluster.rst': _check_running_a_cluster,
    'admin/replay.rst': _check_replay,
    'user/rpc-client.rst': _check_rpc_client,
}


def test_every_page_with_shell_blocks_is_run_or_says_why_not():
    assert sorted(set(rst_shell_pages()) - set(RST_PAGES) - set(NOT_RUN)) == []


@pytest.mark.parametrize('page', sorted(RST_PAGES))
def test_page_runs_as_written(page, tmp_path, own_vhost):
    blocks = rst_bash_blocks(os.path.join(DOC, page))

    result = _run_page(blocks, tmp_path, own_vhost)

    assert result.returncode == 0, result.stdout[-6000:]
    RST_PAGES[page](blocks, result.stdout)
