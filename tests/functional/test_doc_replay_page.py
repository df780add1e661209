"""The replay page's commands (``doc/source/admin/replay.rst``), run as written.

Its ``code-block:: bash`` blocks run in order in one ``bash -e``, as the doc-command test
runs the other pages (its helpers: an empty directory that is also ``HOME``, the test's own
vhost, whatever the commands start stopped afterwards): a cluster recording its requests, a
snapshot, six and two servers built, the trace replayed, two configurations compared over
the trace (with figures) and over a mix, the cluster stopped.
"""
import os
import re

import pytest

from tests.functional.test_doc_commands import _run_page
from tests.functional.test_doc_commands import own_vhost  # noqa: F401 (a fixture)
from tests.functional.test_doc_commands import ROOT
from tests.functional.test_doc_commands import rst_bash_blocks

pytestmark = [pytest.mark.functional, pytest.mark.timeout(660)]

REPLAY = os.path.join(ROOT, 'doc', 'source', 'admin', 'replay.rst')


def test_replay_page_runs_as_written(tmp_path, own_vhost):  # noqa: F811
    pytest.importorskip('matplotlib')  # a test extra: --plot draws the figures
    blocks = rst_bash_blocks(REPLAY)
    assert len(blocks) == 3, blocks

    result = _run_page(blocks, tmp_path, own_vhost)

    output = result.stdout
    assert result.returncode == 0, output[-6000:]
    # the trace: both creates recorded, and replayed by the running configuration
    assert re.search(r'\| requests +\| +2 \|', output), output[-6000:]
    assert re.search(r'\| instances placed +\| +8 \|', output), output[-6000:]
    assert re.search(r'\| recorded answers reproduced +\| +\d/2 \|', output), output[-6000:]
    # the comparison over the mix: a column per configuration file
    assert re.search(r'\| requests +\| +80 \| +80 \|', output), output[-6000:]
    for name in ('capacity.png', 'utilization.png', 'funnel.png'):
        assert 'Wrote figures/%s' % name in output, output[-6000:]
        assert (tmp_path / 'figures' / name).read_bytes()[:4] == b'\x89PNG'
    assert 'Traceback' not in output and 'RetryFilter' not in output, output[-6000:]
