"""Image metadata as the scheduler sees it: a few image attributes and typed properties.

An instance keeps a copy of its image in its ``system_metadata``, under ``image_`` prefixed
keys (Nova's ``get_system_metadata_from_image`` / ``get_image_from_system_metadata``), so
that code without the image service, such as the scheduler, can read it back.
"""
from oslo_utils import versionutils

from minisched import exception
from minisched.objects import base
from minisched.objects import fields
from minisched.virt import hardware

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

    # Versions follow Nova's numbering, so that a version means the same fields as there
    # (of those minisched has): 1.1 os_require_quiesce; 1.2 img_hv_type and
    # img_hv_requested_version; 1.7 img_config_drive; 1.9 hw_cpu_thread_policy;
    # 1.10 hw_cpu_realtime_mask; 1.11 hw_firmware_type; 1.20 traits_required;
    # 1.25 hw_pci_numa_affinity_policy; 1.26 'mixed' hw_cpu_policy; 1.28 'socket'
    # hw_pci_numa_affinity_policy; 1.33 hw_locked_memory; 1.36 hw_maxphysaddr_mode and
    # hw_maxphysaddr_bits.
    VERSION = '1.36'

    #: Most guest NUMA nodes the per-node properties may describe.
    NUMA_NODES_MAX = 128

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
        'hw_cpu_policy': fields.CPUAllocationPolicyField(),
        'hw_cpu_thread_policy': fields.CPUThreadAllocationPolicyField(),
        # Guest CPUs with a realtime policy, e.g. ``^0-1``: all but 0 and 1.
        'hw_cpu_realtime_mask': fields.StringField(),
        'hw_disk_bus': fields.StringField(),
        'hw_firmware_type': fields.StringField(),
        'hw_machine_type': fields.StringField(),
        'hw_locked_memory': fields.FlexibleBooleanField(),
        # 'small', 'large', 'any' or a size (KiB, or with a unit).
        'hw_mem_page_size': fields.StringField(),
        'hw_numa_nodes': fields.IntegerField(),
        # Per guest NUMA node, its CPUs and its memory (MiB): from hw_numa_cpus.N and
        # hw_numa_mem.N properties.
        'hw_numa_cpus': fields.ListOfSetsOfIntegersField(),
        'hw_numa_mem': fields.ListOfIntegersField(),
        'hw_pci_numa_affinity_policy': fields.PCINUMAAffinityPolicyField(),
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
        'hw_maxphysaddr_mode': fields.MaxPhysAddrModeField(),
        'hw_maxphysaddr_bits': fields.IntegerField(),
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
        target = versionutils.convert_version_to_tuple(target_version)
        for added_in, value, name in (
                ((1, 28), fields.PCINUMAAffinityPolicy.SOCKET, 'hw_pci_numa_affinity_policy'),
                ((1, 26), fields.CPUAllocationPolicy.MIXED, 'hw_cpu_policy')):
            if target < added_in and primitive.get(name) == value:
                raise exception.ObjectActionError(
                    action='obj_make_compatible',
                    reason='%s=%s not supported in version %s' % (name, value, target_version))
        for added_in, names in (((1, 36), ('hw_maxphysaddr_mode', 'hw_maxphysaddr_bits')),
                                ((1, 33), ('hw_locked_memory',)),
                                ((1, 25), ('hw_pci_numa_affinity_policy',)),
                                ((1, 20), ('traits_required',)),
                                ((1, 13), ('img_signature_hash_method',)),
                                ((1, 11), ('hw_firmware_type',)),
                                ((1, 10), ('hw_cpu_realtime_mask',)),
                                ((1, 9), ('hw_cpu_thread_policy',)),
                                ((1, 7), ('img_config_drive',)),
                                ((1, 2), ('img_hv_type', 'img_hv_requested_version')),
                                ((1, 1), ('os_require_quiesce',))):
            if target < added_in:
                for name in names:
                    primitive.pop(name, None)

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
            if key not in cls.fields or key in cls._PER_NODE:
                continue
            if key == 'hw_architecture':
                value = fields.Architecture.canonicalize(value)
            elif key == 'img_hv_type':
                value = fields.HVType.canonicalize(value)
            elif key == 'hw_vm_mode':
                value = fields.VMMode.canonicalize(value)
            setattr(obj, key, value)
        for name, parse in cls._PER_NODE.items():
            values = cls._per_node_values(image_props or {}, name, parse)
            if values is not None:
                setattr(obj, name, values)
        return obj

    #: Properties given one guest NUMA node at a time, as ``<name>.<node>``, and how to read
    #: each value; the plain name is not read (as in Nova).
    _PER_NODE = {'hw_numa_cpus': hardware.parse_cpu_spec, 'hw_numa_mem': int}

    @classmethod
    def _per_node_values(cls, image_props, name, parse):
        """``[parse(<name>.0), parse(<name>.1), ...]`` up to the first missing node, or
        None when there is no ``<name>.0``."""
        values = []
        for node in range(cls.NUMA_NODES_MAX):
            key = '%s.%d' % (name, node)
            if key not in image_props:
                break
            values.append(parse(image_props[key]))
        return values or None

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
