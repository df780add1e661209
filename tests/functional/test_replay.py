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
"""
import json
import os
import sys

import pytest

from tests.functional import build_helpers

pytestmark = [pytest.mark.functional, pytest.mark.slow, pytest.mark.timeout(480)]

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
