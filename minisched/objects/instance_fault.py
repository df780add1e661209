"""Instance faults: why an instance went to ERROR, as the user sees it."""
import traceback

from minisched import exception
from minisched.db import lazy
from minisched.objects import base
from minisched.objects import fields

db = lazy.module('minisched.db.main.api')


@base.MinischedObjectRegistry.register
class InstanceFault(base.PlainRowMixin, base.MinischedPersistentObject,
                    base.MinischedObject):
    """Faults are kept until their instance is archived: ``deleted`` stays False."""

    VERSION = '1.2'

    fields = {
        'id': fields.IntegerField(),
        'instance_uuid': fields.UUIDField(),
        'code': fields.IntegerField(),
        'message': fields.StringField(nullable=True),
        'details': fields.StringField(nullable=True),
        'host': fields.StringField(nullable=True),
    }

    @base.remotable_classmethod
    def get_latest_for_instance(cls, context, instance_uuid):
        """The instance's newest fault, or None."""
        rows = db.instance_fault_get_by_instance_uuids(context, [instance_uuid])
        if rows[instance_uuid]:
            return cls._from_db_object(context, cls(), rows[instance_uuid][0])
        return None

    @base.remotable
    def create(self):
        values = {name: getattr(self, name) for name in
                  ('instance_uuid', 'code', 'message', 'details', 'host')
                  if self.obj_attr_is_set(name)}
        self._from_db_object(self._context, self, db.instance_fault_create(self._context,
                                                                            values))

    @classmethod
    def from_exception(cls, context, instance_uuid, fault, host=None, with_details=True):
        """Nova's ``add_instance_fault_from_exc``: code, message and (maybe) a traceback."""
        code = fault.kwargs.get('code', 500) if isinstance(
            fault, exception.MinischedException) else 500
        message = (fault.format_message() if hasattr(fault, 'format_message')
                   else str(fault)) or fault.__class__.__name__
        details = ''.join(traceback.format_exception(type(fault), fault, fault.__traceback__)) \
            if with_details and code == 500 else None
        return cls(context, instance_uuid=instance_uuid, code=code, message=message[:255],
                   details=details, host=host)


@base.MinischedObjectRegistry.register
class InstanceFaultList(base.ObjectListBase, base.MinischedObject):
    VERSION = '1.2'

    fields = {'objects': fields.ListOfObjectsField('InstanceFault')}

    @base.remotable_classmethod
    def get_by_instance_uuids(cls, context, instance_uuids):
        faults = db.instance_fault_get_by_instance_uuids(context, instance_uuids)
        rows = [fault for uuid in instance_uuids for fault in faults.get(uuid, [])]
        return base.obj_make_list(context, cls(context), InstanceFault, rows)

    @base.remotable_classmethod
    def get_latest_by_instance_uuids(cls, context, instance_uuids):
        """The newest fault of each of the instances that have one."""
        faults = db.instance_fault_get_by_instance_uuids(context, instance_uuids)
        rows = [faults[uuid][0] for uuid in dict.fromkeys(instance_uuids) if faults.get(uuid)]
        return base.obj_make_list(context, cls(context), InstanceFault, rows)
