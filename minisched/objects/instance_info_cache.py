"""An instance's network info cache (Nova's InstanceInfoCache).

minisched has no network service: the cache is what the caller set (Nova's API builds an
empty one with each instance, Nova's compute fills it from Neutron), kept in the instance's
``info_cache`` column so that nothing a Nova client sends is lost. ``network_info`` is the
list of VIF dicts Nova's ``NetworkInfo`` is, sent as the same JSON string.
"""
from oslo_serialization import jsonutils
from oslo_versionedobjects import fields as ovo_fields

from minisched import exception
from minisched.objects import base
from minisched.objects import fields
from minisched.objects import instance_extra

COLUMN = 'info_cache'


class NetworkModel(ovo_fields.FieldType):
    """A list of VIF dicts, on the wire as its JSON string (Nova's ``NetworkModel``)."""

    def coerce(self, obj, attr, value):
        if isinstance(value, str):
            value = jsonutils.loads(value)
        if not isinstance(value, list):
            raise ValueError('A NetworkModel is required in field %s' % attr)
        return value

    @staticmethod
    def to_primitive(obj, attr, value):
        return jsonutils.dumps(value)

    @staticmethod
    def from_primitive(obj, attr, value):
        return jsonutils.loads(value)

    def stringify(self, value):
        return 'NetworkModel(%s)' % ','.join(str(vif.get('id')) for vif in value)

    def get_schema(self):
        return {'type': ['string']}


class NetworkModelField(ovo_fields.AutoTypedField):
    AUTO_TYPE = NetworkModel()


@base.MinischedObjectRegistry.register
class InstanceInfoCache(base.MinischedPersistentObject, base.MinischedObject):
    VERSION = '1.5'

    fields = {
        'instance_uuid': fields.UUIDField(),
        'network_info': NetworkModelField(nullable=True),
    }

    @classmethod
    def new(cls, context, instance_uuid):
        """An empty cache of the instance, its network info unset."""
        cache = cls(context, instance_uuid=instance_uuid, network_info=None)
        cache.obj_reset_changes(['network_info'])
        return cache

    @base.remotable_classmethod
    def get_by_instance_uuid(cls, context, instance_uuid):
        cache = instance_extra.load(context, instance_uuid, COLUMN)
        if cache is None:
            raise exception.InstanceInfoCacheNotFound(instance_uuid=instance_uuid)
        cache.obj_reset_changes()
        return cache

    @base.remotable
    def save(self, update_cells=True):
        """Write the cache to its instance (``update_cells`` is of Nova's cells v1: unused)."""
        if 'network_info' in self.obj_what_changed():
            instance_extra.store(self._context, self.instance_uuid, COLUMN, self)
        self.obj_reset_changes()

    @base.remotable
    def delete(self):
        instance_extra.store(self._context, self.instance_uuid, COLUMN, None)

    @base.remotable
    def refresh(self):
        current = self.__class__.get_by_instance_uuid(self._context, self.instance_uuid)
        for name in self.fields:
            if current.obj_attr_is_set(name):
                setattr(self, name, getattr(current, name))
        self.obj_reset_changes()
