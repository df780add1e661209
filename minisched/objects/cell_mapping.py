"""Cell mappings: where each cell's database and message bus are (API database)."""
import urllib.parse

from minisched.db.api import api as api_db
from minisched.objects import base
from minisched.objects import fields

CELL0_UUID = '00000000-0000-0000-0000-000000000000'


def mask_url(url):
    """``url`` with its password replaced by ``****`` (for logs and ``cell list``)."""
    if not url:
        return url
    masked = []
    for part in str(url).split(','):
        parsed = urllib.parse.urlsplit(part)
        if parsed.password:
            netloc = parsed.netloc.replace(':%s@' % parsed.password, ':****@', 1)
            part = urllib.parse.urlunsplit(parsed._replace(netloc=netloc))
        masked.append(part)
    return ','.join(masked)


@base.MinischedObjectRegistry.register
class CellMapping(base.MinischedTimestampObject, base.MinischedObject):
    """Version 1.1 added ``disabled``."""

    VERSION = '1.1'

    CELL0_UUID = CELL0_UUID

    fields = {
        'id': fields.IntegerField(read_only=True),
        'uuid': fields.UUIDField(),
        'name': fields.StringField(nullable=True),
        'transport_url': fields.StringField(),
        'database_connection': fields.StringField(),
        'disabled': fields.BooleanField(default=False),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        from oslo_utils import versionutils
        if versionutils.convert_version_to_tuple(target_version) < (1, 1):
            primitive.pop('disabled', None)

    @property
    def identity(self):
        if 'name' in self and self.name:
            return '%s(%s)' % (self.uuid, self.name)
        return self.uuid

    def is_cell0(self):
        return self.obj_attr_is_set('uuid') and self.uuid == CELL0_UUID

    @staticmethod
    def _from_db_object(context, cell, db_cell):
        for name in cell.fields:
            setattr(cell, name, db_cell.get(name))
        cell._context = context
        cell.obj_reset_changes()
        return cell

    @base.remotable_classmethod
    def get_by_uuid(cls, context, uuid):
        return cls._from_db_object(context, cls(), api_db.cell_mapping_get_by_uuid(context, uuid))

    @base.remotable
    def create(self):
        values = self.obj_get_changes()
        self._from_db_object(self._context, self, api_db.cell_mapping_create(self._context,
                                                                              values))

    @base.remotable
    def save(self):
        values = self.obj_get_changes()
        values.pop('id', None)
        self._from_db_object(self._context, self,
                             api_db.cell_mapping_update(self._context, self.uuid, values))

    @base.remotable
    def destroy(self):
        api_db.cell_mapping_destroy(self._context, self.uuid)


@base.MinischedObjectRegistry.register
class CellMappingList(base.ObjectListBase, base.MinischedObject):
    VERSION = '1.1'

    fields = {'objects': fields.ListOfObjectsField('CellMapping')}

    @base.remotable_classmethod
    def get_all(cls, context):
        return base.obj_make_list(context, cls(context), CellMapping,
                                  api_db.cell_mapping_get_all(context))
