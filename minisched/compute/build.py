"""Building an instance on this compute: claim, spawn, report, or hand back for reschedule.

Nova's ``_do_build_and_run_instance`` / ``_build_and_run_instance`` semantics: a failed claim
or a failed spawn becomes a RescheduledException; with retry information the build goes back
to the conductor (``build_instances`` with the remaining alternates), without it the instance
goes to ERROR. A BuildAbortException or anything unexpected ends in ERROR, never rescheduled.

Every write of a build (the instance, its fault, its action events, the claim) is retried while
the message bus is away (no answer, or oslo.messaging gave up reconnecting: see
``minisched.messaging.bus_errors``) or the conductor answers that the database is unavailable
(DBTransientError),
with backoff, for up to ``[DEFAULT] long_rpc_timeout`` each: a build caught in an outage of
the message bus or the database ends ACTIVE or ERROR once it is over. A build whose writes
gave up stays BUILDING for the conductor's stuck-build check. When that check (or anyone
else) ended the build first, the compute finds the instance changed under it: it removes the
guest, gives the claim back and writes nothing more.
"""
import collections
import logging
import threading
import traceback

import oslo_messaging as messaging
from oslo_utils import timeutils

from minisched.messaging import bus_errors
from minisched import exception
from minisched.objects import instance as instance_obj
from minisched.objects import instance_action
from minisched.objects import instance_fault
from minisched import utils

LOG = logging.getLogger(__name__)

ACTIVE, FAILED, RESCHEDULED = 'active', 'failed', 'rescheduled'
#: A second delivery of a build message this compute already ran: nothing done, nothing counted.
DUPLICATE = 'duplicate'
#: The build was ended by someone else (the conductor's stuck-build check): nothing counted.
SUPERSEDED = 'superseded'
#: What a write of the build is retried on: a message bus that is away (no answer, or the
#: driver gave up reconnecting: ``bus_errors``), or a database that will be back.
RETRIED = bus_errors.UNREACHABLE + (exception.DBTransientError,)
#: The instance changed under the build: someone else decided its state.
_STATE_CHANGED = (exception.UnexpectedVMStateError, exception.UnexpectedTaskStateError)
EVENT = 'compute_build_and_run_instance'
#: Builds remembered to recognise a message delivered twice (uuid and attempt number each).
SEEN_BUILDS = 10000


class _Rescheduled(Exception):
    """Marks a build handed back to the conductor (its event ends as Error)."""


class _NotBuilt(Exception):
    """Marks a repeated build message whose conditional claim was refused (its event ends
    as Error: the instance was built, or ended, by someone else)."""


class _NotStarted(Exception):
    """The build did not start (the instance is gone, or another delivery or someone else
    decided its state): ``result`` is what the build counts as."""

    def __init__(self, result):
        super().__init__(result)
        self.result = result


class Builder:
    """Runs one build for the compute manager that owns it."""

    def __init__(self, manager):
        self.manager = manager
        self.host = manager.host
        self.driver = manager.driver
        self.rt = manager.rt
        self._seen = collections.OrderedDict()
        self._seen_lock = threading.Lock()

    def build(self, context, instance, image, request_spec, filter_properties, node, limits,
              host_list, **kwargs):
        filter_properties = dict(filter_properties or {})
        attempt = (filter_properties.get('retry') or {}).get('num_attempts', 0)
        if self._seen_before((instance.uuid, attempt)):
            LOG.info('Ignoring a second delivery of build attempt %d of instance %s.',
                     attempt, instance.uuid)
            return DUPLICATE
        result = FAILED
        try:
            with _EventReporter(self, context, EVENT, self.host, instance.uuid) as reporter:
                result = self._do_build(context, instance, image, request_spec,
                                        filter_properties, node, limits, host_list, kwargs)
                # Who ended the build finished its event (as Error, with the reason).
                reporter.finished_elsewhere = result == SUPERSEDED
                if result == RESCHEDULED:
                    # Recorded as an Error event so that the action shows why it moved on.
                    raise _Rescheduled(filter_properties['retry'].get('exc_reason'))
                if result == DUPLICATE:
                    # An Error event too: nothing was built here (not a second success).
                    raise _NotBuilt('Not built on %s: another delivery of its build message '
                                    'built it, or its build was ended.' % self.host)
        except Exception as exc:
            # The event recorded the failure; the instance state was set by _do_build.
            LOG.debug('Build of %s on %s ended with: %s', instance.uuid, self.host, exc)
        if result in (DUPLICATE, SUPERSEDED):
            return result
        node = node or self.driver.get_available_nodes()[0]
        if result == ACTIVE:
            self.rt.build_succeeded(node)
        else:
            if result == FAILED:
                # The instance counts on no host now: nor in Placement (as Nova).
                self.manager.delete_allocation_for_instance(context, instance, force=True)
            self.rt.build_failed(node)
        return result

    def _seen_before(self, key):
        """Whether this build (instance, attempt) already came here; remembers it if not.

        RabbitMQ delivers a message again when the ack of the first delivery was lost with the
        connection, and a publisher whose confirm was lost publishes it twice: building twice
        would spawn the instance twice (or on two hosts once it was rescheduled).
        """
        with self._seen_lock:
            if key in self._seen:
                return True
            self._seen[key] = None
            if len(self._seen) > SEEN_BUILDS:
                self._seen.popitem(last=False)
            return False

    def _do_build(self, context, instance, image, request_spec, filter_properties, node,
                  limits, host_list, kwargs):
        node = node or self.driver.get_available_nodes()[0]
        try:
            if kwargs.get('accel_uuids'):
                raise exception.BuildAbortException(
                    instance_uuid=instance.uuid,
                    reason='accelerator requests (accel_uuids) need Cyborg, which minisched '
                           'does not have')
            self._build_and_run(context, instance, image, node, limits)
            return ACTIVE
        except _NotStarted as not_started:
            return not_started.result
        except exception.RescheduledException as exc:
            try:
                return self._reschedule_or_fail(context, instance, image, request_spec,
                                                filter_properties, host_list, exc, kwargs)
            except _STATE_CHANGED as changed:
                return self._stand_down(context, instance, node, changed)
        except (exception.InstanceNotFound, exception.UnexpectedDeletingTaskStateError):
            LOG.debug('Instance %s was deleted during its build.', instance.uuid)
            return FAILED
        except _STATE_CHANGED as exc:
            return self._stand_down(context, instance, node, exc)
        except exception.BuildAbortException as exc:
            LOG.error('Build of instance %s aborted: %s', instance.uuid, exc.format_message())
            self._fail(context, instance, exc)
            raise
        except Exception as exc:
            LOG.exception('Unexpected build failure, not rescheduling build of %s.',
                          instance.uuid)
            self._fail(context, instance, exc)
            raise

    def _claim(self, context, instance, node, limits):
        """Claim the instance's resources and record the start of its spawn in one save.

        The save writes host, node, pinned CPUs and devices (the claim's) with
        ``task_state`` SPAWNING, on condition that the instance is still BUILDING and not
        started (``task_state`` SCHEDULING or None): a second delivery of the build message
        (after a restart of this compute, say) or a build that someone else ended is refused
        by that same write, before anything is spawned (Nova writes the start of the build,
        the claim and the spawning state in three saves). Raises :class:`_NotStarted` then.
        """
        instance.vm_state = instance_obj.BUILDING
        instance.task_state = instance_obj.SPAWNING
        tried = []

        def save():
            tried.append(1)
            try:
                instance.save(expected_vm_state=instance_obj.BUILDING,
                              expected_task_state=[instance_obj.SCHEDULING, None])
            except _STATE_CHANGED:
                # A retry after a lost answer may find its own write there.
                if len(tried) == 1 or not self._already(instance, {
                        'vm_state': instance_obj.BUILDING, 'host': self.host,
                        'task_state': instance_obj.SPAWNING, 'node': node}):
                    raise
        try:
            return self._until_answered(
                lambda: self.rt.instance_claim(context, instance, node, limits, save=save),
                'claim of instance %s' % instance.uuid)
        except (exception.InstanceNotFound, exception.UnexpectedDeletingTaskStateError):
            LOG.debug('Instance %s disappeared before build.', instance.uuid)
            raise _NotStarted(FAILED)
        except _STATE_CHANGED as exc:
            # Only a BUILDING instance is built: a late duplicate of this message must not
            # rebuild an ACTIVE or ERROR one, nor one another delivery is building.
            LOG.info('Not building instance %s: %s (a repeated build message).', instance.uuid,
                     exc.format_message())
            raise _NotStarted(DUPLICATE)

    def _build_and_run(self, context, instance, image, node, limits):
        try:
            with self._claim(context, instance, node, limits):
                self.driver.spawn(context, instance, image, injected_files=[],
                                  admin_password=None, allocations=None)
        except exception.ComputeResourcesUnavailable as exc:
            LOG.debug('Build of %s failed: %s', instance.uuid, exc.format_message())
            raise exception.RescheduledException(instance_uuid=instance.uuid,
                                                 reason=exc.format_message())
        except (exception.BuildAbortException, exception.InstanceNotFound, _NotStarted,
                *_STATE_CHANGED):
            raise
        except Exception as exc:
            raise exception.RescheduledException(instance_uuid=instance.uuid, reason=str(exc))
        instance.power_state = self.driver.get_info(instance).state
        instance.vm_state = instance_obj.ACTIVE
        instance.task_state = None
        instance.launched_at = timeutils.utcnow()
        self._save(instance, 'ACTIVE', expected_task_state=instance_obj.SPAWNING)
        LOG.info('Instance %s is ACTIVE on %s:%s', instance.uuid, self.host, node)
        self.manager.update_scheduler_instance_info(context, instance)

    def _reschedule_or_fail(self, context, instance, image, request_spec, filter_properties,
                            host_list, exc, kwargs):
        reason = exc.kwargs.get('reason')
        retry = filter_properties.get('retry')
        if not retry:
            LOG.debug('Retry info not present, will not reschedule %s', instance.uuid)
            self._fail(context, instance, exc, message=reason)
            return FAILED
        LOG.info('Rescheduling build of %s from %s: %s', instance.uuid, self.host, reason)
        retry['exc'] = traceback.format_exception(type(exc), exc, exc.__traceback__)[-1]
        retry['exc_reason'] = reason
        instance.host = None
        instance.node = None
        instance.task_state = instance_obj.SCHEDULING
        self._save(instance, 'reschedule', expected_vm_state=instance_obj.BUILDING)
        # The conductor claims the alternate's allocation request in its place (as Nova).
        self.manager.delete_allocation_for_instance(context, instance, force=True)
        self.manager.compute_task_api.build_instances(
            context, [instance], image, filter_properties, kwargs.get('admin_password'),
            kwargs.get('injected_files'), kwargs.get('requested_networks'),
            kwargs.get('security_groups'), kwargs.get('block_device_mapping'),
            request_spec=request_spec, host_lists=[list(host_list or [])])
        return RESCHEDULED

    def _fail(self, context, instance, exc, message=None):
        """ERROR with a fault; host and node cleared as Nova does for a failed build.

        The fault is written first: when the ERROR cannot be written the instance stays
        BUILDING with its reason recorded, for the conductor's stuck-build check. The
        write is conditional, so that a build that check ended already stays as it left it.
        """
        fault = instance_fault.InstanceFault.from_exception(context, instance.uuid, exc,
                                                            host=self.host)
        if message:
            fault.message = message[:255]
        try:
            self._until_answered(fault.create, 'fault of %s' % instance.uuid)
            instance.host = instance.node = instance.launched_on = None
            instance.availability_zone = None
            instance.vm_state = instance_obj.ERROR
            instance.task_state = None
            self._save(instance, 'ERROR', expected_vm_state=instance_obj.BUILDING)
        except exception.InstanceNotFound:
            LOG.debug('Instance %s deleted before it could be set to ERROR', instance.uuid)
        except _STATE_CHANGED as changed:
            LOG.info('Instance %s was not set to ERROR by its build: %s', instance.uuid,
                     changed.format_message())

    def _stand_down(self, context, instance, node, exc):
        """The instance changed under the build (the conductor's stuck-build check ended
        it): remove the guest, give the claim back, write nothing."""
        LOG.warning('Build of instance %s on %s ended by someone else (%s); removing what '
                    'it left here.', instance.uuid, self.host, exc.format_message())
        try:
            self.driver.destroy(context, instance)
        except Exception:
            LOG.exception('Could not remove the guest of instance %s', instance.uuid)
        self.rt.abort_instance_claim(instance, node)
        return SUPERSEDED

    # -- conductor calls that outlast a broker or conductor outage -----------------------

    def _until_answered(self, call, what):
        """``call()``, tried again while the message bus is away (``RETRIED``: no answer,
        or the driver gave up reconnecting) or the conductor answers that the database is
        unavailable (DBTransientError).

        A build must end ACTIVE or ERROR in the database; while the broker, the conductor or
        the database is away the build waits (backing off: ``minisched.utils``) instead of
        leaving the instance BUILDING. Gives up after ``[DEFAULT] long_rpc_timeout``.
        """
        return utils.until_done(
            call, lambda exc: isinstance(exc, RETRIED), self.manager.conf.long_rpc_timeout,
            lambda exc, delay: '%s (%s); trying again in %d s.' % (unanswered_reason(exc),
                                                                   what, delay), log=LOG)

    def _save(self, instance, what, **expected):
        """``instance.save(**expected)`` through ``_until_answered``.

        A save that timed out may still have landed (its reply was what got lost): when the
        retry then finds the state already written, that counts as saved.
        """
        wanted = {name: getattr(instance, name) for name in instance.obj_what_changed()
                  if name in ('vm_state', 'task_state')}
        tried = []

        def save():
            tried.append(1)
            try:
                instance.save(**expected)
            except (exception.UnexpectedTaskStateError, exception.UnexpectedVMStateError):
                if len(tried) == 1 or not wanted or not self._already(instance, wanted):
                    raise
        self._until_answered(save, '%s of instance %s' % (what, instance.uuid))

    @staticmethod
    def _already(instance, wanted):
        current = instance_obj.Instance.get_by_uuid(instance._context, instance.uuid)
        if any(getattr(current, name) != value for name, value in wanted.items()):
            return False
        instance.obj_reset_changes()
        return True


def unanswered_reason(exc):
    """Why a retried write of a build failed, in one line (a remote exception's str holds
    its traceback)."""
    if isinstance(exc, exception.DBTransientError):
        return 'The database is unavailable: %s' % exc.kwargs.get('reason', exc)
    if isinstance(exc, messaging.MessagingTimeout):
        return 'The conductor did not answer'
    return 'The message bus is unreachable: %s' % bus_errors.describe(exc)


class _EventReporter(instance_action.EventReporter):
    """The build's event, recorded through the builder's retries (see ``_until_answered``);
    one that still fails costs the event, not the build."""

    def __init__(self, builder, *args):
        super().__init__(*args)
        self._builder = builder
        self.finished_elsewhere = False

    def __exit__(self, exc_type, exc_val, exc_tb):
        if self.finished_elsewhere:
            return False
        return super().__exit__(exc_type, exc_val, exc_tb)

    def _record(self, uuid, call):
        try:
            return self._builder._until_answered(
                call, 'event %s of instance %s' % (self.event_name, uuid))
        except RETRIED as exc:
            LOG.warning('Event %s of instance %s not recorded: %s', self.event_name, uuid,
                        unanswered_reason(exc))
            return None
