"""Block device mappings as Nova's BuildRequest and compute RPC carry them (Nova's
BlockDeviceMapping and BlockDeviceMappingList).

minisched has no volume service and no ``block_device_mapping`` table in its cells: a
build request keeps the mappings its caller sent (Nova's API database does the same, as the
JSON of the list in ``build_requests.block_device_mappings``) so that nothing a Nova client
sends is lost. The remotable methods over Nova's cell table answer as that table would if
empty (no mapping for any volume or instance); writing one is not supported.
"""
from oslo_utils import versionutils
from oslo_versionedobjects import fields as ovo_fields

from minisched import exception
from minisched.objects import base
from minisched.objects import fields

_NO_TABLE = 'minisched keeps no block device mapping table in its cells (no volume service)'


class BlockDeviceDestinationType(fields.BaseMinischedEnum):
    LOCAL = 'local'
    VOLUME = 'volume'
    ALL = (LOCAL, VOLUME)


class BlockDeviceSourceType(fields.BaseMinischedEnum):
    BLANK = 'blank'
    IMAGE = 'image'
    SNAPSHOT = 'snapshot'
    VOLUME = 'volume'
    ALL = (BLANK, IMAGE, SNAPSHOT, VOLUME)


class BlockDeviceType(fields.BaseMinischedEnum):
    CDROM = 'cdrom'
    DISK = 'disk'
    FLOPPY = 'floppy'
    FS = 'fs'
    LUN = 'lun'
    ALL = (CDROM, DISK, FLOPPY, FS, LUN)


class BlockDeviceEncryptionFormatType(fields.BaseMinischedEnum):
    PLAIN = 'plain'
    LUKS = 'luks'
    LUKSV2 = 'luksv2'
    ALL = (PLAIN, LUKS, LUKSV2)


class BlockDeviceDestinationTypeField(ovo_fields.BaseEnumField):
    AUTO_TYPE = BlockDeviceDestinationType()


class BlockDeviceSourceTypeField(ovo_fields.BaseEnumField):
    AUTO_TYPE = BlockDeviceSourceType()


class BlockDeviceTypeField(ovo_fields.BaseEnumField):
    AUTO_TYPE = BlockDeviceType()


class BlockDeviceEncryptionFormatTypeField(ovo_fields.BaseEnumField):
    AUTO_TYPE = BlockDeviceEncryptionFormatType()


def _unsupported(objname, method):
    raise exception.ObjectMethodNotSupported(objname=objname, method=method, reason=_NO_TABLE)


@base.MinischedObjectRegistry.register
class BlockDeviceMapping(base.MinischedPersistentObject, base.MinischedObject):
    VERSION = '1.21'

    fields = {
        'id': fields.IntegerField(),
        'uuid': fields.UUIDField(),
        'instance_uuid': fields.UUIDField(),
        'instance': fields.ObjectField('Instance', nullable=True),
        'source_type': BlockDeviceSourceTypeField(nullable=True),
        'destination_type': BlockDeviceDestinationTypeField(nullable=True),
        'guest_format': fields.StringField(nullable=True),
        'device_type': BlockDeviceTypeField(nullable=True),
        'disk_bus': fields.StringField(nullable=True),
        'boot_index': fields.IntegerField(nullable=True),
        'device_name': fields.StringField(nullable=True),
        'delete_on_termination': fields.BooleanField(default=False),
        'snapshot_id': fields.StringField(nullable=True),
        'volume_id': fields.StringField(nullable=True),
        'volume_size': fields.IntegerField(nullable=True),
        'image_id': fields.StringField(nullable=True),
        'no_device': fields.BooleanField(default=False),
        'connection_info': fields.SensitiveStringField(nullable=True),
        # 1.17
        'tag': fields.StringField(nullable=True),
        # 1.18
        'attachment_id': fields.UUIDField(nullable=True),
        # 1.20
        'volume_type': fields.StringField(nullable=True),
        # 1.21
        'encrypted': fields.BooleanField(default=False),
        'encryption_secret_uuid': fields.UUIDField(nullable=True),
        'encryption_format': BlockDeviceEncryptionFormatTypeField(nullable=True),
        'encryption_options': fields.StringField(nullable=True),
    }

    #: (version, fields added in it), newest first.
    _ADDED = (((1, 21), ('encrypted', 'encryption_secret_uuid', 'encryption_format',
                         'encryption_options')),
              ((1, 20), ('volume_type',)), ((1, 19), ('uuid',)),
              ((1, 18), ('attachment_id',)), ((1, 17), ('tag',)))

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = versionutils.convert_version_to_tuple(target_version)
        for version, names in self._ADDED:
            if target < version:
                for name in names:
                    primitive.pop(name, None)

    @base.remotable
    def create(self):
        _unsupported('BlockDeviceMapping', 'create')

    @base.remotable
    def update_or_create(self):
        _unsupported('BlockDeviceMapping', 'update_or_create')

    @base.remotable
    def destroy(self):
        _unsupported('BlockDeviceMapping', 'destroy')

    @base.remotable
    def save(self):
        _unsupported('BlockDeviceMapping', 'save')

    @base.remotable_classmethod
    def get_by_volume_id(cls, context, volume_id, instance_uuid=None, expected_attrs=None):
        raise exception.VolumeBDMNotFound(volume_id=volume_id)

    @base.remotable_classmethod
    def get_by_volume_and_instance(cls, context, volume_id, instance_uuid,
                                   expected_attrs=None):
        raise exception.VolumeBDMNotFound(volume_id=volume_id)

    @base.remotable_classmethod
    def get_by_volume(cls, context, volume_id, expected_attrs=None):
        raise exception.VolumeBDMNotFound(volume_id=volume_id)


@base.MinischedObjectRegistry.register
class BlockDeviceMappingList(base.ObjectListBase, base.MinischedObject):
    VERSION = '1.18'

    fields = {'objects': fields.ListOfObjectsField('BlockDeviceMapping')}

    @base.remotable_classmethod
    def get_by_instance_uuids(cls, context, instance_uuids, use_slave=False):
        return cls(context, objects=[])

    @base.remotable_classmethod
    def get_by_instance_uuid(cls, context, instance_uuid, use_slave=False):
        return cls(context, objects=[])

    @base.remotable_classmethod
    def get_by_volume(cls, context, volume_id, use_slave=False):
        raise exception.VolumeBDMNotFound(volume_id=volume_id)
