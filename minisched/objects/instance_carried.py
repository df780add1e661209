"""Objects Nova's Instance carries that minisched only keeps for its caller.

The trusted certificates, guest CPU model, device metadata, assigned resources (vPMEMs) and
EC2 ids of an instance mean something to Nova's API, metadata service and virt drivers, not
to minisched's scheduling. They are defined with Nova 34's fields so that an instance a Nova
client sends deserializes whole, kept in the instance's column of the same name (see
:mod:`minisched.objects.instance_extra`) so that nothing it sent is lost, and read back by
their remotable ``get_by_instance_uuid`` as Nova's are. EC2 ids are computed, not stored.
"""
import re

from oslo_utils import versionutils
from oslo_versionedobjects import fields as ovo_fields

from minisched.objects import base
from minisched.objects import fields
from minisched.objects import instance_extra


class CPUMode(fields.BaseMinischedEnum):
    CUSTOM = 'custom'
    HOST_MODEL = 'host-model'
    HOST_PASSTHROUGH = 'host-passthrough'
    ALL = (CUSTOM, HOST_MODEL, HOST_PASSTHROUGH)


class CPUMatch(fields.BaseMinischedEnum):
    MINIMUM = 'minimum'
    EXACT = 'exact'
    STRICT = 'strict'
    ALL = (MINIMUM, EXACT, STRICT)


class CPUFeaturePolicy(fields.BaseMinischedEnum):
    FORCE = 'force'
    REQUIRE = 'require'
    OPTIONAL = 'optional'
    DISABLE = 'disable'
    FORBID = 'forbid'
    ALL = (FORCE, REQUIRE, OPTIONAL, DISABLE, FORBID)


class CPUModeField(ovo_fields.BaseEnumField):
    AUTO_TYPE = CPUMode()


class CPUMatchField(ovo_fields.BaseEnumField):
    AUTO_TYPE = CPUMatch()


class CPUFeaturePolicyField(ovo_fields.BaseEnumField):
    AUTO_TYPE = CPUFeaturePolicy()


class _Address(ovo_fields.FieldType):
    """A device address of one bus type, as a string matching ``PATTERN``."""

    PATTERN = ''

    def coerce(self, obj, attr, value):
        if re.match(self.PATTERN, str(value)):
            return str(value)
        raise ValueError('Value must match %s' % self.PATTERN)

    def get_schema(self):
        return {'type': ['string'], 'pattern': self.PATTERN}


class USBAddress(_Address):
    PATTERN = '[a-f0-9]+:[a-f0-9]+'


class SCSIAddress(_Address):
    PATTERN = '[a-f0-9]+:[a-f0-9]+:[a-f0-9]+:[a-f0-9]+'


class IDEAddress(_Address):
    PATTERN = '[0-1]:[0-1]'


class XenAddress(_Address):
    PATTERN = '(00[0-9]{2}00)|[1-9][0-9]+'


class USBAddressField(ovo_fields.AutoTypedField):
    AUTO_TYPE = USBAddress()


class SCSIAddressField(ovo_fields.AutoTypedField):
    AUTO_TYPE = SCSIAddress()


class IDEAddressField(ovo_fields.AutoTypedField):
    AUTO_TYPE = IDEAddress()


class XenAddressField(ovo_fields.AutoTypedField):
    AUTO_TYPE = XenAddress()


class ResourceClass(ovo_fields.StringPattern):
    """A placement resource class name, upper-cased."""

    PATTERN = r'^[A-Z0-9_]+$'
    _REGEX = re.compile(PATTERN)

    def coerce(self, obj, attr, value):
        if isinstance(value, str) and self._REGEX.match(value.upper()):
            return value.upper()
        raise ValueError('Malformed Resource Class %s' % value)


class ResourceClassField(ovo_fields.AutoTypedField):
    AUTO_TYPE = ResourceClass()


@base.MinischedObjectRegistry.register
class TrustedCerts(base.MinischedObject):
    VERSION = '1.0'

    fields = {'ids': fields.ListOfStringsField(nullable=False)}

    @base.remotable_classmethod
    def get_by_instance_uuid(cls, context, instance_uuid):
        return instance_extra.load(context, instance_uuid, 'trusted_certs')


@base.MinischedObjectRegistry.register
class EC2Ids(base.MinischedObject):
    """An instance's EC2-style ids. Nova numbers them in mapping tables; minisched derives
    the instance's from its database id (``i-%08x``) and has no image id mapping."""

    VERSION = '1.0'

    fields = {
        'instance_id': fields.StringField(read_only=True),
        'ami_id': fields.StringField(nullable=True, read_only=True),
        'kernel_id': fields.StringField(nullable=True, read_only=True),
        'ramdisk_id': fields.StringField(nullable=True, read_only=True),
    }

    @base.remotable_classmethod
    def get_by_instance(cls, context, instance):
        return cls(context, instance_id='i-%08x' % instance.id, ami_id=None, kernel_id=None,
                   ramdisk_id=None)


@base.MinischedObjectRegistry.register
class VirtCPUFeature(base.MinischedObject):
    VERSION = '1.0'

    fields = {
        'policy': CPUFeaturePolicyField(nullable=True),
        'name': fields.StringField(nullable=False),
    }

    def obj_load_attr(self, attrname):
        setattr(self, attrname, None)


@base.MinischedObjectRegistry.register
class VirtCPUModel(base.MinischedObject):
    VERSION = '1.0'

    fields = {
        'arch': fields.ArchitectureField(nullable=True),
        'vendor': fields.StringField(nullable=True),
        'topology': fields.ObjectField('VirtCPUTopology', nullable=True),
        'features': fields.ListOfObjectsField('VirtCPUFeature', default=[]),
        'mode': CPUModeField(nullable=True),
        'model': fields.StringField(nullable=True),
        'match': CPUMatchField(nullable=True),
    }

    def obj_load_attr(self, attrname):
        setattr(self, attrname, None)

    @base.remotable_classmethod
    def get_by_instance_uuid(cls, context, instance_uuid):
        return instance_extra.load(context, instance_uuid, 'vcpu_model')


@base.MinischedObjectRegistry.register
class DeviceBus(base.MinischedObject):
    VERSION = '1.0'


@base.MinischedObjectRegistry.register
class PCIDeviceBus(DeviceBus):
    VERSION = '1.0'

    fields = {'address': ovo_fields.PCIAddressField()}


@base.MinischedObjectRegistry.register
class USBDeviceBus(DeviceBus):
    VERSION = '1.0'

    fields = {'address': USBAddressField()}


@base.MinischedObjectRegistry.register
class SCSIDeviceBus(DeviceBus):
    VERSION = '1.0'

    fields = {'address': SCSIAddressField()}


@base.MinischedObjectRegistry.register
class IDEDeviceBus(DeviceBus):
    VERSION = '1.0'

    fields = {'address': IDEAddressField()}


@base.MinischedObjectRegistry.register
class XenDeviceBus(DeviceBus):
    VERSION = '1.0'

    fields = {'address': XenAddressField()}


@base.MinischedObjectRegistry.register
class DeviceMetadata(base.MinischedObject):
    VERSION = '1.0'

    fields = {
        'bus': fields.ObjectField('DeviceBus', subclasses=True),
        'tags': fields.ListOfStringsField(),
    }


@base.MinischedObjectRegistry.register
class NetworkInterfaceMetadata(DeviceMetadata):
    VERSION = '1.2'

    fields = {
        'mac': ovo_fields.MACAddressField(),
        # 1.1
        'vlan': fields.IntegerField(),
        # 1.2
        'vf_trusted': fields.BooleanField(default=False),
    }

    def obj_make_compatible(self, primitive, target_version):
        target = versionutils.convert_version_to_tuple(target_version)
        if target < (1, 1):
            primitive.pop('vlan', None)
        if target < (1, 2):
            primitive.pop('vf_trusted', None)


@base.MinischedObjectRegistry.register
class DiskMetadata(DeviceMetadata):
    VERSION = '1.0'

    fields = {
        'serial': fields.StringField(nullable=True),
        'path': fields.StringField(nullable=True),
    }


@base.MinischedObjectRegistry.register
class ShareMetadata(DeviceMetadata):
    VERSION = '1.0'

    fields = {
        'share_id': fields.StringField(nullable=True),
        'tag': fields.StringField(nullable=True),
    }


@base.MinischedObjectRegistry.register
class InstanceDeviceMetadata(base.MinischedObject):
    VERSION = '1.0'

    fields = {'devices': fields.ListOfObjectsField('DeviceMetadata', subclasses=True)}

    @base.remotable_classmethod
    def get_by_instance_uuid(cls, context, instance_uuid):
        return instance_extra.load(context, instance_uuid, 'device_metadata')


@base.MinischedObjectRegistry.register
class ResourceMetadata(base.MinischedObject):
    VERSION = '1.0'


@base.MinischedObjectRegistry.register
class LibvirtVPMEMDevice(ResourceMetadata):
    VERSION = '1.0'

    fields = {
        'label': fields.StringField(),
        'name': fields.StringField(),
        'size': fields.IntegerField(),
        'devpath': fields.StringField(),
        'align': fields.IntegerField(),
    }


@base.MinischedObjectRegistry.register
class Resource(base.MinischedObject):
    VERSION = '1.0'

    fields = {
        'provider_uuid': fields.UUIDField(),
        'resource_class': ResourceClassField(),
        'identifier': fields.StringField(),
        'metadata': fields.ObjectField('ResourceMetadata', subclasses=True),
    }


@base.MinischedObjectRegistry.register
class ResourceList(base.ObjectListBase, base.MinischedObject):
    VERSION = '1.0'

    fields = {'objects': fields.ListOfObjectsField('Resource')}

    @base.remotable_classmethod
    def get_by_instance_uuid(cls, context, instance_uuid):
        return instance_extra.load(context, instance_uuid, 'resources')


@base.MinischedObjectRegistry.register
class MigrationContext(base.MinischedPersistentObject, base.MinischedObject):
    """The resources a move claimed on its destination. minisched does not move instances;
    an instance's context is kept as its caller set it."""

    VERSION = '1.2'

    fields = {
        'instance_uuid': fields.UUIDField(),
        'migration_id': fields.IntegerField(),
        'new_numa_topology': fields.ObjectField('InstanceNUMATopology', nullable=True),
        'old_numa_topology': fields.ObjectField('InstanceNUMATopology', nullable=True),
        # 1.1
        'new_pci_devices': fields.ObjectField('PciDeviceList', nullable=True),
        'old_pci_devices': fields.ObjectField('PciDeviceList', nullable=True),
        'new_pci_requests': fields.ObjectField('InstancePCIRequests', nullable=True),
        'old_pci_requests': fields.ObjectField('InstancePCIRequests', nullable=True),
        # 1.2
        'new_resources': fields.ObjectField('ResourceList', nullable=True),
        'old_resources': fields.ObjectField('ResourceList', nullable=True),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = versionutils.convert_version_to_tuple(target_version)
        dropped = []
        if target < (1, 2):
            dropped += ['old_resources', 'new_resources']
        if target < (1, 1):
            dropped += ['old_pci_devices', 'new_pci_devices', 'old_pci_requests',
                        'new_pci_requests']
        for name in dropped:
            primitive.pop(name, None)

    @base.remotable_classmethod
    def get_by_instance_uuid(cls, context, instance_uuid):
        from minisched import exception
        try:
            row = instance_extra.db.instance_get_by_uuid(context, instance_uuid)
        except exception.InstanceNotFound:
            raise exception.MigrationContextNotFound(instance_uuid=instance_uuid)
        return instance_extra.decode(context, row.get('migration_context'))
