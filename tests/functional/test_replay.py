"""Snapshot a real cluster, record its scheduler's requests, replay them offline (issue 41).

A conductor, a scheduler (one worker, recording to ``[scheduler] record_requests_to``) and 20
fake computes (one process, ``benchmarks.multi_compute``) run on the real RabbitMQ and a real
database. The scheduler starts once the computes are recorded, so that its host states are
in the order a snapshot reads them (weighing ties fall by that order). After
``minisched-manage scheduler snapshot``, 200 instances are created, 4 per request, each
request built before the next is sent: the scheduler's view of the hosts between two
requests is then what it consumed, as in the replay. Replayed with the scheduler's own
configuration, every recorded answer comes back; replayed stacking (``ram_weight_multiplier
= -1.0``) instead of spreading, fewer hosts are used and more of the largest flavor still
fits.

Then a scheduler recording to a 64 KiB tmpfs that fills up between two requests (issue 48):
the requests are answered throughout, and the trace keeps whole lines only, so that once
space is back it replays with no line skipped.
"""
import json
import os
import subprocess
import sys

import pytest

from tests.functional import build_helpers
from tests.unit.scheduler import replay_hosts

pytestmark = [pytest.mark.functional, pytest.mark.timeout(480)]

HOSTS = ['c%02d' % n for n in range(1, 21)]
SIZE = '64/32768/1000'  # vcpus/memory_mb/local_gb
COMPUTE_CONF = {'DEFAULT': {'ram_allocation_ratio': 1.0, 'cpu_allocation_ratio': 1.0,
                            'disk_allocation_ratio': 1.0, 'reserved_host_memory_mb': 0},
                'fake_driver': {'host_sizes': ','.join('%s:%s' % (h, SIZE) for h in HOSTS)}}
#: (name, vcpus, memory_mb, root_gb): each request asks for 4 of one, in turn.
FLAVORS = (('m1.small', 1, 1024, 10), ('m1.medium', 2, 2048, 20), ('m1.large', 2, 4096, 40))
REQUESTS, PER_REQUEST = 50, 4
#: Only the RAM weigher: the I/O and instance-count weighers read what the computes report
#: after a build (the build finished), which no replay of the scheduler's consumption sees.
WEIGHERS = {'filter_scheduler': {'weight_classes': 'RAMWeigher'}}


def _start(cluster, record_dir):
    cluster.start_conductor()
    computes = cluster.write_conf('multi-compute', COMPUTE_CONF)
    cluster.command = lambda name, argv: (
        [sys.executable, '-m', 'benchmarks.multi_compute', '--config-file', cluster.conf_file,
         '--config-file', computes] if name == 'computes' else argv)
    cluster.start_compute('computes', wait=False)
    build_helpers.wait_nodes(cluster, HOSTS, timeout=120)
    cluster.start_scheduler(workers=1, conf=dict(
        WEIGHERS, scheduler={'record_requests_to': record_dir}))
    return os.path.join(cluster.workdir, 'scheduler.conf')


def _table(output):
    return {row['Figure']: row for row in json.loads(output)}


@pytest.mark.slow
def test_replay_reproduces_the_recorded_answers_and_compares_stacking(cluster, tmp_path):
    record_dir = str(tmp_path / 'recorded')
    scheduler_conf = _start(cluster, record_dir)
    client = build_helpers.Client(cluster)
    try:
        flavors = [client.flavor(name, vcpus, memory_mb, root_gb)
                   for name, vcpus, memory_mb, root_gb in FLAVORS]
        snapshot = str(tmp_path / 'snapshot.json')
        cluster.run_manage('scheduler', 'snapshot', '-o', snapshot)
        placed = []
        for index in range(REQUESTS):
            uuids = client.boot(flavors[index % len(flavors)], num_instances=PER_REQUEST)
            built = client.wait_built(uuids, timeout=60)
            placed.extend(instance.host for instance in built.values())
    finally:
        client.close()
    assert len(placed) == REQUESTS * PER_REQUEST and None not in placed
    assert len(set(placed)) == len(HOSTS)  # spread: every host took some

    same = _table(cluster.run_manage('scheduler', 'replay', snapshot, record_dir,
                                     '--config-file', scheduler_conf, '-f', 'json').stdout)
    assert same['recorded answers reproduced']['scheduler.conf'] == '%d/%d' % (
        REQUESTS, REQUESTS)
    assert same['instances placed']['scheduler.conf'] == REQUESTS * PER_REQUEST

    stack_conf = cluster.write_conf('stack', {'filter_scheduler': dict(
        WEIGHERS['filter_scheduler'], ram_weight_multiplier=-1.0)})
    both = _table(cluster.run_manage('scheduler', 'replay', snapshot, record_dir,
                                     '--compare', scheduler_conf, stack_conf,
                                     '-f', 'json').stdout)
    used = both['hosts used (before -> after)']
    spread_used, stack_used = (int(used[name].split(' -> ')[1])
                               for name in ('scheduler.conf', 'stack.conf'))
    assert stack_used < spread_used == len(HOSTS), used
    fits = both['m1.large that still fit (before -> after)']
    spread_fits, stack_fits = (int(fits[name].split(' -> ')[1])
                               for name in ('scheduler.conf', 'stack.conf'))
    assert stack_fits > spread_fits, fits
    assert both['requests placed differently']['scheduler.conf'] > 0


def _build(client, flavor, count):
    for _ in range(count):
        built = client.wait_built(client.boot(flavor), timeout=60)
        assert [i.vm_state for i in built.values()] == ['active'], built


@pytest.mark.parametrize('database', ['postgresql'], indirect=True)
def test_a_full_disk_under_a_recording_scheduler_leaves_a_trace_that_replays(cluster,
                                                                             tmp_path):
    point = tmp_path / 'small'
    point.mkdir()
    umount = replay_hosts.need_tmpfs(point, 'size=64k')
    try:
        record_dir = point / 'recorded'
        cluster.start_conductor()
        cluster.start_compute('c1')
        build_helpers.wait_nodes(cluster, ['c1'], timeout=60)
        cluster.start_scheduler(workers=1, conf=dict(
            WEIGHERS, scheduler={'record_requests_to': str(record_dir)}))
        client = build_helpers.Client(cluster)
        try:
            flavor = client.flavor('m1.small', 1, 1024, 10)
            snapshot = str(tmp_path / 'snapshot.json')
            cluster.run_manage('scheduler', 'snapshot', '-o', snapshot)
            before = 0
            while True:  # until the trace's last page holds part of a line, not all of it
                _build(client, flavor, 1)
                before += 1
                (trace,) = record_dir.iterdir()
                size = trace.stat().st_size
                line = max(len(x) for x in trace.read_bytes().split(b'\n'))
                if 0 < 4096 - size % 4096 < line or before == 4:
                    break
            assert 0 < 4096 - size % 4096 < line, (size, line)
            filler = replay_hosts.fill(point)
            _build(client, flavor, 3)  # answered as usual, not recorded
            assert trace.stat().st_size == size  # what was written of a line, cut off
            os.unlink(filler)
            _build(client, flavor, 2)
        finally:
            client.close()
        result = cluster.run_manage('scheduler', 'replay', snapshot, str(record_dir),
                                    '-f', 'json')
        assert 'skipped' not in result.stderr, result.stderr
        table = _table(result.stdout)
        assert table['requests']['current'] == before + 2  # those before and the 2 after
        assert table['instances placed']['current'] == before + 2
        assert trace.read_bytes().count(b'\n') == before + 2
        assert trace.read_bytes().endswith(b'\n')
    finally:
        subprocess.run(umount, check=True)
