"""Instance actions and their events: where a request's time went and why it failed."""
import logging
import traceback

from oslo_utils import timeutils
from oslo_utils import versionutils

from minisched import exception

from minisched.messaging import bus_errors
from minisched.db import lazy
from minisched.objects import base
from minisched.objects import fields

db = lazy.module('minisched.db.main.api')

LOG = logging.getLogger(__name__)

CREATE = 'create'
DELETE = 'delete'


def _finish_values(context, instance_uuid, event_name, exc_val, exc_tb):
    """An event's finish (Nova's ``pack_action_event_finish``): Error with the exception's
    message and the traceback when there was an exception (or its traceback), else Success."""
    values = {'event': event_name, 'instance_uuid': instance_uuid,
              'request_id': context.request_id, 'finish_time': timeutils.utcnow(),
              'result': 'Success'}
    if exc_val is not None or exc_tb is not None:
        values['result'] = 'Error'
        if exc_val is not None:
            values['details'] = (exc_val.format_message() if hasattr(exc_val, 'format_message')
                                 else str(exc_val))[:255]
        values['traceback'] = exc_tb
    return values


@base.MinischedObjectRegistry.register
class InstanceAction(base.PlainRowMixin, base.MinischedPersistentObject,
                     base.MinischedObject):
    """An action on an instance. Actions are kept with their instance: ``deleted`` stays
    False (Nova soft-deletes them only as it archives the instance)."""

    VERSION = '1.2'

    fields = {
        'id': fields.IntegerField(),
        'action': fields.StringField(nullable=True),
        'instance_uuid': fields.UUIDField(nullable=True),
        'request_id': fields.StringField(nullable=True),
        'user_id': fields.StringField(nullable=True),
        'project_id': fields.StringField(nullable=True),
        'start_time': fields.DateTimeField(nullable=True),
        'finish_time': fields.DateTimeField(nullable=True),
        'message': fields.StringField(nullable=True),
    }

    @staticmethod
    def _start_values(context, instance_uuid, action_name):
        return {'action': action_name, 'instance_uuid': instance_uuid,
                'request_id': context.request_id, 'user_id': context.user_id,
                'project_id': context.project_id, 'start_time': timeutils.utcnow()}

    @staticmethod
    def _finish_values(context, instance_uuid):
        return {'instance_uuid': instance_uuid, 'request_id': context.request_id,
                'finish_time': timeutils.utcnow()}

    @base.remotable_classmethod
    def get_by_request_id(cls, context, instance_uuid, request_id):
        db_action = db.action_get_by_request_id(context, instance_uuid, request_id)
        return cls._from_db_object(context, cls(), db_action) if db_action else None

    @base.remotable_classmethod
    def action_start(cls, context, instance_uuid, action_name, want_result=True):
        db_action = db.action_start(context, cls._start_values(context, instance_uuid,
                                                               action_name))
        return cls._from_db_object(context, cls(), db_action) if want_result else None

    @base.remotable_classmethod
    def action_finish(cls, context, instance_uuid, want_result=True):
        """Finish the instance's action of the context's request."""
        db_action = db.action_finish(context, cls._finish_values(context, instance_uuid))
        return cls._from_db_object(context, cls(), db_action) if want_result else None

    @base.remotable
    def finish(self):
        db_action = db.action_finish(self._context,
                                     self._finish_values(self._context, self.instance_uuid))
        self._from_db_object(self._context, self, db_action)

    @base.remotable
    def create(self):
        """Write this action as it is (Nova copies actions between cells with it)."""
        if 'id' in self:
            raise exception.ObjectActionError(action='create', reason='already created')
        self._from_db_object(self._context, self, db.action_start(self._context,
                                                                  self.obj_get_changes()))


@base.MinischedObjectRegistry.register
class InstanceActionList(base.ObjectListBase, base.MinischedObject):
    VERSION = '1.1'

    fields = {'objects': fields.ListOfObjectsField('InstanceAction')}

    @base.remotable_classmethod
    def get_by_instance_uuid(cls, context, instance_uuid, limit=None, marker=None,
                             filters=None):
        """The instance's actions, newest first; ``marker`` is the request id of the last
        action of the previous page."""
        return base.obj_make_list(context, cls(context), InstanceAction, db.actions_get(
            context, instance_uuid, limit=limit, marker=marker, filters=filters))


@base.MinischedObjectRegistry.register
class InstanceActionEvent(base.PlainRowMixin, base.MinischedPersistentObject,
                          base.MinischedObject):
    """One step of an action. An event started with ``event_start(want_result=True)`` is
    finished by its own ``finish_with_failure``: by its id, so that a build's event on a
    failed host, finished after a reschedule started the same event on the next host,
    finishes its own event and not the next host's."""

    VERSION = '1.4'

    fields = {
        'id': fields.IntegerField(),
        'event': fields.StringField(nullable=True),
        'action_id': fields.IntegerField(nullable=True),
        'start_time': fields.DateTimeField(nullable=True),
        'finish_time': fields.DateTimeField(nullable=True),
        'result': fields.StringField(nullable=True),
        'traceback': fields.StringField(nullable=True),
        'host': fields.StringField(nullable=True),
        'details': fields.StringField(nullable=True),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = versionutils.convert_version_to_tuple(target_version)
        if target < (1, 4):
            primitive.pop('details', None)
        if target < (1, 2):
            primitive.pop('host', None)

    @base.remotable_classmethod
    def get_by_id(cls, context, action_id, event_id):
        return cls._from_db_object(context, cls(),
                                   db.action_event_get_by_id(context, action_id, event_id))

    @base.remotable_classmethod
    def event_start(cls, context, instance_uuid, event_name, want_result=True, host=None):
        values = {'event': event_name, 'instance_uuid': instance_uuid,
                  'request_id': context.request_id, 'start_time': timeutils.utcnow(),
                  'host': host}
        db_event = db.action_event_start(context, values)
        return cls._from_db_object(context, cls(), db_event) if want_result else None

    @base.remotable_classmethod
    def event_finish_with_failure(cls, context, instance_uuid, event_name, exc_val=None,
                                  exc_tb=None, want_result=None):
        """Finish the newest event of that name of the context's request."""
        db_event = db.action_event_finish(context, _finish_values(
            context, instance_uuid, event_name, exc_val, exc_tb))
        return cls._from_db_object(context, cls(), db_event) if want_result else None

    @base.remotable_classmethod
    def event_finish(cls, context, instance_uuid, event_name, want_result=True):
        return cls.event_finish_with_failure(context, instance_uuid, event_name,
                                             want_result=want_result)

    @base.remotable
    def finish_with_failure(self, exc_val, exc_tb):
        """Finish this event (by its id): Error when given an exception (a message over
        RPC) or a traceback, else Success."""
        values = _finish_values(self._context, None, self.event, exc_val, exc_tb)
        for key in ('event', 'instance_uuid', 'request_id'):
            values.pop(key)
        self._from_db_object(self._context, self, db.action_event_finish_by_id(
            self._context, self.action_id, self.id, values))

    @base.remotable
    def finish(self):
        self.finish_with_failure(exc_val=None, exc_tb=None)

    @base.remotable
    def create(self, instance_uuid, request_id):
        """Write this event as it is, in the action of that instance and request."""
        if 'id' in self:
            raise exception.ObjectActionError(action='create', reason='already created')
        values = dict(self.obj_get_changes(), instance_uuid=instance_uuid,
                      request_id=request_id)
        self._from_db_object(self._context, self, db.action_event_start(self._context, values))


@base.MinischedObjectRegistry.register
class InstanceActionEventList(base.ObjectListBase, base.MinischedObject):
    VERSION = '1.1'

    fields = {'objects': fields.ListOfObjectsField('InstanceActionEvent')}

    @base.remotable_classmethod
    def get_by_action(cls, context, action_id):
        return base.obj_make_list(context, cls(context), InstanceActionEvent,
                                  db.action_events_get(context, action_id))


class EventReporter:
    """Context manager recording one event of an instance action (Nova's EventReporter).

    The event starts on entry; it finishes as Success, or as Error with the exception's
    message and a traceback summary when the block raises (the exception propagates). The
    event is finished by its id (``finish_with_failure``); one whose start was not recorded
    is left alone.
    """

    def __init__(self, context, event_name, host, *instance_uuids):
        self.context = context
        self.event_name = event_name
        self.host = host
        self.instance_uuids = instance_uuids
        self._events = {}

    def __enter__(self):
        for uuid in self.instance_uuids:
            self._events[uuid] = self._record(uuid, lambda uuid=uuid: (
                InstanceActionEvent.event_start(self.context, uuid, self.event_name,
                                                want_result=True, host=self.host)))
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        tb = ''.join(traceback.format_tb(exc_tb)[-3:]) if exc_tb else None
        message = None
        if exc_val is not None:
            message = exc_val.format_message() if hasattr(exc_val, 'format_message') \
                else str(exc_val)
        for uuid in self.instance_uuids:
            event = self._events.get(uuid)
            if event is not None:
                self._record(uuid, lambda event=event: event.finish_with_failure(message, tb))
        return False

    def _record(self, uuid, call):
        """Record an event; a conductor that does not answer costs the event, not the work.

        Events are a history for the operator: a build running while the broker or the
        conductor is away must still end ACTIVE or ERROR rather than abort on its bookkeeping.
        """
        try:
            return call()
        except bus_errors.UNREACHABLE as exc:
            LOG.warning('Event %s of instance %s not recorded: %s', self.event_name, uuid,
                        bus_errors.describe(exc))
            return None
