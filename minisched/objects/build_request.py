"""Build requests: an instance that is asked for but not yet in any cell (API database)."""
from oslo_serialization import jsonutils

from minisched.db import lazy
from minisched.objects import base
from minisched.objects import fields

api_db = lazy.module('minisched.db.api.api')

#: Instance fields a cell sets once the instance is placed: none of them is known while it
#: is a build request (Nova's ``BuildRequest._load_instance`` sets them so).
UNPLACED_FIELDS = ('host', 'node', 'launched_on', 'launched_at', 'terminated_at',
                   'scheduled_at', 'pci_devices')


@base.MinischedObjectRegistry.register
class BuildRequest(base.MinischedTimestampObject, base.MinischedObject):
    VERSION = '1.3'

    fields = {
        'id': fields.IntegerField(),
        'instance_uuid': fields.UUIDField(),
        'project_id': fields.StringField(),
        'instance': fields.ObjectField('Instance'),
    }

    @staticmethod
    def _from_db_object(context, req, db_req):
        """Set ``req`` from its row; a row without the instance's JSON (``create_batch``'s,
        which wrote it from ``req.instance``) keeps the instance ``req`` has."""
        from minisched.objects import instance as instance_obj
        for name in ('id', 'instance_uuid', 'project_id', 'created_at', 'updated_at'):
            setattr(req, name, db_req.get(name))
        if 'instance' in db_req:
            req.instance = instance_obj.Instance.obj_from_primitive(
                jsonutils.loads(db_req['instance']), context=context)
        _fill_unplaced(req.instance, req)
        req._context = context
        req.obj_reset_changes()
        return req

    @base.remotable_classmethod
    def get_by_instance_uuid(cls, context, instance_uuid):
        return cls._from_db_object(context, cls(),
                                   api_db.build_request_get_by_instance_uuid(context,
                                                                             instance_uuid))

    def _db_values(self):
        return {'instance_uuid': self.instance_uuid, 'project_id': self.project_id,
                'instance': jsonutils.dumps(self.instance.obj_to_primitive())}

    @base.remotable
    def create(self):
        self._from_db_object(self._context, self, api_db.build_request_create(
            self._context, self._db_values()))

    @base.remotable
    def destroy(self):
        api_db.build_request_destroy(self._context, self.instance_uuid)


@base.MinischedObjectRegistry.register
class BuildRequestList(base.ObjectListBase, base.MinischedObject):
    VERSION = '1.0'

    fields = {'objects': fields.ListOfObjectsField('BuildRequest')}

    @base.remotable_classmethod
    def get_all(cls, context):
        return base.obj_make_list(context, cls(context), BuildRequest,
                                  api_db.build_request_get_all(context))


def _fill_unplaced(instance, req):
    """Set what the instance of build request ``req`` cannot have yet, as Nova's API does:
    reading such a field would otherwise lazy-load the instance from a cell where it does
    not exist yet (InstanceNotFound), for ``server show`` and ``server list`` alike."""
    filled = [name for name in UNPLACED_FIELDS + ('locked', 'cleaned', 'created_at',
                                                  'updated_at')
              if not instance.obj_attr_is_set(name)]
    for name in UNPLACED_FIELDS:
        if name in filled:
            setattr(instance, name, None)
    instance.obj_set_defaults(*[name for name in ('locked', 'cleaned') if name in filled])
    # Never written to a cell: the build request's own times are the instance's.
    for name in ('created_at', 'updated_at'):
        if name in filled:
            setattr(instance, name, getattr(req, name))
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
