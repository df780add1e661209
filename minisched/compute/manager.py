"""Compute RPC endpoint: owns the virt driver and the resource tracker of this host."""
import logging

import oslo_messaging as messaging
from oslo_service import periodic_task

from minisched.compute import resource_tracker
from minisched import context
from minisched import manager
from minisched.objects import instance as instance_obj
from minisched.scheduler.client import query
from minisched.virt import driver as virt_driver

LOG = logging.getLogger(__name__)


class ComputeManager(manager.Manager):
    """Manages the instances of one compute host through its virt driver."""

    target = messaging.Target(version='5.0')

    def __init__(self, conf, host=None):
        super().__init__(conf, host=host, service_name='compute')
        self.driver = virt_driver.load_compute_driver(conf)
        self.rt = resource_tracker.ResourceTracker(conf, self.host, self.driver)
        self.query_client = query.SchedulerQueryClient(conf)
        self.send_instance_updates = conf.filter_scheduler.track_instance_changes
        self.configure_periodic_tasks({
            'update_available_resource': conf.update_resources_interval,
            '_sync_scheduler_instance_info': conf.scheduler_instance_sync_interval,
        })

    # -- service hooks ----------------------------------------------------------------

    def init_host(self):
        self.driver.init_host(host=self.host)
        ctxt = context.get_admin_context()
        instances = instance_obj.InstanceList.get_by_host(ctxt, self.host)
        # An empty host sends nothing, so a new unmapped host does not confuse schedulers.
        if instances and self.send_instance_updates:
            self.query_client.update_instance_info(ctxt, self.host, instances)

    def pre_start_hook(self):
        self.update_available_resource(context.get_admin_context(), startup=True)

    # -- periodic tasks -----------------------------------------------------------------

    @periodic_task.periodic_task(spacing=60)
    def update_available_resource(self, context, startup=False):
        """Refresh every node's compute node record from the driver and the instances."""
        for nodename in self.driver.get_available_nodes(refresh=True):
            try:
                self.rt.update_available_resource(context, nodename, startup=startup)
            except Exception:
                LOG.exception('Error updating resources for node %s.', nodename)

    @periodic_task.periodic_task(spacing=120)
    def _sync_scheduler_instance_info(self, context):
        """Tell the schedulers which instances this host has, so they can reconcile."""
        if not self.send_instance_updates:
            return
        uuids = [inst.uuid for inst in
                 instance_obj.InstanceList.get_by_host(context, self.host)]
        self.query_client.sync_instance_info(context, self.host, uuids)
