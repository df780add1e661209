"""minisched's own time on the Placement path, in process: a recorded answer replayed.

``python -m benchmarks.placement_own [hosts] [calls]``: a real Placement (uWSGI, SQLite)
is loaded with :func:`benchmarks.placement_load.node_rows` once and asked the bench's
``GET /allocation_candidates`` query; its answer (the bytes, about 500 kB at 1,000 hosts) is
kept in a temporary file, never in the repository. Then a scheduler holding the same hosts
(:class:`minisched.scheduler.replay.offline.HeldStateScheduler`) runs the manager's steps of
a request -- :func:`minisched.scheduler.placement_claims.get_allocation_candidates` through
the real :class:`~minisched.scheduler.client.report.SchedulerReportClient` and then
``select_destinations`` with a claim -- with an adapter that answers from the recording
(``GET /allocation_candidates``: the recorded bytes; the claim's ``GET`` and ``PUT
/allocations``: an empty consumer, 204). What remains is minisched's own time: the answer's
decoding (which Nova pays too), the candidates' indexing, filtering, weighing and the
claim's body. Each step is timed; ``--profile`` prints a cProfile of the calls.
"""
import json
import os
import statistics
import sys
import tempfile
import time

import requests

from benchmarks import common
from benchmarks import placement_load

FLAVOR = (2048, 1, 20, 0)
LIMIT = 1000


def record(hosts, path):
    """Placement's answer to the bench's query at ``hosts`` providers, written to ``path``."""
    from minisched.localcluster import placement
    workdir = tempfile.mkdtemp(prefix='minisched-pl-own-')
    server = placement.PlacementServer(os.path.join(workdir, 'placement'))
    try:
        server.write_config()
        server.db_sync()
        placement_load.load(server.database_url, placement_load.node_rows(hosts))
        server.start()
        status, body = placement_load.request(
            server.url, 'GET', placement_load.CANDIDATES_QUERY % LIMIT, raw=True)
    finally:
        server.stop()
    if status != 200:
        raise RuntimeError('GET /allocation_candidates answered %s' % status)
    with open(path, 'wb') as handle:
        handle.write(body)
    return body


class ReplayAdapter:
    """The keystoneauth1 Adapter's calls the scheduler makes, answered from a recording."""

    def __init__(self, body):
        self.body = body
        self.additional_headers = {}

    def _response(self, status, body=b''):
        resp = requests.Response()
        resp.status_code = status
        resp._content = body
        resp.headers['Content-Type'] = 'application/json'
        return resp

    def get(self, url, **kwargs):
        if url.startswith('/allocation_candidates?'):
            return self._response(200, self.body)
        if url.startswith('/allocations/'):
            return self._response(200, b'{"allocations": {}}')
        raise ValueError('not recorded: GET %s' % url)

    def put(self, url, json=None, **kwargs):
        if url.startswith('/allocations/'):
            return self._response(204)
        raise ValueError('not recorded: PUT %s' % url)


def spec_for(flavor=FLAVOR):
    from benchmarks import placement as placement_bench
    return placement_bench._ms_spec((flavor, ['00000000-0000-4000-8000-0000000000be']))


def scheduler_for(hosts, body):
    """A scheduler holding ``hosts`` synthetic hosts, its report client replaying ``body``."""
    from benchmarks import placement as placement_bench
    from benchmarks import synthetic
    from minisched.scheduler.client import report
    from minisched.scheduler.replay import offline
    conf = common.in_process_conf()
    for group, options in placement_bench.scheduler_sections('http://127.0.0.1:1').items():
        for name, value in options.items():
            if group == 'placement' and name != 'enabled':
                continue
            conf.set_override(name, value, group=group)
    conf.set_override('service_down_time', 86400)
    scheduler = offline.HeldStateScheduler(conf)
    synthetic.populate(scheduler.host_manager, placement_load.node_rows(hosts))
    scheduler._placement_client = report.SchedulerReportClient(conf,
                                                               adapter=ReplayAdapter(body))
    return conf, scheduler


def one_call(conf, scheduler, ctxt, index):
    """The manager's steps of one request, each timed: ``{step: seconds}``."""
    from minisched.scheduler import placement_claims
    spec = spec_for()
    uuids = ['%08x-0000-4000-8000-0000000000be' % index]
    times = {}
    start, cpu = time.perf_counter(), time.thread_time()
    candidates = placement_claims.get_allocation_candidates(
        ctxt, spec, scheduler.placement_client, conf)
    times['candidates'] = time.perf_counter() - start
    times['candidates CPU'] = time.thread_time() - cpu
    start, cpu = time.perf_counter(), time.thread_time()
    selections = scheduler.select_destinations(ctxt, spec, uuids, *candidates,
                                               return_alternates=True)
    times['select'] = time.perf_counter() - start
    times['select CPU'] = time.thread_time() - cpu
    times['total'] = times['candidates'] + times['select']
    times['total CPU'] = times['candidates CPU'] + times['select CPU']
    # The host state consumed by the request, given back: every call sees the same hosts.
    chosen = scheduler.host_manager.host_state_map[
        (selections[0][0].service_host, selections[0][0].nodename)]
    chosen.unconsume_from_request(spec)
    return times, selections[0][0].service_host


def run(hosts=1000, calls=50, profile=False, out=print):
    from minisched import context as ms_context
    path = os.path.join(tempfile.gettempdir(), 'minisched-pl-own-%d.json' % hosts)
    if os.path.exists(path):
        with open(path, 'rb') as handle:
            body = handle.read()
    else:
        out('recording Placement\'s answer at %d providers...' % hosts)
        body = record(hosts, path)
    conf, scheduler = scheduler_for(hosts, body)
    ctxt = ms_context.RequestContext(user_id='bench', project_id='bench', is_admin=True)
    decode, decode_cpu = [], []
    for _ in range(calls):
        start, cpu = time.perf_counter(), time.thread_time()
        json.loads(body)
        decode.append(time.perf_counter() - start)
        decode_cpu.append(time.thread_time() - cpu)
    for index in range(3):
        one_call(conf, scheduler, ctxt, index)
    if profile:
        import cProfile
        import pstats
        prof = cProfile.Profile()
        prof.enable()
        for index in range(calls):
            one_call(conf, scheduler, ctxt, index)
        prof.disable()
        pstats.Stats(prof).sort_stats('cumulative').print_stats(45)
        return
    found = {}
    hosts_chosen = []
    for index in range(calls):
        times, host = one_call(conf, scheduler, ctxt, index)
        hosts_chosen.append(host)
        for step, seconds in times.items():
            found.setdefault(step, []).append(seconds)
    out('%d providers, %d kB answer, %d calls' % (hosts, len(body) // 1000, calls))
    out('  json.loads alone p50 %.2f ms, CPU %.2f ms (intrinsic: Nova decodes the same '
        'answer with it)' % (statistics.median(decode) * 1000,
                             statistics.median(decode_cpu) * 1000))
    for step, values in found.items():
        out('  %-14s p50 %7.2f ms  p90 %7.2f ms' % (
            step, statistics.median(values) * 1000, common.percentile(values, 90) * 1000))
    return found, hosts_chosen


if __name__ == '__main__':
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    run(int(args[0]) if args else 1000, int(args[1]) if len(args) > 1 else 50,
        profile='--profile' in sys.argv)
