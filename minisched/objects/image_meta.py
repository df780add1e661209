"""Image metadata as the scheduler sees it: a few image attributes and typed properties.

An instance keeps a copy of its image in its ``system_metadata``, under ``image_`` prefixed
keys (Nova's ``get_system_metadata_from_image`` / ``get_image_from_system_metadata``), so
that code without the image service, such as the scheduler, can read it back.
"""
from oslo_utils import versionutils

from minisched.objects import base
from minisched.objects import fields

#: Prefix of the ``system_metadata`` keys that hold the instance's image.
SM_IMAGE_PROP_PREFIX = 'image_'
#: Image attributes (not properties) kept in ``system_metadata`` as well.
SM_INHERITABLE_KEYS = ('min_ram', 'min_disk', 'disk_format', 'container_format')
#: Properties too large for a ``system_metadata`` value: neither stored nor read back.
SM_SKIP_KEYS = ('mappings', 'block_device_mapping', 'img_mappings', 'img_block_device_mapping')
#: Longest stored property value, in bytes of UTF-8 (the width of Nova's column).
_SM_VALUE_BYTES = 255


def _truncate(value, length):
    """``value`` cut to at most ``length`` bytes of UTF-8, never inside a character."""
    # Only the last, cut, character can be invalid: dropping invalid bytes drops just it.
    return value.encode('utf-8')[:length].decode('utf-8', 'ignore')


def get_system_metadata_from_image(image_meta, flavor=None):
    """The ``system_metadata`` entries recording ``image_meta`` (a dict, as the API gets it).

    Each property becomes ``image_<name>`` with its value as a string; ``min_ram``,
    ``min_disk``, ``disk_format`` and ``container_format`` are kept too, ``min_disk`` raised
    to the ``flavor``'s root disk (or, for a ``vhd`` image, set to it).
    """
    system_meta = {}
    for key, value in (image_meta.get('properties') or {}).items():
        if key not in SM_SKIP_KEYS:
            system_meta[SM_IMAGE_PROP_PREFIX + key] = _truncate(str(value), _SM_VALUE_BYTES)
    for key in SM_INHERITABLE_KEYS:
        value = image_meta.get(key)
        if key == 'min_disk' and flavor is not None:
            if image_meta.get('disk_format') == 'vhd':
                value = flavor.root_gb
            else:
                value = max(value or 0, flavor.root_gb)
        if value is not None:
            system_meta[SM_IMAGE_PROP_PREFIX + key] = value
    return system_meta


def get_image_from_system_metadata(system_meta):
    """The image dict (``properties`` included) that ``system_meta`` records.

    As in Nova, every key is read, the prefix dropped where there is one: keys that are no
    image property end up in ``properties`` and are ignored by :class:`ImageMetaProps`.
    """
    image_meta = {}
    properties = {}
    for key, value in system_meta.items():
        if value is None:
            continue
        if key.startswith(SM_IMAGE_PROP_PREFIX):
            key = key[len(SM_IMAGE_PROP_PREFIX):]
        if key in SM_SKIP_KEYS:
            continue
        if key in SM_INHERITABLE_KEYS:
            image_meta[key] = value
        else:
            properties[key] = value
    image_meta['properties'] = properties
    return image_meta


@base.MinischedObjectRegistry.register
class ImageMetaProps(base.MinischedObject):
    """Typed image properties (Nova's ImageMetaProps, the subset the filters read)."""

    VERSION = '1.20'

    fields = {
        'hw_architecture': fields.ArchitectureField(),
        'img_hv_type': fields.HVTypeField(),
        'hw_vm_mode': fields.VMModeField(),
        'img_hv_requested_version': fields.StringField(),
        'os_type': fields.StringField(),
        'os_distro': fields.StringField(),
        'os_require_quiesce': fields.FlexibleBooleanField(),
        'hw_cpu_cores': fields.IntegerField(),
        'hw_cpu_sockets': fields.IntegerField(),
        'hw_cpu_threads': fields.IntegerField(),
        'hw_cpu_policy': fields.StringField(),
        'hw_cpu_thread_policy': fields.StringField(),
        'hw_disk_bus': fields.StringField(),
        'hw_firmware_type': fields.StringField(),
        'hw_machine_type': fields.StringField(),
        'hw_mem_page_size': fields.StringField(),
        'hw_numa_nodes': fields.IntegerField(),
        'hw_qemu_guest_agent': fields.FlexibleBooleanField(),
        'hw_rng_model': fields.StringField(),
        'hw_scsi_model': fields.StringField(),
        'hw_serial_port_count': fields.IntegerField(),
        'hw_video_model': fields.StringField(),
        'hw_video_ram': fields.IntegerField(),
        'hw_vif_model': fields.StringField(),
        'hw_watchdog_action': fields.StringField(),
        'img_config_drive': fields.StringField(),
        'img_signature': fields.StringField(),
        'img_signature_hash_method': fields.StringField(),
        'traits_required': fields.ListOfStringsField(),
    }

    # Legacy property names accepted on input and mapped to the new ones (as Nova does).
    _legacy_property_map = {
        'architecture': 'hw_architecture',
        'hypervisor_type': 'img_hv_type',
        'vm_mode': 'hw_vm_mode',
        'hypervisor_version_requires': 'img_hv_requested_version',
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        if versionutils.convert_version_to_tuple(target_version) < (1, 13):
            primitive.pop('img_signature_hash_method', None)

    @classmethod
    def from_dict(cls, image_props):
        obj = cls()
        # Legacy names first, so that a current name given too wins whatever the dict order.
        items = sorted((image_props or {}).items(),
                       key=lambda item: item[0] not in cls._legacy_property_map)
        for key, value in items:
            key = cls._legacy_property_map.get(key, key)
            if key.startswith('trait:'):  # Nova's image property for a required trait
                if str(value) == 'required':
                    obj.traits_required = list(obj.get('traits_required', [])) + [key[6:]]
                continue
            if key not in cls.fields:
                continue
            if key == 'hw_architecture':
                value = fields.Architecture.canonicalize(value)
            elif key == 'img_hv_type':
                value = fields.HVType.canonicalize(value)
            elif key == 'hw_vm_mode':
                value = fields.VMMode.canonicalize(value)
            setattr(obj, key, value)
        return obj

    def to_dict(self):
        """``{name: value}`` of the properties that are set, as plain Python values."""
        return base.obj_to_primitive(self)

    def get(self, name, defvalue=None):
        """Return the property ``name``, or ``defvalue`` when it is not set."""
        if name not in self.fields:
            raise AttributeError("'%s' object has no attribute '%s'" % (self.obj_name(), name))
        if not self.obj_attr_is_set(name):
            return defvalue
        return getattr(self, name)


@base.MinischedObjectRegistry.register
class ImageMeta(base.MinischedObject):
    VERSION = '1.8'

    fields = {
        'id': fields.UUIDField(),
        'name': fields.StringField(),
        'status': fields.StringField(),
        'visibility': fields.StringField(),
        'protected': fields.FlexibleBooleanField(),
        'checksum': fields.StringField(),
        'owner': fields.StringField(),
        'size': fields.IntegerField(),
        'virtual_size': fields.IntegerField(),
        'container_format': fields.StringField(),
        'disk_format': fields.StringField(),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
        'tags': fields.ListOfStringsField(),
        'direct_url': fields.StringField(),
        'min_ram': fields.IntegerField(),
        'min_disk': fields.IntegerField(),
        'properties': fields.ObjectField('ImageMetaProps'),
    }

    @classmethod
    def from_dict(cls, image_meta):
        image_meta = dict(image_meta or {})
        props = image_meta.pop('properties', {}) or {}
        obj = cls(properties=ImageMetaProps.from_dict(props))
        for key, value in image_meta.items():
            if key in cls.fields and key != 'properties' and value is not None:
                setattr(obj, key, value)
        return obj

    @classmethod
    def from_instance(cls, instance):
        """The image ``instance`` was built from, as its ``system_metadata`` records it.

        The id is the instance's ``image_ref`` when the metadata does not record one and
        the instance has it loaded (the host manager tracks instances by uuid only).
        """
        image_meta = get_image_from_system_metadata(instance.system_metadata or {})
        if image_meta.get('id') is None and 'image_ref' in instance and instance.image_ref:
            image_meta['id'] = instance.image_ref
        return cls.from_dict(image_meta)

    def obj_load_attr(self, attrname):
        if attrname == 'properties':
            self.properties = ImageMetaProps()
            return
        raise AttributeError(attrname)
