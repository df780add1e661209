"""Host aggregates: named host sets with metadata (AZs, ratios, tenancy) in the API database."""
from oslo_utils import uuidutils

from minisched import exception
from minisched.db import lazy
from minisched.objects import base
from minisched.objects import fields

api_db = lazy.module('minisched.db.api.api')


@base.MinischedObjectRegistry.register
class Aggregate(base.MinischedPersistentObject, base.MinischedObject):
    """Version 1.2 added ``uuid``, 1.3 ``get_by_uuid``.

    ``deleted`` and ``deleted_at`` are always False and None: aggregates are hard-deleted,
    and Nova keeps the two fields for its old cell-database aggregates only.
    """

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
            if name in ('deleted', 'deleted_at'):
                continue
            value = db_aggregate.get(name)
            if name == 'hosts':
                value = list(value or [])
            elif name == 'metadata':
                value = dict(value or {})
            setattr(aggregate, name, value)
        aggregate.deleted, aggregate.deleted_at = False, None
        aggregate._context = context
        aggregate.obj_reset_changes()
        return aggregate

    def _changes(self):
        """What ``create`` and ``save`` write: hosts have their own methods, and the deleted
        fields no column."""
        updates = self.obj_get_changes()
        for name in ('hosts', 'deleted', 'deleted_at'):
            updates.pop(name, None)
        return updates

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
        updates = self._changes()
        metadata = updates.pop('metadata', None)
        updates.setdefault('uuid', uuidutils.generate_uuid())
        self._from_db_object(self._context, self,
                             api_db.aggregate_create(self._context, updates, metadata=metadata))

    @base.remotable
    def save(self):
        updates = self._changes()
        updates.pop('id', None)
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
        return cls._make(context, api_db.aggregate_get_all(context))

    @classmethod
    def _make(cls, context, rows):
        return base.obj_make_list(context, cls(context), Aggregate, rows)

    @base.remotable_classmethod
    def get_by_host(cls, context, host, key=None):
        return cls._make(context, api_db.aggregate_get_by_host(context, host, key=key))

    @base.remotable_classmethod
    def get_by_metadata_key(cls, context, key, hosts=None):
        """Aggregates with metadata ``key``, of the ``hosts`` given (any host in common).

        Each one's ``metadata`` holds that key only, as Nova's.
        """
        rows = api_db.aggregate_get_by_metadata(context, key=key)
        if hosts is not None:
            hosts = set(hosts)
            rows = [row for row in rows if hosts.intersection(row['hosts'])]
        return cls._make(context, rows)

    @base.remotable_classmethod
    def get_by_metadata(cls, context, key=None, value=None):
        """Aggregates with metadata ``key`` set to ``value`` (either may be left out, not
        both); each one's ``metadata`` holds the matching items only, as Nova's."""
        return cls._make(context, api_db.aggregate_get_by_metadata(context, key=key,
                                                                   value=value))

    @classmethod
    def get_non_matching_by_metadata_keys(cls, context, ignored_keys, key_prefix, value):
        """Aggregates with an item set to ``value`` whose key starts with ``key_prefix`` and
        is none of ``ignored_keys`` (Nova's, for its forbidden-traits request filter)."""
        return cls._make(context, api_db.aggregate_get_non_matching_by_metadata_keys(
            context, ignored_keys, key_prefix, value))
