"""Service records: one per (host, binary); liveness data for the servicegroup."""
from oslo_utils import uuidutils
from oslo_utils import versionutils

from minisched import exception
from minisched.db import lazy
from minisched.objects import base
from minisched.objects import fields
from minisched import version

db = lazy.module('minisched.db.main.api')

SERVICE_VERSION = version.SERVICE_VERSION


@base.MinischedObjectRegistry.register
class Service(base.MinischedPersistentObject, base.MinischedObject):
    """A running minisched service (scheduler, conductor or compute) on one host.

    Version 1.21 added ``uuid``; 1.22 added ``get_by_uuid`` (Nova's numbering).
    """

    VERSION = '1.22'

    fields = {
        'id': fields.IntegerField(read_only=True),
        'uuid': fields.UUIDField(),
        'host': fields.StringField(nullable=True),
        'binary': fields.StringField(nullable=True),
        'topic': fields.StringField(nullable=True),
        'report_count': fields.IntegerField(),
        'disabled': fields.BooleanField(),
        'disabled_reason': fields.StringField(nullable=True),
        'availability_zone': fields.StringField(nullable=True),
        'last_seen_up': fields.DateTimeField(nullable=True),
        'forced_down': fields.BooleanField(),
        'version': fields.IntegerField(),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        if versionutils.convert_version_to_tuple(target_version) < (1, 21):
            primitive.pop('uuid', None)

    @staticmethod
    def _from_db_object(context, service, db_service):
        for name in service.fields:
            if name == 'availability_zone':
                continue
            value = db_service.get(name)
            if name == 'uuid' and value is None:
                continue
            setattr(service, name, value)
        service._context = context
        service.obj_reset_changes()
        return service

    def obj_load_attr(self, attrname):
        if attrname == 'availability_zone':
            self.availability_zone = None
            self.obj_reset_changes(['availability_zone'])
            return
        raise exception.ObjectActionError(action='obj_load_attr',
                                          reason='attribute %s not lazy-loadable' % attrname)

    @base.remotable_classmethod
    def get_by_id(cls, context, service_id):
        return cls._from_db_object(context, cls(), db.service_get(context, service_id))

    @base.remotable_classmethod
    def get_by_uuid(cls, context, service_uuid):
        return cls._from_db_object(context, cls(), db.service_get_by_uuid(context, service_uuid))

    @base.remotable_classmethod
    def get_by_host_and_topic(cls, context, host, topic):
        return cls._from_db_object(context, cls(),
                                   db.service_get_by_host_and_topic(context, host, topic))

    @base.remotable_classmethod
    def get_by_host_and_binary(cls, context, host, binary):
        try:
            db_service = db.service_get_by_host_and_binary(context, host, binary)
        except exception.HostBinaryNotFound:
            return None
        return cls._from_db_object(context, cls(), db_service)

    @base.remotable_classmethod
    def get_by_compute_host(cls, context, host):
        return cls._from_db_object(context, cls(), db.service_get_by_compute_host(context, host))

    @base.remotable
    def create(self):
        if self.obj_attr_is_set('id'):
            raise exception.ObjectActionError(action='create', reason='already created')
        updates = self.obj_get_changes()
        if 'uuid' not in updates:
            updates['uuid'] = uuidutils.generate_uuid()
            self.uuid = updates['uuid']
        updates['version'] = SERVICE_VERSION
        updates.pop('availability_zone', None)
        self._from_db_object(self._context, self, db.service_create(self._context, updates))

    @base.remotable
    def save(self):
        updates = self.obj_get_changes()
        updates.pop('id', None)
        updates.pop('availability_zone', None)
        self.version = SERVICE_VERSION
        updates['version'] = SERVICE_VERSION
        db_service = db.service_update(self._context, self.id, updates)
        self._from_db_object(self._context, self, db_service)

    @base.remotable
    def destroy(self):
        db.service_destroy(self._context, self.id)

    @base.remotable_classmethod
    def get_minimum_version(cls, context, binary):
        return db.service_get_minimum_version(context, [binary]).get(binary) or 0


@base.MinischedObjectRegistry.register
class ServiceList(base.ObjectListBase, base.MinischedObject):
    VERSION = '1.19'

    fields = {'objects': fields.ListOfObjectsField('Service')}

    @classmethod
    def _make(cls, context, db_services):
        return base.obj_make_list(context, cls(context), Service, db_services)

    @base.remotable_classmethod
    def get_by_topic(cls, context, topic):
        return cls._make(context, db.service_get_all_by_topic(context, topic))

    @base.remotable_classmethod
    def get_by_binary(cls, context, binary, include_disabled=False):
        return cls._make(context, db.service_get_all_by_binary(
            context, binary, include_disabled=include_disabled))

    @base.remotable_classmethod
    def get_by_host(cls, context, host):
        return cls._make(context, db.service_get_all_by_host(context, host))

    @base.remotable_classmethod
    def get_all(cls, context, disabled=None, set_zones=False):
        return cls._make(context, db.service_get_all(context, disabled=disabled))
