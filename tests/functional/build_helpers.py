"""The build flow's client side for functional tests: ``minisched.compute.api`` in the test
process, pointed at a running ``base.Cluster``.

Why in-process, and why not the global ``CONF``: ``minisched.config.parse_args`` parses into
``cfg.CONF``, which the rest of a pytest session shares (other tests reset or re-parse it),
and parsing twice needs ``CONF.reset()``/``clear()`` choreography. Below ``cmd/`` minisched
takes ``conf`` as an argument and never reads ``CONF``, so each test builds a private
``ConfigOpts`` with every minisched option registered and parses the cluster's shared config
file into it (transport URL, control exchange, databases). What remains process-global is
set here and released by ``close()``: the RPC transport (``rpc.init``/``rpc.cleanup``) and the
database engines (``engines.configure``/``dispose_all``; each test has its own database). A
subprocess per call would isolate that too, but would cost an interpreter start (seconds on a
loaded machine) per request, and the concurrency test wants clients calling the API in a
tight loop.
"""
import collections
import importlib
import os
import re
import threading
import time

from oslo_config import cfg

from minisched.compute import api as compute_api
from minisched.conf import opts as conf_opts
from minisched import context as ms_context
from minisched.db import engines
from minisched import exception
from minisched import objects
from minisched.objects import flavor as flavor_obj
from minisched.objects import instance_group as instance_group_obj
from minisched import rpc

OWNER = 'admin'
#: A compute's log line for each spawn that ended ACTIVE.
ACTIVE_LINE = re.compile(r'Instance ([0-9a-f-]{36}) is ACTIVE on')
DONE_STATES = ('active', 'error')

#: One event of an instance action as the tests compare it.
Event = collections.namedtuple('Event', 'action event host result details')


def make_conf(conf_file):
    """A private ConfigOpts with every minisched option, parsed from ``conf_file``."""
    conf = cfg.ConfigOpts()
    for module in conf_opts._MODULES:
        module.register_opts(conf)
    _register_messaging_opts(conf)
    conf(['--config-file', conf_file], project='minisched', default_config_files=[],
         default_config_dirs=[])
    return conf


def _register_messaging_opts(conf):
    """oslo.messaging (18.x) reads ``[oslo_messaging_metrics]`` and ``[oslo_messaging_tracing]``
    from the conf it is given but registers them on ``cfg.CONF`` only (and leaves them out of
    its ``list_opts()``): a private ConfigOpts needs them registered by hand."""
    for module, group in (('oslo_messaging._metrics.client', 'oslo_messaging_metrics'),
                          ('oslo_messaging._tracing.client', 'oslo_messaging_tracing')):
        try:
            opts = getattr(importlib.import_module(module), group)
        except (ImportError, AttributeError):  # a release without them
            continue
        conf.register_opts(opts, group=group)


class Client:
    """What an API service does for a user of ``cluster``: create, read, delete instances."""

    def __init__(self, cluster):
        objects.register_all()
        self.cluster = cluster
        self.conf = make_conf(cluster.conf_file)
        engines.configure(self.conf)
        rpc.set_defaults()
        rpc.init(self.conf)
        self.api = compute_api.API(self.conf)

    def close(self):
        """Drop the transport and the pooled connections (before the database is dropped)."""
        rpc.cleanup()
        engines.dispose_all()

    @staticmethod
    def context():
        """A new request (own request id) of the admin project, as the API makes per call."""
        return ms_context.RequestContext(user_id=OWNER, project_id=OWNER, is_admin=True)

    # -- resources ----------------------------------------------------------------------

    def flavor(self, name, vcpus, memory_mb, root_gb, extra_specs=None):
        flavor = flavor_obj.Flavor(
            self.context(), name=name, memory_mb=memory_mb, vcpus=vcpus, root_gb=root_gb,
            ephemeral_gb=0, swap=0, flavorid=name, rxtx_factor=1.0, is_public=True,
            disabled=False, extra_specs=dict(extra_specs or {}))
        flavor.create()
        return flavor

    def group(self, name, policy):
        group = instance_group_obj.InstanceGroup(self.context(), name=name, policy=policy,
                                                 project_id=OWNER, user_id=OWNER)
        group.create()
        return group

    # -- instances ----------------------------------------------------------------------

    def boot(self, flavor, num_instances=1, **kwargs):
        """Ask for instances; returns their uuids in request order (builds run async)."""
        return self.api.create(self.context(), flavor, num_instances=num_instances, **kwargs)

    def boot_concurrently(self, flavor, threads=4, each=4, timeout=60):
        """``threads`` threads each asking for ``each`` instances one after the other, all at
        once; returns the uuids (an error in a thread fails the caller)."""
        uuids, errors = [], []

        def boot_in_a_loop():
            try:
                for _ in range(each):
                    uuids.extend(self.boot(flavor))
            except Exception as exc:  # raised below: a thread cannot fail the test itself
                errors.append(exc)
        running = [threading.Thread(target=boot_in_a_loop) for _ in range(threads)]
        for thread in running:
            thread.start()
        for thread in running:
            thread.join(timeout)
        assert errors == [], errors
        assert len(uuids) == threads * each, uuids
        return uuids

    def get(self, uuid):
        """The instance, or None while the conductor has not created it in a cell yet."""
        try:
            return self.api.get(self.context(), uuid)
        except exception.InstanceNotFound:
            return None

    def wait_built(self, uuids, timeout=60):
        """Wait until every instance is ACTIVE or ERROR with no task; ``{uuid: Instance}``."""
        found = {}

        def settled():
            for uuid in uuids:
                if uuid not in found:
                    instance = self.get(uuid)
                    if (instance is not None and instance.vm_state in DONE_STATES and
                            instance.task_state is None):
                        found[uuid] = instance
            return len(found) == len(uuids)
        _wait(settled, timeout, lambda: 'instances to be ACTIVE or ERROR; pending: %s' % {
            uuid: self._state(uuid) for uuid in uuids if uuid not in found})
        return {uuid: found[uuid] for uuid in uuids}

    def _state(self, uuid):
        instance = self.get(uuid)
        return None if instance is None else (instance.vm_state, instance.task_state,
                                              instance.host)

    def events(self, uuid, timeout=30):
        """The instance's action events, oldest first, once every one has finished.

        An instance can be ACTIVE a moment before its build event is finished (the event
        closes around the whole build), hence the wait.
        """
        events = []

        def finished():
            events[:] = [Event(action.action, event.event, event.host, event.result,
                               event.details)
                         for action, action_events in self.api.get_actions(self.context(),
                                                                           uuid)
                         for event in sorted(action_events, key=lambda e: e.id)]
            return events and all(event.result for event in events)
        _wait(finished, timeout, lambda: 'the events of %s to finish: %s' % (uuid, events))
        return list(events)

    def faults(self, uuid):
        return [fault.message for fault in self.api.get_faults(self.context(), uuid)]

    def delete(self, uuid):
        self.api.delete(self.context(), uuid)

    def wait_deleted(self, uuids, timeout=60):
        _wait(lambda: all(self.get(uuid) is None for uuid in uuids), timeout,
              lambda: 'instances to be deleted: %s' % {u: self._state(u) for u in uuids})

    # -- the cluster's database ---------------------------------------------------------

    def nodes(self):
        """``{host: compute_nodes row}`` of the live compute nodes."""
        return {row['host']: row for row in self.cluster.query(
            'SELECT * FROM compute_nodes WHERE deleted = 0')}


def _wait(predicate, timeout, describe, interval=0.2):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            raise AssertionError('timed out after %ss waiting for %s' % (timeout, describe()))
        time.sleep(interval)


def start(cluster, computes, scheduler_conf=None, conductor_conf=None, compute_conf=None):
    """Start a conductor, a scheduler with two workers and ``computes`` ({host: sizes}).

    The conductor goes first: a compute pings it at start-up and a ping sent before the
    conductor's queue exists is lost (the compute then waits out an RPC timeout). Returns once
    every compute node is recorded with its usage.
    """
    cluster.start_conductor(conf=conductor_conf)
    cluster.start_scheduler(workers=2, conf=scheduler_conf, wait=False)
    for host, sizes in computes.items():
        cluster.start_compute(host, conf=merge_conf(compute_conf, sizes.get('conf')), wait=False,
                              **{k: v for k, v in sizes.items() if k != 'conf'})
    cluster.wait_ready('scheduler', *computes)
    wait_nodes(cluster, computes)


def wait_nodes(cluster, hosts, timeout=30):
    """Wait until each host has a compute node record with its usage filled in."""
    def recorded():
        rows = cluster.query('SELECT host FROM compute_nodes WHERE deleted = 0 AND '
                             'free_disk_gb IS NOT NULL')
        return set(hosts) <= {row['host'] for row in rows}
    _wait(recorded, timeout, lambda: 'compute nodes of %s' % sorted(hosts))


def spawns(cluster, hosts):
    """{uuid: how many times the logs of computes ``hosts`` say it became ACTIVE}."""
    return collections.Counter(uuid for host in hosts
                               for uuid in ACTIVE_LINE.findall(cluster.log(host)))


def wait_spawns(cluster, hosts, uuids, timeout=60):
    """The spawn counts of ``uuids`` once each has its ACTIVE line.

    A compute logs the spawn once its ACTIVE save is answered, so the row can read ACTIVE
    before the line is written; and a save whose answer was lost (a broker restart, a
    conductor killed) is retried seconds after the row already reads ACTIVE.
    """
    _wait(lambda: all(spawns(cluster, hosts)[uuid] for uuid in uuids), timeout,
          lambda: 'an ACTIVE line for each of %d instances in the logs of %s'
          % (len(uuids), sorted(hosts)))
    counts = spawns(cluster, hosts)
    return {uuid: counts[uuid] for uuid in uuids}


def retire(cluster, name):
    """Stop service ``name`` (if still running) and file its record and log under
    ``name@N``, so that it can be started again under the same name with a fresh log."""
    cluster.stop(name)
    process = cluster.processes.pop(name)
    index = 1 + sum(1 for other in cluster.processes if other.startswith(name + '@'))
    new_log = '%s@%d.log' % (process.log_path[:-len('.log')], index)
    os.rename(process.log_path, new_log)
    process.log_path = new_log
    process.name = '%s@%d' % (name, index)
    cluster.processes[process.name] = process


def merge_conf(*confs):
    """Merge {section: {option: value}} dicts (None skipped); later ones win."""
    merged = {}
    for conf in confs:
        for section, options in (conf or {}).items():
            merged.setdefault(section, {}).update(options)
    return merged
