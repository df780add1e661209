"""Host aggregates: named host sets with metadata (AZs, ratios, tenancy) in the API database."""
from oslo_utils import uuidutils

from minisched import exception
from minisched.db import lazy
from minisched.objects import base
from minisched.objects import fields

api_db = lazy.module('minisched.db.api.api')


@base.MinischedObjectRegistry.register
class Aggregate(base.MinischedTimestampObject, base.MinischedObject):
    VERSION = '1.3'

    fields = {
        'id': fields.IntegerField(),
        'uuid': fields.UUIDField(nullable=False),
        'name': fields.StringField(),
        'hosts': fields.ListOfStringsField(nullable=True),
        'metadata': fields.DictOfStringsField(nullable=True),
    }

    obj_extra_fields = ['availability_zone']

    @staticmethod
    def _from_db_object(context, aggregate, db_aggregate):
        for name in aggregate.fields:
            value = db_aggregate.get(name)
            if name == 'hosts':
                value = list(value or [])
            elif name == 'metadata':
                value = dict(value or {})
            setattr(aggregate, name, value)
        aggregate._context = context
        aggregate.obj_reset_changes()
        return aggregate

    @property
    def availability_zone(self):
        return self.metadata.get('availability_zone', None)

    @base.remotable_classmethod
    def get_by_id(cls, context, aggregate_id):
        return cls._from_db_object(context, cls(), api_db.aggregate_get(context, aggregate_id))

    @base.remotable_classmethod
    def get_by_uuid(cls, context, aggregate_uuid):
        return cls._from_db_object(context, cls(),
                                   api_db.aggregate_get_by_uuid(context, aggregate_uuid))

    @base.remotable
    def create(self):
        if self.obj_attr_is_set('id'):
            raise exception.ObjectActionError(action='create', reason='already created')
        updates = self.obj_get_changes()
        metadata = updates.pop('metadata', None)
        updates.pop('hosts', None)
        updates.setdefault('uuid', uuidutils.generate_uuid())
        self._from_db_object(self._context, self,
                             api_db.aggregate_create(self._context, updates, metadata=metadata))

    @base.remotable
    def save(self):
        updates = self.obj_get_changes()
        updates.pop('id', None)
        updates.pop('hosts', None)
        metadata = updates.pop('metadata', None)
        if updates:
            api_db.aggregate_update(self._context, self.id, updates)
        if metadata is not None:
            api_db.aggregate_metadata_update(self._context, self.id, metadata)
        self._from_db_object(self._context, self, api_db.aggregate_get(self._context, self.id))

    @base.remotable
    def update_metadata(self, updates):
        api_db.aggregate_metadata_update(self._context, self.id, updates)
        self._from_db_object(self._context, self, api_db.aggregate_get(self._context, self.id))

    @base.remotable
    def add_host(self, host):
        api_db.aggregate_host_add(self._context, self.id, host)
        self._from_db_object(self._context, self, api_db.aggregate_get(self._context, self.id))

    @base.remotable
    def delete_host(self, host):
        api_db.aggregate_host_delete(self._context, self.id, host)
        self._from_db_object(self._context, self, api_db.aggregate_get(self._context, self.id))

    @base.remotable
    def destroy(self):
        api_db.aggregate_destroy(self._context, self.id)


@base.MinischedObjectRegistry.register
class AggregateList(base.ObjectListBase, base.MinischedObject):
    VERSION = '1.3'

    fields = {'objects': fields.ListOfObjectsField('Aggregate')}

    @base.remotable_classmethod
    def get_all(cls, context):
        return base.obj_make_list(context, cls(context), Aggregate,
                                  api_db.aggregate_get_all(context))

    @base.remotable_classmethod
    def get_by_host(cls, context, host, key=None):
        rows = api_db.aggregate_get_by_host(context, host)
        if key is not None:
            rows = [row for row in rows if key in (row.get('metadata') or {})]
        return base.obj_make_list(context, cls(context), Aggregate, rows)
