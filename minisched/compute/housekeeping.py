"""The compute's periodic housekeeping, one function per Nova periodic task.

Each takes the ComputeManager and an admin context. Thresholds and switches are Nova's
options with Nova's defaults; a zero threshold disables the task as in Nova.
"""
import logging

from oslo_utils import timeutils

from minisched.conductor import stuck_builds
from minisched import exception
from minisched.objects import instance as instance_obj
from minisched.objects import instance_fault

LOG = logging.getLogger(__name__)


def _older_than(timestamp, seconds):
    if timestamp is None:
        return False
    return timeutils.is_older_than(timeutils.normalize_time(timestamp), seconds)


def _instances(manager, context, **filters):
    filters.setdefault('host', manager.host)
    return instance_obj.InstanceList.get_by_filters(context, filters)


def check_instance_build_time(manager, context):
    """BUILDING longer than ``instance_build_timeout``: ERROR with a fault, and the build's
    open events finished as Error (minisched's addition to Nova's ERROR)."""
    timeout = manager.conf.instance_build_timeout
    if timeout == 0:
        return
    for instance in _instances(manager, context, vm_state=instance_obj.BUILDING,
                               deleted=False):
        if not _older_than(instance.created_at, timeout):
            continue
        LOG.warning('Instance %s build timed out. Set to error state.', instance.uuid)
        exc = exception.InstanceInvalidState(instance_uuid=instance.uuid, attr='vm_state',
                                             state=instance.vm_state, method='build')
        fault = instance_fault.InstanceFault.from_exception(context, instance.uuid, exc,
                                                            host=manager.host)
        fault.message = 'Instance build timed out. Set to error state.'
        fault.code = 500
        fault.details = None
        fault.create()
        instance.vm_state = instance_obj.ERROR
        instance.task_state = None
        instance.save()
        stuck_builds.finish_open_events(context, instance.uuid, fault.message, manager.host)


def _driver_power_state(manager, instance):
    try:
        return manager.driver.get_info(instance).state
    except exception.InstanceNotFound:
        return instance_obj.NOSTATE


def sync_power_states(manager, context):
    """Align the database's power_state with the driver's; a self-shutdown ACTIVE stops."""
    for instance in _instances(manager, context, deleted=False):
        if instance.task_state is not None:
            continue  # an operation is in progress; it will set the state itself
        power_state = _driver_power_state(manager, instance)
        changed = instance.power_state != power_state
        if changed:
            instance.power_state = power_state
        if instance.vm_state == instance_obj.ACTIVE and power_state in (
                instance_obj.SHUTDOWN, instance_obj.CRASHED):
            LOG.warning('Instance %s shutdown by itself. Marking it stopped.', instance.uuid)
            instance.vm_state = instance_obj.STOPPED
            changed = True
        if changed:
            instance.save()


def reclaim_queued_deletes(manager, context):
    """Soft-deleted instances older than ``reclaim_instance_interval`` are deleted for good."""
    interval = manager.conf.reclaim_instance_interval
    if interval <= 0:
        return
    for instance in _instances(manager, context, vm_state=instance_obj.SOFT_DELETED,
                               deleted=False):
        if _older_than(instance.updated_at, interval):
            LOG.info('Reclaiming deleted instance %s', instance.uuid)
            manager.delete_instance(context, instance)


def run_pending_deletes(manager, context):
    """Finish the driver-side cleanup of deleted instances (bounded number of attempts)."""
    attempts_allowed = manager.conf.maximum_instance_delete_attempts
    deleted_ctx = context.elevated(read_deleted='yes')
    for instance in _instances(manager, deleted_ctx, deleted=True, cleaned=0):
        attempts = int(instance.system_metadata.get('clean_attempts', '0'))
        if attempts >= attempts_allowed:
            continue
        instance.system_metadata = dict(instance.system_metadata,
                                        clean_attempts=str(attempts + 1))
        manager.driver.destroy(context, instance)
        instance.cleaned = not manager.driver.instance_exists(instance)
        instance.save()


def poll_rebooting_instances(manager, context):
    """Reboots stuck longer than ``reboot_timeout`` are retried."""
    if manager.conf.reboot_timeout <= 0:
        return
    for instance in _instances(manager, context, task_state=instance_obj.REBOOTING,
                               deleted=False):
        if _older_than(instance.updated_at, manager.conf.reboot_timeout):
            LOG.info('Retrying stuck reboot of %s', instance.uuid)
            manager.driver.reboot(context, instance, None, 'HARD')
            instance.task_state = None
            instance.power_state = _driver_power_state(manager, instance)
            instance.save()


def poll_unconfirmed_resizes(manager, context):
    """minisched has no resize: nothing is ever waiting for confirmation."""
    if manager.conf.resize_confirm_window == 0:
        return
    LOG.debug('No unconfirmed resizes: resize is not offered by this compute.')


def poll_shelved_instances(manager, context):
    """Shelved instances older than ``shelved_offload_time`` are offloaded."""
    offload_time = manager.conf.shelved_offload_time
    if offload_time <= 0:
        return
    for instance in _instances(manager, context, vm_state=instance_obj.SHELVED,
                               deleted=False):
        if _older_than(instance.updated_at, offload_time):
            LOG.info('Offloading shelved instance %s', instance.uuid)
            manager.driver.destroy(context, instance)
            node = instance.node
            instance.vm_state = instance_obj.SHELVED_OFFLOADED
            instance.host = None
            instance.node = None
            instance.save()
            manager.rt.update_usage(context, instance, node, is_removed=True)
            manager.delete_scheduler_instance_info(context, instance.uuid)


def cleanup_running_deleted_instances(manager, context):
    """Instances the driver runs but the database says are deleted: act per the option."""
    action = manager.conf.running_deleted_instance_action
    timeout = manager.conf.running_deleted_instance_timeout
    if action == 'noop':
        return
    deleted_ctx = context.elevated(read_deleted='yes')
    running = set(manager.driver.list_instance_uuids())
    if not running:
        return
    records = {inst.uuid: inst for inst in instance_obj.InstanceList.get_by_filters(
        deleted_ctx, {'uuid': sorted(running)})}
    for uuid in running:
        instance = records.get(uuid)
        if instance is None or not instance.deleted:
            continue
        if timeout and not _older_than(instance.deleted_at, timeout):
            continue
        if action == 'log':
            LOG.warning('Detected instance %s that is deleted but still running', uuid)
        elif action == 'shutdown':
            LOG.info('Powering off instance %s that is deleted but still running', uuid)
            manager.driver.power_off(instance)
        else:
            LOG.info('Destroying instance %s that is deleted but still running', uuid)
            manager.driver.destroy(context, instance)
