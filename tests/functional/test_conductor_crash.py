"""A conductor killed during a burst of creates holds no build hostage.

60 creates in about a second; the conductor (its whole process group) is SIGKILLed as the
first instance appears and started again 10 s later. The casts it held for its admission
(``[conductor] max_concurrent_schedule_and_build``) or was running were acknowledged on
receipt before: 39 of 60 builds then stayed BUILDING until the stuck-build check, two hours
later. Now RabbitMQ delivers them again: every accepted build ends ACTIVE, none is lost and
none is built twice.
"""
import collections
import os
import signal
import threading
import time

import pytest

from tests.functional import base
from tests.functional import build_helpers
from tests.functional import resilience

pytestmark = [pytest.mark.functional, pytest.mark.timeout(420)]

COMPUTES = {'c%d' % n: {'vcpus': 32, 'memory_mb': 32768, 'local_gb': 400}
            for n in range(1, 5)}
CREATES = 60
DOWN_SECONDS = 10


def test_a_conductor_killed_during_a_burst_loses_and_duplicates_no_build(cluster, request):
    build_helpers.start(cluster, COMPUTES)
    client = build_helpers.Client(cluster)
    request.addfinalizer(client.close)
    flavor = client.flavor('m1.burst', 1, 256, 1)

    uuids = []
    burst = threading.Thread(target=lambda: uuids.extend(
        client.boot_concurrently(flavor, threads=4, each=CREATES // 4)))
    burst.start()
    base.wait_for(lambda: cluster.query('SELECT COUNT(*) AS n FROM instances')[0]['n'] > 0,
                  60, interval=0.05, message='the first instance')
    conductor = cluster.processes['conductor']
    os.killpg(conductor.pid, signal.SIGKILL)  # the launcher and its workers
    conductor.popen.wait(timeout=10)
    killed_at = time.monotonic()
    burst.join(120)
    assert not burst.is_alive() and len(uuids) == CREATES  # every create was accepted
    in_cells = cluster.query('SELECT COUNT(*) AS n FROM instances')[0]['n']

    time.sleep(max(0.0, DOWN_SECONDS - (time.monotonic() - killed_at)))
    resilience.restart(cluster, 'conductor', cluster.start_conductor)
    built = client.wait_built(uuids, timeout=240)

    states = collections.Counter(instance.vm_state for instance in built.values())
    assert states == {'active': CREATES}, states
    # None lost, none twice: one instance row each, one spawn each on the computes.
    rows = cluster.query('SELECT uuid FROM instances')
    assert sorted(row['uuid'] for row in rows) == sorted(uuids)
    assert build_helpers.wait_spawns(cluster, COMPUTES, uuids) == dict.fromkeys(uuids, 1)
    assert set(build_helpers.spawns(cluster, COMPUTES)) == set(uuids)
    assert cluster.query('SELECT COUNT(*) AS n FROM build_requests') == [{'n': 0}]
    print('\n%d of %d instances were in a cell when the conductor was killed; all %d ACTIVE '
          'after its restart' % (in_cells, CREATES, CREATES))
