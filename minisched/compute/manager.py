"""Compute RPC endpoint: owns the virt driver and the resource tracker of this host."""
import logging
import threading

import oslo_messaging as messaging
from oslo_service import periodic_task

from minisched.compute import build
from minisched.compute import housekeeping
from minisched.compute import resource_tracker
from minisched.conductor import rpcapi as conductor_rpcapi
from minisched.conductor import stuck_builds
from minisched import context
from minisched import exception
from minisched import manager
from minisched import monkey_patch
from minisched.objects import instance as instance_obj
from minisched.objects import instance_action
from minisched.scheduler.client import query
from minisched import thread_pool_factory
from minisched.virt import driver as virt_driver

LOG = logging.getLogger(__name__)


class ComputeManager(manager.Manager):
    """Manages the instances of one compute host through its virt driver.

    Compute RPC API 6.5, as Nova 34's compute: the methods below at 6.x, and the 5.x
    messages (up to 5.13) through :class:`_ComputeV5Proxy`, a second endpoint, as Nova keeps
    them. The service listens on ``compute`` and on ``compute-alt`` (6.5's second RPC
    server, to which Nova sends the messages that finish operations under way).
    """

    target = messaging.Target(version='6.5')

    def __init__(self, conf, host=None):
        super().__init__(conf, host=host, service_name='compute')
        self.additional_endpoints.append(_ComputeV5Proxy(self))
        self.driver = virt_driver.load_compute_driver(conf)
        self.rt = resource_tracker.ResourceTracker(conf, self.host, self.driver)
        self.query_client = query.SchedulerQueryClient(conf)
        self.compute_task_api = conductor_rpcapi.ComputeTaskAPI(conf)
        self.send_instance_updates = conf.filter_scheduler.track_instance_changes
        self.builder = build.Builder(self)
        # Builds run on the LONG_TASK pool. With native threads its size is the limit of
        # concurrent builds; under eventlet the pool is as large and a semaphore keeps the
        # limit, as in Nova 34.
        self._build_semaphore = (
            threading.BoundedSemaphore(thread_pool_factory.max_concurrent_builds(conf))
            if monkey_patch.is_patched() else None)
        self._instance_locks = {}
        self.configure_periodic_tasks({
            'update_available_resource': conf.update_resources_interval,
            '_sync_scheduler_instance_info': conf.scheduler_instance_sync_interval,
            '_sync_power_states': conf.sync_power_state_interval,
            '_run_pending_deletes': conf.instance_delete_interval,
            '_poll_shelved_instances': conf.shelved_poll_interval,
            '_cleanup_running_deleted_instances': conf.running_deleted_instance_poll_interval,
        })

    # -- service hooks ----------------------------------------------------------------

    def init_host(self):
        self.driver.init_host(host=self.host)
        ctxt = context.get_admin_context()
        instances = instance_obj.InstanceList.get_by_host(ctxt, self.host)
        for instance in instances:
            self._init_instance(instance)
        # Those whose deletion finished just now are gone from the schedulers already (Nova
        # sends its whole start-up list, the deleted ones included, until the next sync).
        instances = instance_obj.InstanceList(
            objects=[instance for instance in instances if not instance.deleted])
        # An empty host sends nothing, so a new unmapped host does not confuse schedulers.
        if instances and self.send_instance_updates:
            self.query_client.update_instance_info(ctxt, self.host, instances)

    def _init_instance(self, instance):
        """Nova's ``_init_instance`` for builds and deletes this compute was running when it
        stopped: a build cannot finish, so the instance goes to ERROR (it keeps its host, as
        in Nova); a delete is done again (:meth:`_finish_deletion`)."""
        if instance.vm_state == instance_obj.BUILDING or instance.task_state in (
                instance_obj.SCHEDULING, instance_obj.SPAWNING):
            self._build_interrupted(instance)
        elif (instance.task_state == instance_obj.DELETING and
              instance.vm_state != instance_obj.SOFT_DELETED):
            self._finish_deletion(instance)

    def _finish_deletion(self, instance):
        """Delete an instance left DELETING: this compute stopped while deleting it, or
        before the API's cast reached it. As Nova, a deletion that fails puts the instance
        in ERROR (a new delete request finishes it); one the conductor did not answer is
        left as it is, for the next start or a new delete request."""
        LOG.info('Service started deleting instance %s during the previous run, but did not '
                 'finish. Restarting the deletion now.', instance.uuid)
        try:
            self.delete_instance(instance._context, instance)
        except build.RETRIED as exc:
            LOG.warning('Instance %s left DELETING: %s', instance.uuid,
                        build.unanswered_reason(exc))
        except Exception:
            LOG.exception('Failed to complete a deletion of instance %s', instance.uuid)
            instance.vm_state = instance_obj.ERROR
            try:
                instance.save()
            except Exception:
                LOG.exception('Could not set instance %s to ERROR', instance.uuid)

    def _build_interrupted(self, instance):
        """minisched also records why, as every build that ends in ERROR does: a fault, and
        the build's open events finished as Error. When that cannot be written (the
        database is away), the instance is left BUILDING: the conductor's stuck-build check
        ends it with a fault later, rather than leaving an ERROR without a reason.
        """
        LOG.debug('Instance %s failed to spawn correctly, setting to ERROR state',
                  instance.uuid)
        try:
            stuck_builds.record_failure(instance._context, instance.uuid,
                                        exception.InstanceBuildInterrupted(), self.host,
                                        self.host)
        except build.RETRIED as exc:
            LOG.warning('Instance %s left BUILDING: its failure could not be recorded (%s)',
                        instance.uuid, build.unanswered_reason(exc))
            return
        except Exception:
            LOG.exception('Could not record why instance %s failed to spawn', instance.uuid)
        vm_state = instance.vm_state
        instance.vm_state = instance_obj.ERROR
        instance.task_state = None
        try:
            # Conditional: the conductor's stuck-build check may have ended it meanwhile.
            instance.save(expected_vm_state=vm_state)
        except (exception.UnexpectedVMStateError, exception.InstanceNotFound) as exc:
            LOG.debug('Instance %s not set to ERROR at start-up: %s', instance.uuid,
                      exc.format_message())

    def pre_start_hook(self):
        self.update_available_resource(context.get_admin_context(), startup=True)

    # -- RPC methods ----------------------------------------------------------------------

    def build_and_run_instance(self, context, instance, image, request_spec,
                               filter_properties, accel_uuids, admin_password=None,
                               injected_files=None, requested_networks=None,
                               security_groups=None, block_device_mapping=None, node=None,
                               limits=None, host_list=None):
        """Start the build on the LONG_TASK pool and return at once (it is a cast): the
        RPC server's thread goes back to its pool while the build waits for its turn.
        A build with accelerator requests (``accel_uuids``) is aborted: minisched has no
        Cyborg."""
        kwargs = dict(admin_password=admin_password, injected_files=injected_files,
                      requested_networks=requested_networks, security_groups=security_groups,
                      block_device_mapping=block_device_mapping, accel_uuids=accel_uuids)
        thread_pool_factory.spawn_on(self.conf, thread_pool_factory.ExecutorType.LONG_TASK,
                             self._locked_build, context, instance, image, request_spec,
                             filter_properties, node, limits, host_list, kwargs)

    def _locked_build(self, context, instance, image, request_spec, filter_properties, node,
                      limits, host_list, kwargs):
        lock = self._instance_locks.setdefault(instance.uuid, threading.Lock())
        with lock:
            if self._build_semaphore is None:
                self.builder.build(context, instance, image, request_spec, filter_properties,
                                   node, limits, host_list, **kwargs)
            else:
                with self._build_semaphore:
                    self.builder.build(context, instance, image, request_spec,
                                       filter_properties, node, limits, host_list, **kwargs)
        self._instance_locks.pop(instance.uuid, None)

    def terminate_instance(self, context, instance, bdms=None):
        """Destroy the instance, free its resources, tell the schedulers."""
        with instance_action.EventReporter(context, 'compute_terminate_instance', self.host,
                                           instance.uuid):
            try:
                self.delete_instance(context, instance)
            except exception.InstanceNotFound:
                # Deleted meanwhile: by this compute's start-up, which found it DELETING.
                LOG.info('Instance %s disappeared during terminate', instance.uuid)

    def soft_delete_instance(self, context, instance):
        """Power the instance off and keep it until ``reclaim_instance_interval`` passes."""
        self.driver.power_off(instance)
        instance.power_state = instance_obj.SHUTDOWN
        instance.vm_state = instance_obj.SOFT_DELETED
        instance.task_state = None
        instance.save()

    def delete_instance(self, context, instance):
        node = instance.node
        self.driver.destroy(context, instance)
        instance.cleaned = True
        instance.task_state = None
        instance.save()
        try:
            instance.destroy()
        except exception.InstanceNotFound:
            LOG.debug('Instance %s was already deleted', instance.uuid)
        self.rt.update_usage(context, instance, node, is_removed=True)
        self.delete_allocation_for_instance(
            context, instance, force=self.conf.reclaim_instance_interval <= 0)
        self.delete_scheduler_instance_info(context, instance.uuid)
        LOG.info('Instance %s deleted from %s', instance.uuid, self.host)

    def delete_allocation_for_instance(self, context, instance, force=True):
        """Give the instance's allocations back to Placement (with ``[placement] enabled``):
        deleted, failed or rescheduled builds, as Nova's compute does."""
        if self.rt.provider_report is None:
            return
        try:
            self.rt.provider_report.reportclient.delete_allocation_for_instance(
                context, instance.uuid, force=force)
        except exception.AllocationDeleteFailed as exc:
            LOG.warning('Could not delete the allocations of instance %s: %s', instance.uuid,
                        exc.format_message())

    def set_host_enabled(self, context, enabled):
        """Add or remove ``COMPUTE_STATUS_DISABLED`` on this host's providers (the service
        was disabled or enabled) and return ``'enabled'`` or ``'disabled'``, as Nova's;
        Placement's failures are warnings (the periodic resource update sets it anyway)."""
        nodes = list(self.rt.compute_nodes.values())
        if not nodes:
            LOG.warning('Unable to add/remove trait COMPUTE_STATUS_DISABLED. No '
                        'ComputeNode(s) found for host: %s', self.host)
        elif self.rt.provider_report is not None:
            self.rt.provider_report.update_compute_providers_status(context, nodes, enabled)
        # minisched's drivers have no host-wide switch (Nova's raise NotImplementedError).
        return 'enabled' if enabled else 'disabled'

    # -- scheduler updates ----------------------------------------------------------------

    def update_scheduler_instance_info(self, context, instance):
        if self.send_instance_updates:
            instances = instance_obj.InstanceList(objects=[instance])
            self.query_client.update_instance_info(context.elevated(), self.host, instances)

    def delete_scheduler_instance_info(self, context, instance_uuid):
        if self.send_instance_updates:
            self.query_client.delete_instance_info(context.elevated(), self.host,
                                                   instance_uuid)

    # -- periodic tasks -------------------------------------------------------------------

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

    @periodic_task.periodic_task
    def _check_instance_build_time(self, context):
        housekeeping.check_instance_build_time(self, context)

    @periodic_task.periodic_task(spacing=600, run_immediately=True)
    def _sync_power_states(self, context):
        housekeeping.sync_power_states(self, context)

    @periodic_task.periodic_task
    def _reclaim_queued_deletes(self, context):
        housekeeping.reclaim_queued_deletes(self, context)

    @periodic_task.periodic_task(spacing=300)
    def _run_pending_deletes(self, context):
        housekeeping.run_pending_deletes(self, context)

    @periodic_task.periodic_task
    def _poll_rebooting_instances(self, context):
        housekeeping.poll_rebooting_instances(self, context)

    @periodic_task.periodic_task
    def _poll_unconfirmed_resizes(self, context):
        housekeeping.poll_unconfirmed_resizes(self, context)

    @periodic_task.periodic_task(spacing=3600)
    def _poll_shelved_instances(self, context):
        housekeeping.poll_shelved_instances(self, context)

    @periodic_task.periodic_task(spacing=1800)
    def _cleanup_running_deleted_instances(self, context):
        housekeeping.cleanup_running_deleted_instances(self, context)


class _ComputeV5Proxy:
    """The compute RPC API 5.x (up to 5.13) of the methods minisched implements, as Nova's
    compute keeps it beside 6.x: every other name is the manager's own."""

    target = messaging.Target(version='5.13')

    def __init__(self, manager):
        self.manager = manager

    def __getattr__(self, name):
        return getattr(self.manager, name)

    def build_and_run_instance(self, context, instance, image, request_spec,
                               filter_properties, admin_password=None, injected_files=None,
                               requested_networks=None, security_groups=None,
                               block_device_mapping=None, node=None, limits=None,
                               host_list=None, accel_uuids=None):
        """5.0 (5.11: ``accel_uuids``, optional and last)."""
        self.manager.build_and_run_instance(
            context, instance, image, request_spec, filter_properties, accel_uuids,
            admin_password, injected_files, requested_networks, security_groups,
            block_device_mapping, node, limits, host_list)
