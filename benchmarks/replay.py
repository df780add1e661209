"""Replay bench: ``minisched-manage scheduler replay``'s work at scale (issue 41's target).

A snapshot of synthetic hosts (the pipeline bench's, :func:`synthetic.node_rows`) is written
to a file and read back, and the pipeline bench's requests (its flavors, every fifth asking
for 3 instances) are replayed over it with the pipeline bench's configuration: Nova's default
filters plus CoreFilter, every weigher. Timed: reading the snapshot, filling the host states,
the requests and the report's figures, as the command does them.
"""
import os
import tempfile
import time

from benchmarks import common
from benchmarks import pipeline
from benchmarks import synthetic

#: Seconds for 10,000 requests over 10,000 hosts (issue 41).
TARGET_SECONDS = 60.0


def requests_for(count, seed=0):
    """The pipeline bench's first ``count`` requests, as a replay's."""
    from minisched.scheduler.replay import trace
    made = []
    for index in range(count):
        spec, uuids = pipeline.make_spec(index, seed)
        made.append(trace.Request(spec.obj_to_primitive(), uuids, len(uuids)))
    return made


def run_once(conf, hosts, requests, seed=0):
    """``(seconds, CPU seconds, outcome)`` of one replay of ``requests`` requests over
    ``hosts`` hosts."""
    from minisched.scheduler.replay import run as replay
    from minisched.scheduler.replay import snapshot
    handle, path = tempfile.mkstemp(suffix='.json')
    os.close(handle)
    try:
        snapshot.dump(snapshot.from_rows(synthetic.node_rows(hosts, seed=seed)), path)
        made = requests_for(requests, seed)
        start, cpu_start = time.perf_counter(), time.thread_time()
        loaded = snapshot.load(path)
        outcome = replay.replay(loaded, made, replay.scheduler_for(conf, 'bench'), 'bench',
                                seed)
        return time.perf_counter() - start, time.thread_time() - cpu_start, outcome
    finally:
        os.unlink(path)


def run(hosts=10000, requests=10000, seed=0, out=None):
    conf = common.in_process_conf()
    overrides = pipeline.bench_conf()
    overrides.pop(None)  # the replay holds the clock at the snapshot: no heartbeat ages
    with common.overrides(conf, overrides), common.quiet_logs():
        seconds, cpu_seconds, outcome = run_once(conf, hosts, requests, seed)
    label = 'replay %d requests @%d hosts' % (requests, hosts)
    placed = sum(len(p) for p in outcome.placements if p)
    failed = sum(1 for p in outcome.placements if p is None)
    note = '%d instances placed, %d NoValidHost; %.2f ms a request; CPU time %.1f s' % (
        placed, failed, 1000.0 * seconds / requests, cpu_seconds)
    if out:
        out('   %s: %.1f s' % (label, seconds))
    target = TARGET_SECONDS if (hosts, requests) == (10000, 10000) else None
    return [common.at_most(label, seconds, target, 's', note) if target else
            common.info(label, seconds, 's', note)]
