"""The placement bench runs, at a tiny size, and gives its figures and valid decisions.

A real Placement, a real minisched scheduler over RabbitMQ and Nova 34's own
SchedulerManager, as ``python -m benchmarks --only placement`` runs them, over 40
providers and 4 calls each: what is asserted is that every figure is there and measured
(Placement's share of a call is positive, the rest too) and that both schedulers placed every
request on an enabled host and claimed it in Placement; never a timing's size.
"""
import csv
import io
import os
import subprocess
import sys

import pytest

from tests.functional import base

pytestmark = [pytest.mark.functional, pytest.mark.timeout(600)]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS = 40
CALLS = 4
RUN = '''
import sys
from minisched import monkey_patch
monkey_patch.embed()
from benchmarks import common, placement
figures = placement.run(sizes=(%d,), calls_for=lambda size: %d,
                        out=lambda text: sys.stderr.write(text + '\\n'))
common.write_csv(figures, sys.stdout)
''' % (HOSTS, CALLS)


def test_placement_bench_gives_its_figures(tmp_path):
    base.check_rabbit(base.TRANSPORT_URL)
    result = subprocess.run([sys.executable, '-c', RUN], cwd=REPO, capture_output=True,
                            text=True, timeout=540,
                            env=dict(os.environ, PYTHONPATH=REPO))
    assert result.returncode == 0, result.stderr[-4000:]
    rows = {row['figure']: row for row in csv.DictReader(io.StringIO(result.stdout))}
    decisions = rows['decisions placement @%d hosts' % HOSTS]
    assert decisions['met'] == 'yes', decisions['note']
    assert '%d requests each, all placed and claimed' % CALLS in decisions['note']
    for who in ('minisched', 'Nova 34'):
        label = '%s select_destinations @%d hosts, ' % (who, HOSTS)
        total, placement, own = (float(rows[label + part + ' p50']['value'])
                                 for part in ('total', 'Placement', 'own'))
        assert 0 < placement < total, (who, total, placement)
        assert own > 0, (who, total, placement, own)
        assert '%d calls' % CALLS in rows[label + 'total p50']['note']
        alone = rows["Placement alone @%d hosts, %s's query, p50" % (HOSTS, who)]
        assert float(alone['value']) > 0 and 'resources=' in alone['note']
    over_rpc = rows['minisched select_destinations @%d hosts, over RabbitMQ p50' % HOSTS]
    assert float(over_rpc['value']) > 0
