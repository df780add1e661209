"""Instance actions and their events: where a request's time went and why it failed."""
import logging
import traceback

from oslo_utils import timeutils

from minisched.messaging import bus_errors
from minisched.db import lazy
from minisched.objects import base
from minisched.objects import fields

db = lazy.module('minisched.db.main.api')

LOG = logging.getLogger(__name__)

CREATE = 'create'
DELETE = 'delete'


@base.MinischedObjectRegistry.register
class InstanceAction(base.PlainRowMixin, base.MinischedTimestampObject,
                   base.MinischedObject):
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

    @base.remotable_classmethod
    def action_start(cls, context, instance_uuid, action_name, want_result=True):
        values = {'action': action_name, 'instance_uuid': instance_uuid,
                  'request_id': context.request_id, 'user_id': context.user_id,
                  'project_id': context.project_id, 'start_time': timeutils.utcnow()}
        db_action = db.action_start(context, values)
        return cls._from_db_object(context, cls(), db_action) if want_result else None

    @base.remotable_classmethod
    def get_by_request_id(cls, context, instance_uuid, request_id):
        db_action = db.action_get_by_request_id(context, instance_uuid, request_id)
        return cls._from_db_object(context, cls(), db_action) if db_action else None


@base.MinischedObjectRegistry.register
class InstanceActionList(base.ObjectListBase, base.MinischedObject):
    VERSION = '1.1'

    fields = {'objects': fields.ListOfObjectsField('InstanceAction')}

    @base.remotable_classmethod
    def get_by_instance_uuid(cls, context, instance_uuid):
        return base.obj_make_list(context, cls(context), InstanceAction,
                                  db.actions_get(context, instance_uuid))


@base.MinischedObjectRegistry.register
class InstanceActionEvent(base.PlainRowMixin, base.MinischedTimestampObject,
                   base.MinischedObject):
    """Version 1.4 is Nova's; minisched's 1.5 lets event_finish_with_failure name the host."""

    VERSION = '1.5'

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

    @base.remotable_classmethod
    def event_start(cls, context, instance_uuid, event_name, want_result=True, host=None):
        values = {'event': event_name, 'instance_uuid': instance_uuid,
                  'request_id': context.request_id, 'start_time': timeutils.utcnow(),
                  'host': host}
        db_event = db.action_event_start(context, values)
        return cls._from_db_object(context, cls(), db_event) if want_result else None

    @base.remotable_classmethod
    def event_finish_with_failure(cls, context, instance_uuid, event_name, exc_val=None,
                                  exc_tb=None, want_result=None, host=None):
        values = {'event': event_name, 'instance_uuid': instance_uuid,
                  'request_id': context.request_id, 'finish_time': timeutils.utcnow(),
                  'result': 'Error' if exc_val else 'Success', 'host': host}
        if exc_val:
            values['details'] = str(exc_val)[:255]
            values['traceback'] = exc_tb
        db_event = db.action_event_finish(context, values)
        return cls._from_db_object(context, cls(), db_event) if want_result else None

    @classmethod
    def event_finish(cls, context, instance_uuid, event_name, want_result=True):
        return cls.event_finish_with_failure(context, instance_uuid, event_name,
                                             want_result=want_result)


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
    message and a traceback summary when the block raises (the exception propagates).
    """

    def __init__(self, context, event_name, host, *instance_uuids):
        self.context = context
        self.event_name = event_name
        self.host = host
        self.instance_uuids = instance_uuids

    def __enter__(self):
        for uuid in self.instance_uuids:
            self._record(InstanceActionEvent.event_start, self.context, uuid, self.event_name,
                         want_result=False, host=self.host)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        tb = ''.join(traceback.format_tb(exc_tb)[-3:]) if exc_tb else None
        for uuid in self.instance_uuids:
            self._record(InstanceActionEvent.event_finish_with_failure, self.context, uuid,
                         self.event_name, exc_val=exc_val, exc_tb=tb, want_result=False,
                         host=self.host)
        return False

    def _record(self, method, context, uuid, *args, **kwargs):
        """Record an event; a conductor that does not answer costs the event, not the work.

        Events are a history for the operator: a build running while the broker or the
        conductor is away must still end ACTIVE or ERROR rather than abort on its bookkeeping.
        """
        try:
            method(context, uuid, *args, **kwargs)
        except bus_errors.UNREACHABLE as exc:
            LOG.warning('Event %s of instance %s not recorded: %s', self.event_name, uuid,
                        bus_errors.describe(exc))
