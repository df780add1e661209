"""Service records: one per (host, binary); liveness data for the servicegroup."""
import logging

from oslo_utils import uuidutils
from oslo_utils import versionutils

from minisched import exception
from minisched.db import lazy
from minisched.objects import base
from minisched.objects import fields
from minisched import version

db = lazy.module('minisched.db.main.api')

LOG = logging.getLogger(__name__)

SERVICE_VERSION = version.SERVICE_VERSION
#: The binary whose services have compute nodes (not read from the DB API module: a compute
#: must not load it).
COMPUTE_BINARY = 'minisched-compute'


@base.MinischedObjectRegistry.register
class Service(base.MinischedPersistentObject, base.MinischedObject):
    """A running minisched service (scheduler, conductor or compute) on one host.

    Version 1.21 added ``uuid``; 1.22 added ``get_by_uuid`` (Nova's numbering).
    ``compute_node`` (a compute's first node) is never stored: it loads on first use.
    ``use_slave`` is accepted as Nova's callers send it and reads the primary database (see
    ``ComputeNodeList``).
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
        'compute_node': fields.ObjectField('ComputeNode'),
        'last_seen_up': fields.DateTimeField(nullable=True),
        'forced_down': fields.BooleanField(),
        'version': fields.IntegerField(),
    }

    #: Fields no column holds (``create`` and ``save`` leave them out).
    _NOT_STORED = ('availability_zone', 'compute_node')

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = versionutils.convert_version_to_tuple(target_version)
        for added_in, name in (((1, 21), 'uuid'), ((1, 16), 'version'),
                               ((1, 14), 'forced_down'), ((1, 13), 'last_seen_up')):
            if target < added_in:
                primitive.pop(name, None)

    @staticmethod
    def _from_db_object(context, service, db_service):
        for name in service.fields:
            if name in Service._NOT_STORED:
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
        if attrname != 'compute_node':
            raise exception.ObjectActionError(
                action='obj_load_attr', reason='attribute %s not lazy-loadable' % attrname)
        if not self._context:
            raise exception.OrphanedObjectError(method='obj_load_attr',
                                                objtype=self.obj_name())
        if self.binary != COMPUTE_BINARY:  # only computes have nodes (Nova's error)
            raise exception.ServiceNotFound(service_id=self.id)
        # A host with several nodes has more; the first, as Nova's.
        from minisched.objects import compute_node
        self.compute_node = compute_node.ComputeNodeList.get_all_by_host(self._context,
                                                                         self.host)[0]
        self.obj_reset_changes(['compute_node'])

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
        """The service, or None when there is none (``get_by_args`` raises instead)."""
        try:
            db_service = db.service_get_by_host_and_binary(context, host, binary)
        except exception.HostBinaryNotFound:
            return None
        return cls._from_db_object(context, cls(), db_service)

    @base.remotable_classmethod
    def get_by_compute_host(cls, context, host, use_slave=False):
        return cls._from_db_object(context, cls(), db.service_get_by_compute_host(context, host))

    @base.remotable_classmethod
    def get_by_args(cls, context, host, binary):
        """The service of ``binary`` on ``host`` (``HostBinaryNotFound`` if none)."""
        return cls._from_db_object(context, cls(),
                                   db.service_get_by_host_and_binary(context, host, binary))

    def _changes(self):
        updates = self.obj_get_changes()
        for name in self._NOT_STORED:
            updates.pop(name, None)
        return updates

    @base.remotable
    def create(self):
        if self.obj_attr_is_set('id'):
            raise exception.ObjectActionError(action='create', reason='already created')
        updates = self._changes()
        if 'uuid' not in updates:
            updates['uuid'] = uuidutils.generate_uuid()
            self.uuid = updates['uuid']
        updates['version'] = SERVICE_VERSION
        self._from_db_object(self._context, self, db.service_create(self._context, updates))

    @base.remotable
    def save(self):
        updates = self._changes()
        updates.pop('id', None)
        self.version = SERVICE_VERSION
        updates['version'] = SERVICE_VERSION
        db_service = db.service_update(self._context, self.id, updates)
        self._from_db_object(self._context, self, db_service)

    @base.remotable
    def destroy(self):
        db.service_destroy(self._context, self.id)

    @base.remotable_classmethod
    def get_minimum_version_multi(cls, context, binaries, use_slave=False):
        """The lowest version among the live, not forced-down services of ``binaries``; 0
        when there are none. A binary that is not a minisched one is refused, as Nova
        refuses one that is not ``nova-*``: the answer would be a silent 0."""
        if not all(binary.startswith('minisched-') for binary in binaries):
            LOG.warning('get_minimum_version called with likely-incorrect binaries `%s\'',
                        ','.join(binaries))
            raise exception.ObjectActionError(action='get_minimum_version',
                                              reason='Invalid binary prefix')
        versions = db.service_get_minimum_version(context, binaries)
        return int(min((version or 0 for version in versions.values()), default=0))

    @base.remotable_classmethod
    def get_minimum_version(cls, context, binary, use_slave=False):
        return cls.get_minimum_version_multi(context, [binary], use_slave=use_slave)


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

    @base.remotable_classmethod
    def get_all_computes_by_hv_type(cls, context, hv_type):
        """The enabled compute services of the hosts with a node of type ``hv_type``."""
        return cls._make(context, db.service_get_all_computes_by_hv_type(
            context, hv_type, include_disabled=False))
