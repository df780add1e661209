"""Host mappings: which cell holds a compute host's records (API database)."""
from minisched.db.api import api as api_db
from minisched.objects import base
from minisched.objects import cell_mapping
from minisched.objects import fields


@base.MinischedObjectRegistry.register
class HostMapping(base.MinischedTimestampObject, base.MinischedObject):
    VERSION = '1.0'

    fields = {
        'id': fields.IntegerField(read_only=True),
        'host': fields.StringField(),
        'cell_mapping': fields.ObjectField('CellMapping'),
    }

    @staticmethod
    def _from_db_object(context, mapping, db_mapping):
        for name in ('id', 'host', 'created_at', 'updated_at'):
            setattr(mapping, name, db_mapping.get(name))
        mapping.cell_mapping = cell_mapping.CellMapping._from_db_object(
            context, cell_mapping.CellMapping(), db_mapping['cell_mapping'])
        mapping._context = context
        mapping.obj_reset_changes()
        return mapping

    @base.remotable_classmethod
    def get_by_host(cls, context, host):
        return cls._from_db_object(context, cls(), api_db.host_mapping_get_by_host(context, host))

    @base.remotable
    def create(self):
        db_mapping = api_db.host_mapping_create(self._context, self.host, self.cell_mapping.id)
        self._from_db_object(self._context, self, db_mapping)

    @base.remotable
    def destroy(self):
        api_db.host_mapping_destroy(self._context, self.host)


@base.MinischedObjectRegistry.register
class HostMappingList(base.ObjectListBase, base.MinischedObject):
    VERSION = '1.1'

    fields = {'objects': fields.ListOfObjectsField('HostMapping')}

    @base.remotable_classmethod
    def get_all(cls, context):
        return base.obj_make_list(context, cls(context), HostMapping,
                                  api_db.host_mapping_get_all(context))

    @base.remotable_classmethod
    def get_by_cell_id(cls, context, cell_id):
        return base.obj_make_list(context, cls(context), HostMapping,
                                  api_db.host_mapping_get_all(context, cell_id=cell_id))
