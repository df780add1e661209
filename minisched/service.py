"""The service runtime (oslo.service): service record, RPC server, state reports, periodic tasks."""
import functools
import gc
import logging
import os
import random
import signal
import sys

import oslo_messaging as messaging
from oslo_service import service
from oslo_service import threadgroup

from minisched import baserpc
from minisched import context
from minisched import exception
from minisched import monkey_patch
from minisched.objects import base as objects_base
from minisched.objects import service as service_obj
from minisched import rpc
from minisched import servicegroup
from minisched import thread_pool_factory
from minisched.messaging import trace
from minisched import version

LOG = logging.getLogger(__name__)

_launcher = None


class Service(service.Service):
    """A minisched service on one host: listens on ``topic`` and ``topic.host``, plus fanout;
    with ``topic_alt``, on a second RPC server of that topic too (Nova's compute-alt)."""

    def __init__(self, conf, host, binary, topic, manager_class, report_interval=None,
                 periodic_enable=None, periodic_fuzzy_delay=None, periodic_interval_max=None,
                 topic_alt=None):
        super().__init__()
        self.conf = conf
        self.host = host
        self.binary = binary
        self.topic = topic
        self.topic_alt = topic_alt
        self.report_interval = report_interval
        self.periodic_enable = periodic_enable
        self.periodic_fuzzy_delay = periodic_fuzzy_delay
        self.periodic_interval_max = periodic_interval_max
        self.servicegroup_api = servicegroup.API(conf)
        if objects_base.MinischedObject.indirection_api is not None:
            # compute: nothing works until the conductor answers.
            objects_base.MinischedObject.indirection_api.wait_until_ready(
                context.get_admin_context())
        self.manager = manager_class(conf=conf, host=host)
        self.service_ref = None
        self.rpcserver = None
        self.rpcserver_alt = None
        self.backdoor_port = None
        self.model_disconnected = False

    @classmethod
    def create(cls, conf, binary, topic, manager_class, host=None, topic_alt=None):
        """Build a service with the report and periodic settings of ``conf``."""
        return cls(conf, host or conf.host, binary, topic, manager_class,
                   report_interval=conf.report_interval,
                   periodic_enable=conf.periodic_enable,
                   periodic_fuzzy_delay=conf.periodic_fuzzy_delay, topic_alt=topic_alt)

    def __repr__(self):
        return '<%s: host=%s, binary=%s, topic=%s>' % (self.__class__.__name__, self.host,
                                                       self.binary, self.topic)

    def start(self):
        ctxt = context.get_admin_context()
        LOG.info('Starting %(topic)s node (version %(version)s) as pid %(pid)s',
                 {'topic': self.topic, 'version': version.version_string, 'pid': os.getpid()})
        self.manager.init_host()
        self._ensure_service_record(ctxt)
        self.manager.pre_start_hook()
        target = messaging.Target(topic=self.topic, server=self.host)
        endpoints = [self.manager, baserpc.BaseRPCAPI(self.manager.service_name,
                                                      self.backdoor_port)]
        endpoints.extend(self.manager.additional_endpoints)
        self.rpcserver = rpc.get_server(target, endpoints,
                                        admission=self.manager.rpc_admission)
        self.rpcserver.start()
        if self.topic_alt:
            self.rpcserver_alt = rpc.get_server(
                messaging.Target(topic=self.topic_alt, server=self.host), endpoints)
            self.rpcserver_alt.start()
        self.manager.post_start_hook()
        self.servicegroup_api.join(self.host, self.topic, self)
        if trace.ENABLED:  # name the trace file after the service; record each task apart
            trace.set_service(self.binary)
            self.manager._periodic_tasks = trace.traced_periodic_tasks(
                self.topic, self.manager._periodic_tasks)
        if self.periodic_enable:
            initial_delay = (random.randint(0, self.periodic_fuzzy_delay)
                             if self.periodic_fuzzy_delay else None)
            self.tg.add_dynamic_timer(self.periodic_tasks, initial_delay=initial_delay,
                                      periodic_interval_max=self.periodic_interval_max)
        LOG.info('%(binary)s ready: host %(host)s, topics %(topic)s and %(topic)s.%(host)s',
                 {'binary': self.binary, 'host': self.host, 'topic': self.topic})

    def _ensure_service_record(self, ctxt):
        ref = service_obj.Service.get_by_host_and_binary(ctxt, self.host, self.binary)
        if ref is not None:
            if ref.version != service_obj.SERVICE_VERSION:
                LOG.info('Updating service version for %(binary)s on %(host)s from '
                         '%(old)i to %(new)i', {'binary': self.binary, 'host': self.host,
                                                 'old': ref.version,
                                                 'new': service_obj.SERVICE_VERSION})
                ref.save()
            self.service_ref = ref
            return
        ref = service_obj.Service(ctxt, host=self.host, binary=self.binary, topic=self.topic,
                                  report_count=0)
        if self.binary == 'minisched-compute' and not self.conf.enable_new_services:
            ref.disabled = True
            ref.disabled_reason = 'New compute service disabled due to config option.'
        try:
            ref.create()
        except (exception.ServiceTopicExists, exception.ServiceBinaryExists):
            # A sibling worker created it first.
            ref = service_obj.Service.get_by_host_and_binary(ctxt, self.host, self.binary)
        self.service_ref = ref

    def periodic_tasks(self, raise_on_error=False):
        ctxt = context.get_admin_context()
        return self.manager.periodic_tasks(ctxt, raise_on_error=raise_on_error)

    def reset(self):
        self.manager.reset()

    def stop(self):
        """Drain the RPC server, let the manager clean up, stop timers and threads."""
        LOG.info('Stopping %(binary)s on %(host)s', {'binary': self.binary, 'host': self.host})
        for server in (self.rpcserver, self.rpcserver_alt):  # the alternate one last, as Nova
            if server is None:
                continue
            try:
                server.stop()
                server.wait()
                if hasattr(server, 'log_summary'):
                    server.log_summary()
            except Exception:
                LOG.exception('Error while stopping the RPC server')
        try:
            self.manager.cleanup_host()
        except Exception:
            LOG.exception('Service error occurred during cleanup_host')
        # The work the pools still run (a compute's builds) ends before the process does.
        thread_pool_factory.shutdown_all()
        super().stop()


def set_switch_interval(conf):
    """With native threads, hand the interpreter lock on after ``[DEFAULT]
    thread_switch_interval`` seconds (Python's own 5 ms keeps the bus reader waiting
    behind CPU work); nothing under eventlet, whose green threads never contend for it."""
    if monkey_patch.is_patched():
        return
    sys.setswitchinterval(conf.thread_switch_interval)
    LOG.debug('Interpreter switch interval: %g s', sys.getswitchinterval())


def process_launcher(conf):
    return service.ProcessLauncher(conf, restart_method='mutate')


def serve(conf, server, workers=None):
    """Launch ``server`` in this process (workers None/1) or in ``workers`` children.

    One worker runs in this process with either backend. oslo.service's threading launcher
    would fork a child even for one (cotyledon), after this process has already talked to
    the bus (a compute waits for its conductor before it starts), so with native threads
    the service runs in this process as Nova runs nova-compute (``no_fork``), and this
    function returns only when it has stopped (see :func:`_run_here`)."""
    global _launcher
    if _launcher:
        raise RuntimeError('serve() can only be called once')
    monkey_patch.log_choice(LOG)
    set_switch_interval(conf)
    workers = workers or 1
    if workers == 1 and not monkey_patch.is_patched():
        _launcher = service.ProcessLauncher(conf, restart_method='mutate', no_fork=True)
        _run_here(conf, server, _launcher)
        return
    if workers > 1:
        # Objects made before the fork stay shared with the workers: keep the garbage
        # collector from touching (and so copying) their pages in every child.
        gc.freeze()
        # A pool the parent used would reach each child without its threads.
        thread_pool_factory.reset_all()
    _launcher = service.launch(conf, server, workers=workers, restart_method='mutate')


def _run_here(conf, server, launcher):
    """Run ``server`` in this process on oslo.service's threading ``launcher`` (``no_fork``;
    its ``wait`` then returns at once): SIGTERM stops it gracefully within
    ``graceful_shutdown_timeout``, SIGINT at once.

    SIGHUP: the launcher leaves it to its caller (it raises ``SignalExit``). As the eventlet
    launcher does with ``restart_method='mutate'``, the mutable options are reloaded and the
    service reset (the scheduler reads its cells again), without a restart."""
    if conf.log_options:  # as oslo.service's other launchers do at start
        conf.log_opt_values(LOG, logging.DEBUG)
    run = functools.partial(launcher.launch_service, server)  # starts it, then waits
    while True:
        try:
            run()
            return
        except service.SignalExit as exit_:
            if exit_.signo != signal.SIGHUP:
                raise
        LOG.info('Caught SIGHUP: reloading the mutable options and resetting the service')
        conf.mutate_config_files()
        server.reset()
        launcher.add_signal_handlers()
        run = server.wait


def in_process_launcher(conf, services):
    """A launcher running every service of ``services`` on a thread of its own in this
    process (``minisched-cluster`` on ``fake://``, the benchmarks' many computes in one
    process), with either backend; SIGTERM stops them all. ``launcher.wait()`` returns once
    they have stopped."""
    monkey_patch.log_choice(LOG)
    set_switch_interval(conf)
    launcher = service.Launcher(conf, restart_method='mutate')
    # A launcher's pool has 10 threads by default: the services after the tenth would never
    # start. One thread per service.
    launcher.services.tg = threadgroup.ThreadGroup(len(services) + 1)  # either backend's
    for each in services:
        launcher.launch_service(each)
    signal.signal(signal.SIGTERM, lambda signum, frame: launcher.stop())
    return launcher


def wait():
    _launcher.wait()
