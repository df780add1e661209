"""Helpers of the scheduler functional tests: an RPC client of a cluster, and its database.

Why not ``minisched.config.parse_args`` in the test process: oslo.config's ``CONF``, the
``rpc.TRANSPORT`` it creates and the DB engine URLs are globals of the process, and one pytest
process runs many clusters (each with its own control exchange, vhost and database). So the
client side here is built from a **fresh** ``ConfigOpts`` parsed from the cluster's own config
file (the way ``test_wire.py`` builds its conductor client), with a transport of its own:

* ``SchedulerAPI`` and ``SchedulerQueryClient`` are the product's clients, unchanged; they
  take their client from ``rpc.get_client``, which reads the global ``rpc.TRANSPORT``, so that
  global points at our transport only while they are built (they keep the client they got).
* The transport is made with ``allowed_remote_exmods=rpc.ALLOWED_EXMODS``, as ``rpc.init``
  does, so ``minisched.exception`` errors come back as their own class; oslo.messaging's own
  errors (``NoSuchMethod``, ``UnsupportedVersion``) come back as ``RemoteError`` with that
  ``exc_type``, exactly what a Nova caller sees.
* Database writes (an aggregate, a service's disabled flag) go through the product's objects,
  with the engine URLs pointed at the cluster's database inside ``cluster_database()`` and
  restored afterwards.
"""
import contextlib
import os
from unittest import mock

import oslo_messaging as messaging
from oslo_config import cfg
from oslo_messaging._metrics import client as metrics
from oslo_messaging._tracing import client as tracing

from minisched.conf import database
from minisched.conf import opts
from minisched import context
from minisched.db import engines
from minisched import rpc
from minisched.scheduler.client import query
from minisched.scheduler import rpcapi

#: Seconds a test waits for a scheduler's answer (the product's default is 1800).
CALL_TIMEOUT = 30


def client_conf(conf_file):
    """A fresh ConfigOpts holding every minisched option, parsed from ``conf_file``."""
    conf = cfg.ConfigOpts()
    for group, group_opts in opts.list_opts():
        conf.register_opts(group_opts, group=None if group == 'DEFAULT' else group)
    database.register_opts(conf)  # oslo.db's [database] group is not in list_opts()
    conf(['--config-file', conf_file], project='minisched-test', default_config_files=[],
         default_config_dirs=[])
    # oslo.messaging registers these on the global CONF only, and its client reads them.
    conf.register_opts(tracing.oslo_messaging_tracing, group='oslo_messaging_tracing')
    conf.register_opts(metrics.oslo_messaging_metrics, group='oslo_messaging_metrics')
    return conf


class SchedulerClient:
    """What a conductor or a compute of ``cluster`` uses to talk to its schedulers."""

    def __init__(self, cluster, version_cap=None):
        """``version_cap``: ``[upgrade_levels] scheduler`` of this client (None: uncapped)."""
        self.conf = client_conf(cluster.conf_file)
        self.transport = messaging.get_rpc_transport(self.conf,
                                                     allowed_remote_exmods=rpc.ALLOWED_EXMODS)
        # [upgrade_levels] is a module-level OptGroup, whose overrides every ConfigOpts
        # sees: the cap is set only while the clients read it.
        if version_cap is not None:
            self.conf.set_override('scheduler', version_cap, group='upgrade_levels')
        try:
            with mock.patch.object(rpc, 'TRANSPORT', self.transport):
                self.api = rpcapi.SchedulerAPI(self.conf)
                self.query = query.SchedulerQueryClient(self.conf)
        finally:
            self.conf.clear_override('scheduler', group='upgrade_levels')
        # SchedulerAPI prepares each call with both (rpc_response_timeout is registered by
        # the oslo.messaging client just built).
        self.conf.set_override('long_rpc_timeout', CALL_TIMEOUT)
        self.conf.set_override('rpc_response_timeout', CALL_TIMEOUT)
        self.ctxt = context.get_admin_context()

    def select(self, spec, instance_uuids=None, return_objects=False, return_alternates=False):
        """``select_destinations`` through the product's client (version 4.5)."""
        return self.api.select_destinations(self.ctxt, spec, instance_uuids,
                                            return_objects=return_objects,
                                            return_alternates=return_alternates)

    def raw(self, method, version='4.5', **kwargs):
        """Call ``method`` on the ``scheduler`` topic with any version and arguments."""
        target = messaging.Target(topic=rpcapi.TOPIC, version=version)
        client = messaging.get_rpc_client(self.transport, target,
                                          serializer=rpc.get_serializer())
        return client.prepare(timeout=CALL_TIMEOUT).call(self.ctxt, method, **kwargs)

    def close(self):
        self.transport.cleanup()


@contextlib.contextmanager
def cluster_database(cluster):
    """Point this process's DB layer at ``cluster``'s database for the ``with`` block."""
    saved = {name: dict(getattr(engines, name)) for name in ('_urls', '_options')}
    conf = client_conf(cluster.conf_file)
    try:
        engines.configure(conf)
        yield context.get_admin_context()
    finally:
        engines.dispose_all()
        for name, value in saved.items():
            getattr(engines, name).clear()
            getattr(engines, name).update(value)


def worker_pids(process):
    """PIDs of the children (oslo.service workers) of a Cluster process, from /proc."""
    pids = set()
    for task in os.listdir('/proc/%d/task' % process.pid):
        with open('/proc/%d/task/%s/children' % (process.pid, task)) as f:
            pids.update(int(pid) for pid in f.read().split())
    return pids
