"""Instance mappings: which cell holds an instance (API database)."""
from minisched import exception
from minisched.db import lazy
from minisched.objects import base
from minisched.objects import cell_mapping
from minisched.objects import fields

api_db = lazy.module('minisched.db.api.api')


@base.MinischedObjectRegistry.register
class InstanceMapping(base.MinischedTimestampObject, base.MinischedObject):
    """``cell_mapping`` is None until the conductor has placed the instance in a cell.

    ``user_id`` is not nullable, as Nova's: a mapping written without one (by a tool that
    did not know the user) reads back with it unset, and reading it then is an error.
    """

    VERSION = '1.2'

    fields = {
        'id': fields.IntegerField(read_only=True),
        'instance_uuid': fields.UUIDField(),
        'cell_mapping': fields.ObjectField('CellMapping', nullable=True),
        'project_id': fields.StringField(),
        'user_id': fields.StringField(),
        'queued_for_delete': fields.BooleanField(default=False),
    }

    @staticmethod
    def _from_db_object(context, mapping, db_mapping):
        for name in ('id', 'instance_uuid', 'project_id', 'user_id', 'created_at',
                     'updated_at'):
            if name != 'user_id' or db_mapping.get(name) is not None:
                setattr(mapping, name, db_mapping.get(name))
        mapping.queued_for_delete = bool(db_mapping.get('queued_for_delete'))
        cell = db_mapping.get('cell_mapping')
        mapping.cell_mapping = (cell_mapping.CellMapping._from_db_object(
            context, cell_mapping.CellMapping(), cell) if cell else None)
        mapping._context = context
        mapping.obj_reset_changes()
        return mapping

    def obj_load_attr(self, attrname):
        raise exception.ObjectActionError(
            action='obj_load_attr', reason='attribute %s is not lazy-loadable' % attrname)

    def _db_values(self, updates):
        if 'cell_mapping' in updates:
            cell = updates.pop('cell_mapping')
            updates['cell_id'] = cell.id if cell is not None else None
        return updates

    @base.remotable_classmethod
    def get_by_instance_uuid(cls, context, instance_uuid):
        return cls._from_db_object(context, cls(),
                                   api_db.instance_mapping_get_by_instance_uuid(context,
                                                                                instance_uuid))

    @base.remotable
    def create(self):
        db_mapping = api_db.instance_mapping_create(self._context,
                                                    self._db_values(self.obj_get_changes()))
        self._from_db_object(self._context, self, db_mapping)

    @base.remotable
    def save(self):
        updates = self._db_values(self.obj_get_changes())
        updates.pop('id', None)
        db_mapping = api_db.instance_mapping_update(self._context, self.instance_uuid, updates)
        self._from_db_object(self._context, self, db_mapping)

    @base.remotable
    def destroy(self):
        api_db.instance_mapping_destroy(self._context, self.instance_uuid)
