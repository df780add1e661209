"""Memory bench: resident memory of scheduler workers holding 10,000 synthetic host states.

A real ``minisched-scheduler`` with 2 workers over an SQLite file of synthetic hosts (no
computes); after each worker has built its host states and answered some requests, the
VmRSS of every worker (the launcher's children, from /proc/<pid>/status) is read.
"""
import uuid

from benchmarks import cluster
from benchmarks import common
from benchmarks import databases
from benchmarks import e2e
from benchmarks import synthetic

TARGET_MB = 150.0


def _warmup_work(conf_file, calls, ready):
    conf = cluster.client_setup(conf_file)
    scheduler, _echo = e2e._clients(conf)
    ctxt = e2e._context()
    requests = e2e._specs(calls, seed=3)
    ready()
    for request in requests:
        e2e._select(scheduler, ctxt, request)
    return calls


def _warmup(conf_file, calls, queue, start):
    cluster.child_main(queue, start, _warmup_work, conf_file, calls)


def run(hosts=10000, workers=2, calls=40, out=print):
    with cluster.vhost(suffix='memory') as url, databases.sqlite_db() as db_url:
        synthetic.write_db(db_url, synthetic.node_rows(hosts, now=synthetic.old_now(),
                                                       spread_seconds=600),
                           api_url=db_url, cell_uuid=str(uuid.uuid4()), transport_url=url)
        bench = cluster.Cluster(url, db_url)
        try:
            e2e.start_scheduler(bench, workers)
            # Two clients at once: round-robin delivery gives every worker some requests.
            cluster.run_children(_warmup, [(bench.conf_file, calls // 2)] * 2, timeout=600)
            rss = e2e.worker_rss(bench)
            private = [cluster.private_mb(pid) for pid in cluster.children(bench.pid(
                'scheduler'))]
            parent = cluster.rss_mb(bench.pid('scheduler'))
        except BaseException:
            out('  memory bench failed; logs under %s' % bench.workdir)
            bench.stop_all()
            raise
        bench.cleanup()
    return [common.at_most('scheduler worker RSS @%d hosts (max of %d workers)' % (
        hosts, len(rss)), max(rss), TARGET_MB, 'MB',
        'workers %s MB (private %s MB); parent %.0f MB; after %d requests' % (
            '/'.join('%.0f' % r for r in rss), '/'.join('%.0f' % p for p in private), parent,
            calls))]
