"""Scheduler metrics for Prometheus: request latency, hosts per filter, NoValidHost, refreshes.

Every scheduler worker records into prometheus_client's multiprocess files (one set per pid in
``PROMETHEUS_MULTIPROC_DIR``); the parent process serves their sum as Prometheus text on
``[scheduler] metrics_listen_port``. :func:`serve` (called by ``minisched-scheduler`` before
the workers fork) sets that directory up and starts the endpoint; until it or :func:`enable`
has run, the ``record_*`` functions do nothing, so a scheduler without metrics pays nothing.
prometheus_client is imported only then: it picks its storage when its first metric is made.
"""
import atexit
import logging
import os
import shutil
import sys
import tempfile
import threading

LOG = logging.getLogger(__name__)

#: Environment variable of prometheus_client's multiprocess mode.
MULTIPROC_ENV = 'PROMETHEUS_MULTIPROC_DIR'
PREFIX = 'minisched_scheduler_'
_LATENCY_BUCKETS = (.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1.0, 2.5, 5.0, 10.0)
_REFRESH_BUCKETS = (.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1.0, 2.5, 5.0, 10.0, 30.0)
_HOSTS_BUCKETS = (1, 10, 100, 1000, 5000, 10000, 25000, 50000, 100000)

_lock = threading.Lock()
_state = {'enabled': False, 'metrics': None, 'registry': None, 'dir': None, 'own_dir': False,
          'set_env': False, 'server': None}


class _Metrics:
    """The metric objects of this process (made on first use, after any fork)."""

    def __init__(self, registry):
        import prometheus_client as prom
        self.request_seconds = prom.Histogram(
            PREFIX + 'request_duration_seconds',
            'Seconds to filter, weigh and pick the hosts of one select_destinations request '
            '(host-state refresh included; requests ending in NoValidHost are not counted).',
            buckets=_LATENCY_BUCKETS, registry=registry)
        self.request_hosts = prom.Histogram(
            PREFIX + 'request_hosts', 'Candidate hosts considered by one request.',
            buckets=_HOSTS_BUCKETS, registry=registry)
        self.filter_hosts_in = prom.Counter(
            PREFIX + 'filter_hosts_in', 'Hosts given to a filter, summed over requests.',
            ['filter'], registry=registry)
        self.filter_hosts_out = prom.Counter(
            PREFIX + 'filter_hosts_out', 'Hosts a filter let through, summed over requests.',
            ['filter'], registry=registry)
        self.no_valid_host = prom.Counter(
            PREFIX + 'no_valid_host', 'Requests that ended in NoValidHost.', registry=registry)
        #: filter name -> its (hosts in, hosts out) counters: labels() costs more than inc().
        self.filter_counters = {}
        self.refresh_seconds = prom.Histogram(
            PREFIX + 'host_state_refresh_duration_seconds',
            'Seconds to bring host states up to date with the cell databases.',
            buckets=_REFRESH_BUCKETS, registry=registry)


def _active():
    """This process's metrics, or None while recording is off."""
    if not _state['enabled']:
        return None
    metrics = _state['metrics']
    if metrics is None:
        with _lock:
            if _state['metrics'] is None:
                _state['metrics'] = _Metrics(_state['registry'])
            metrics = _state['metrics']
    return metrics


# -- recording (the scheduler's hooks) ------------------------------------------------------

def record_request(stats):
    """Record one request from FilterScheduler's ``last_stats``.

    :param stats: ``{'seconds': float, 'hosts_in': int, 'filter_counts': [(filter name,
        hosts in, hosts out)]}``; missing keys are skipped.
    """
    metrics = _active()
    if metrics is None:
        return
    metrics.request_seconds.observe(stats.get('seconds', 0.0))
    if 'hosts_in' in stats:
        metrics.request_hosts.observe(stats['hosts_in'])
    _record_filters(metrics, stats.get('filter_counts'))


def _record_filters(metrics, filter_counts):
    counters = metrics.filter_counters
    for name, hosts_in, hosts_out in filter_counts or ():
        pair = counters.get(name)
        if pair is None:
            pair = counters[name] = (metrics.filter_hosts_in.labels(name),
                                     metrics.filter_hosts_out.labels(name))
        pair[0].inc(hosts_in)
        pair[1].inc(hosts_out)


def record_no_valid_host(filter_counts=None):
    """Count one request that ended in NoValidHost.

    :param filter_counts: the failing run's ``FilterResult.counts``, added to the per-filter
        counters (which filter emptied the list is what an operator looks for).
    """
    metrics = _active()
    if metrics is not None:
        metrics.no_valid_host.inc()
        _record_filters(metrics, filter_counts)


def record_refresh(seconds):
    """Record one host-state refresh that took ``seconds``."""
    metrics = _active()
    if metrics is not None:
        metrics.refresh_seconds.observe(seconds)


# -- set-up and exposition ------------------------------------------------------------------

def enable(multiproc_dir=None):
    """Start recording in this process and the processes later forked from it.

    :param multiproc_dir: an existing directory for prometheus_client's multiprocess files
        (exported as ``PROMETHEUS_MULTIPROC_DIR``); None keeps the figures in this process.
    """
    import prometheus_client as prom
    from prometheus_client import values
    with _lock:
        if multiproc_dir:
            if os.environ.get(MULTIPROC_ENV) != multiproc_dir:
                os.environ[MULTIPROC_ENV] = multiproc_dir
                _state['set_env'] = True
        # prometheus_client chose its value storage at import: choose again now.
        values.ValueClass = values.get_value_class()
        _state.update(enabled=True, metrics=None, dir=multiproc_dir or None,
                      registry=prom.CollectorRegistry(auto_describe=True))


def disable():
    """Stop recording and serving; forget the figures (tests, and the end of a service)."""
    with _lock:
        server = _state['server']
        if server is not None:
            server.shutdown()
            server.server_close()
        if _state['set_env']:
            os.environ.pop(MULTIPROC_ENV, None)
        if 'prometheus_client' in sys.modules:
            from prometheus_client import values
            values.close_all_multiprocess_files()
            values.ValueClass = values.get_value_class()
        if _state['own_dir'] and _state['dir']:
            shutil.rmtree(_state['dir'], ignore_errors=True)
        _state.update(enabled=False, metrics=None, registry=None, dir=None, own_dir=False,
                      set_env=False, server=None)


def _exposition_registry():
    import prometheus_client as prom
    from prometheus_client import multiprocess
    if not _state['dir']:
        return _state['registry']
    registry = prom.CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=_state['dir'])
    return registry


def render():
    """Prometheus text exposition (bytes) of every process's figures; empty while off."""
    if not _state['enabled']:
        return b''
    import prometheus_client as prom
    return prom.generate_latest(_exposition_registry())


def serve(conf):
    """Start the endpoint of ``[scheduler] metrics_listen_port`` in this (parent) process.

    Call it before the workers fork. Uses ``PROMETHEUS_MULTIPROC_DIR`` when the environment
    sets it (the operator then empties it between runs), else a new temporary directory
    removed at exit. Returns the HTTP server, or None when the port is 0.
    """
    port = conf.scheduler.metrics_listen_port
    if not port:
        return None
    import prometheus_client as prom
    directory = os.environ.get(MULTIPROC_ENV)
    own = not directory
    if own:
        directory = tempfile.mkdtemp(prefix='minisched-scheduler-metrics-')
        creator = os.getpid()  # forked workers inherit atexit hooks; only the parent cleans
        atexit.register(lambda: os.getpid() == creator and shutil.rmtree(directory, True))
    enable(directory)
    _state['own_dir'] = own
    host = conf.scheduler.metrics_listen_host
    try:
        server, _thread = prom.start_http_server(port, addr=host,
                                                 registry=_exposition_registry())
    except OSError as exc:
        LOG.error('Cannot serve scheduler metrics on %(host)s:%(port)d: %(error)s',
                  {'host': host, 'port': port, 'error': exc})
        raise
    _state['server'] = server
    LOG.info('Scheduler metrics on http://%(host)s:%(port)d/metrics (multiprocess files in '
             '%(dir)s)', {'host': host, 'port': port, 'dir': directory})
    return server
