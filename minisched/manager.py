"""Base class of the service managers: RPC endpoint plus option-driven periodic tasks."""
import logging

from oslo_service import periodic_task

from minisched import rpc

LOG = logging.getLogger(__name__)


class Manager(periodic_task.PeriodicTasks):
    """A service's RPC endpoint. Subclasses keep RPC methods short and logic elsewhere."""

    def __init__(self, conf, host=None, service_name='undefined'):
        self.conf = conf
        self.host = host or conf.host
        self.service_name = service_name
        self.notifier = rpc.get_notifier(service_name, self.host)
        self.additional_endpoints = []
        #: ``(admitted, limit)`` for ``rpc.get_server``: None, every message in arrival order.
        self.rpc_admission = None
        super().__init__(conf)

    def configure_periodic_tasks(self, spacings):
        """Apply spacings read from options: 0 means the default 60 s, negative disables.

        ``spacings`` maps task names to seconds; tasks not named keep their decorator spacing.
        """
        self._periodic_spacing = dict(self._periodic_spacing)
        tasks = []
        for name, task in self._periodic_tasks:
            if name in spacings:
                spacing = spacings[name]
                if spacing is None or spacing < 0:
                    LOG.info('Skipping periodic task %s because its interval is negative', name)
                    continue
                self._periodic_spacing[name] = spacing or periodic_task.DEFAULT_INTERVAL
            tasks.append((name, task))
        self._periodic_tasks = tasks

    def periodic_tasks(self, context, raise_on_error=False):
        """Run due periodic tasks; returns seconds until the next one is due."""
        return self.run_periodic_tasks(context, raise_on_error=raise_on_error)

    def init_host(self):
        """Hook run before the service record is created or updated."""

    def cleanup_host(self):
        """Hook run when the service stops."""

    def pre_start_hook(self):
        """Hook run after the service record exists, before RPC starts."""

    def post_start_hook(self):
        """Hook run once the RPC server is consuming."""

    def reset(self):
        """Hook run on SIGHUP (after mutable options are reloaded)."""
