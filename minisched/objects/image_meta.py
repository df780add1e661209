"""Image metadata as the scheduler sees it: a few image attributes and typed properties."""
from oslo_utils import versionutils

from minisched.objects import base
from minisched.objects import fields


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
            if key.startswith('traits:'):
                if value == 'required':
                    obj.traits_required = list(obj.get('traits_required', [])) + [key[7:]]
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

    def obj_load_attr(self, attrname):
        if attrname == 'properties':
            self.properties = ImageMetaProps()
            return
        raise AttributeError(attrname)
