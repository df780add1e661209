"""Build requests: an instance that is asked for but not yet in any cell (API database)."""
import re

from oslo_serialization import jsonutils
from oslo_utils import versionutils

from minisched import exception
from minisched.db import lazy
from minisched.objects import base
from minisched.objects import block_device
from minisched.objects import fields
from minisched.objects import instance as instance_obj
from minisched.objects import instance_extra
from minisched.objects import tag as tag_obj

api_db = lazy.module('minisched.db.api.api')

#: Instance fields a cell sets once the instance is placed: none of them is known while it
#: is a build request (Nova's ``BuildRequest._load_instance`` sets them so).
UNPLACED_FIELDS = ('host', 'node', 'compute_id', 'launched_on', 'launched_at',
                   'terminated_at', 'cell_name', 'pci_devices')
#: The build request's own object fields kept as the JSON of their primitive, as Nova's.
_OBJECT_COLUMNS = ('instance', 'block_device_mappings', 'tags')


@base.MinischedObjectRegistry.register
class BuildRequest(base.MinischedTimestampObject, base.MinischedObject):
    """An instance asked for and not yet in a cell, with the block device mappings and tags
    it was asked with. minisched has no volumes: the mappings are kept for the caller (and
    a Nova conductor), not acted on; the tags become the instance's in its cell."""

    VERSION = '1.3'

    fields = {
        'id': fields.IntegerField(),
        'instance_uuid': fields.UUIDField(),
        'project_id': fields.StringField(),
        'instance': fields.ObjectField('Instance'),
        # 1.1
        'block_device_mappings': fields.ObjectField('BlockDeviceMappingList'),
        # 1.3
        'tags': fields.ObjectField('TagList'),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = versionutils.convert_version_to_tuple(target_version)
        if target < (1, 3):
            primitive.pop('tags', None)
        if target < (1, 1):
            primitive.pop('block_device_mappings', None)

    @staticmethod
    def _from_db_object(context, req, db_req):
        """Set ``req`` from its row; a row without the JSON of its objects (``create_batch``'s,
        which wrote them from ``req``) keeps the objects ``req`` has."""
        for name in ('id', 'instance_uuid', 'project_id', 'created_at', 'updated_at'):
            setattr(req, name, db_req.get(name))
        if 'instance' in db_req:
            req.instance = instance_obj.Instance.obj_from_primitive(
                jsonutils.loads(db_req['instance']), context=context)
        for name, empty in (('block_device_mappings', block_device.BlockDeviceMappingList),
                            ('tags', tag_obj.TagList)):
            if name in db_req:
                setattr(req, name, instance_extra.decode(context, db_req[name]) or
                        empty(objects=[]))
            elif not req.obj_attr_is_set(name):
                setattr(req, name, empty(objects=[]))
        _fill_unplaced(req.instance, req)
        req._context = context
        req.obj_reset_changes()
        return req

    @base.remotable_classmethod
    def get_by_instance_uuid(cls, context, instance_uuid):
        return cls._from_db_object(context, cls(),
                                   api_db.build_request_get_by_instance_uuid(context,
                                                                             instance_uuid))

    def _db_values(self, updates=None):
        """Column values of ``updates`` (all the request's fields when None)."""
        if updates is None:
            updates = {name: getattr(self, name) for name in self.fields
                       if self.obj_attr_is_set(name) and name not in ('id', 'created_at',
                                                                      'updated_at')}
        for name in _OBJECT_COLUMNS:
            if name in updates:
                updates[name] = instance_extra.encode(updates[name])
        return updates

    @base.remotable
    def create(self):
        if self.obj_attr_is_set('id'):
            raise exception.ObjectActionError(action='create', reason='already created')
        self._from_db_object(self._context, self, api_db.build_request_create(
            self._context, self._db_values()))

    @base.remotable
    def save(self):
        """Write the changed fields (the instance as a whole when it changed)."""
        updates = self.obj_get_changes()
        for name in ('id', 'created_at', 'updated_at'):
            updates.pop(name, None)
        self._from_db_object(self._context, self, api_db.build_request_update(
            self._context, self.instance_uuid, self._db_values(updates)))

    @base.remotable
    def destroy(self):
        api_db.build_request_destroy(self._context, self.instance_uuid)


@base.MinischedObjectRegistry.register
class BuildRequestList(base.ObjectListBase, base.MinischedObject):
    VERSION = '1.0'

    fields = {'objects': fields.ListOfObjectsField('BuildRequest')}

    #: Filters matched exactly (a list: any of its values); other filters are regular
    #: expressions searched in the field's text, as Nova's.
    _EXACT = ('project_id', 'user_id', 'image_ref', 'vm_state', 'instance_type_id', 'uuid',
              'metadata', 'host', 'task_state', 'system_metadata')

    @base.remotable_classmethod
    def get_all(cls, context):
        return base.obj_make_list(context, cls(context), BuildRequest,
                                  api_db.build_request_get_all(context))

    @base.remotable_classmethod
    def get_by_filters(cls, context, filters, limit=None, marker=None, sort_keys=None,
                       sort_dirs=None):
        """The build requests whose instance matches ``filters`` (Nova's instance filters,
        matched in Python as Nova's are: the instance is JSON), sorted by ``sort_keys`` (by
        default created_at then id, newest first), after the instance ``marker``, at most
        ``limit``. None are deleted or cleaned."""
        if limit == 0 or filters.get('deleted') or filters.get('cleaned'):
            if marker:
                raise exception.MarkerNotFound(marker=marker)
            return cls(context, objects=[])
        found = [req for req in cls.get_all(context)
                 if _matches(req.instance, filters, cls._EXACT)]
        keys = list(sort_keys or ['created_at', 'id'])
        dirs = list(sort_dirs or []) + ['desc'] * (len(keys) - len(sort_dirs or []))
        for key, direction in reversed(list(zip(keys, dirs))):
            found.sort(key=lambda req, key=key: _sort_value(req, key),
                       reverse=direction == 'desc')
        start = 0
        if marker:
            uuids = [req.instance_uuid for req in found]
            if marker not in uuids:
                raise exception.MarkerNotFound(marker=marker)
            start = uuids.index(marker) + 1
        end = len(found) if limit is None else start + limit
        return cls(context, objects=found[start:end])


def _sort_value(req, key):
    """A sortable value of the request's ``key`` (its own, else its instance's): None
    sorts first, as in Nova's sort of build requests."""
    owner = req if key in req.fields else req.instance
    value = getattr(owner, key) if key in owner.fields and owner.obj_attr_is_set(key) \
        else None
    return (value is not None, value if value is not None else 0)


def _matches(instance, filters, exact):
    for key, wanted in filters.items():
        if key in ('deleted', 'cleaned', 'changes-since', 'changes-before'):
            continue
        if key not in instance.fields:
            continue
        value = getattr(instance, key) if instance.obj_attr_is_set(key) else None
        if key in exact:
            if isinstance(wanted, dict) and isinstance(value, dict):
                if any(value.get(k) != v for k, v in wanted.items()):
                    return False
            elif isinstance(wanted, (list, tuple, set)):
                if value not in wanted:
                    return False
            elif value != wanted:
                return False
        elif value is None or not re.search(str(wanted), str(value)):
            return False
    return True


def _fill_unplaced(instance, req):
    """Set what the instance of build request ``req`` cannot have yet, as Nova's API does:
    reading such a field would otherwise lazy-load the instance from a cell where it does
    not exist yet (InstanceNotFound), for ``server show`` and ``server list`` alike."""
    filled = [name for name in UNPLACED_FIELDS + ('locked', 'cleaned', 'disable_terminate',
                                                  'locked_by', 'created_at', 'updated_at')
              if not instance.obj_attr_is_set(name)]
    for name in UNPLACED_FIELDS + ('locked_by',):
        if name in filled:
            setattr(instance, name, None)
    instance.obj_set_defaults(*[name for name in ('locked', 'cleaned', 'disable_terminate')
                                if name in filled])
    # Never written to a cell: the build request's own times are the instance's.
    for name in ('created_at', 'updated_at'):
        if name in filled:
            setattr(instance, name, getattr(req, name))
    if not instance.obj_attr_is_set('tags'):
        # Tags asked for are a change: the instance's creation in its cell writes them.
        instance.tags = req.tags
        if not len(req.tags):
            filled.append('tags')
    # Not changes to write: the instance's creation in its cell writes what it has.
    instance.obj_reset_changes(filled)


def create_batch(context, build_requests, specs, mappings, group_uuid=None):
    """Write the build requests, request specs and instance mappings of one create (and the
    instances' membership of group ``group_uuid``) in one transaction
    (``build_batch_create``): either every row is written or none is. The objects are
    updated as their own ``create`` updates them. For callers with database access."""
    request_rows, spec_rows = api_db.build_batch_create(
        context, [{'instance_uuid': spec.instance_uuid, 'spec': spec._to_json()}
                  for spec in specs],
        [request._db_values() for request in build_requests],
        [mapping._db_values(mapping.obj_get_changes()) for mapping in mappings],
        group_uuid)
    for request, row in zip(build_requests, request_rows):
        BuildRequest._from_db_object(context, request, row)
    for spec, row in zip(specs, spec_rows):
        spec.id = row['id']
        spec.obj_reset_changes(['id'])


def withdraw_batch(context, build_requests):
    """Delete what :func:`create_batch` wrote for these build requests, in one transaction;
    False (nothing deleted) when a conductor took one of them already."""
    return api_db.build_batch_withdraw(context, [request.instance_uuid
                                                 for request in build_requests])
