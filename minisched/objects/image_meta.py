"""Image metadata as the scheduler sees it: a few image attributes and typed properties.

An instance keeps a copy of its image in its ``system_metadata``, under ``image_`` prefixed
keys (Nova's ``get_system_metadata_from_image`` / ``get_image_from_system_metadata``), so
that code without the image service, such as the scheduler, can read it back.
"""
from oslo_serialization import jsonutils
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
#: List properties an image service keeps as JSON text (Nova's Glance client decodes them).
_JSON_LISTS = ('img_mappings', 'img_block_device_mapping')
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


#: The ImageMetaProps version each property appeared in (those of 1.0 are not listed).
_PROPS_ADDED_IN = {
    (1, 1): ('os_require_quiesce',),
    (1, 2): ('img_hv_type', 'img_hv_requested_version'),
    (1, 4): ('hw_vif_multiqueue_enabled',),
    (1, 5): ('os_admin_user',),
    (1, 7): ('img_config_drive',),
    (1, 9): ('hw_cpu_thread_policy',),
    (1, 10): ('hw_cpu_realtime_mask',),
    (1, 11): ('hw_firmware_type',),
    (1, 13): ('os_secure_boot',),
    (1, 14): ('hw_pointer_model',),
    (1, 15): ('hw_rescue_bus', 'hw_rescue_device'),
    (1, 19): ('img_hide_hypervisor_id',),
    (1, 20): ('traits_required',),
    (1, 21): ('hw_time_hpet',),
    (1, 23): ('hw_pmu',),
    (1, 24): ('hw_mem_encryption',),
    (1, 25): ('hw_pci_numa_affinity_policy',),
    (1, 27): ('hw_tpm_model', 'hw_tpm_version'),
    (1, 29): ('hw_input_bus',),
    (1, 31): ('hw_emulation_architecture',),
    (1, 32): ('hw_ephemeral_encryption', 'hw_ephemeral_encryption_format'),
    (1, 33): ('hw_locked_memory',),
    (1, 34): ('hw_viommu_model',),
    (1, 35): ('hw_virtio_packed_ring',),
    (1, 36): ('hw_maxphysaddr_mode', 'hw_maxphysaddr_bits'),
    (1, 37): ('hw_ephemeral_encryption_secret_uuid',),
    (1, 38): ('hw_firmware_stateless',),
    (1, 40): ('hw_sound_model',),
    (1, 41): ('hw_usb_model', 'hw_redirected_usb_ports'),
    (1, 42): ('hw_mem_encryption_model',),
}

#: Enum values a version added to a property older than it: an older version cannot
#: say them, so a backport refuses rather than change the request.
_PROPS_NEW_VALUES = {
    (1, 44): ('hw_mem_encryption_model', (fields.MemEncryptionModel.INTEL_TDX,)),
    (1, 43): ('hw_mem_encryption_model', (fields.MemEncryptionModel.AMD_SEV_SNP,)),
    (1, 39): ('hw_vif_model', (fields.VIFModel.IGB,)),
    (1, 30): ('hw_video_model', (fields.VideoModel.BOCHS,)),
    (1, 28): ('hw_pci_numa_affinity_policy', (fields.PCINUMAAffinityPolicy.SOCKET,)),
    (1, 26): ('hw_cpu_policy', (fields.CPUAllocationPolicy.MIXED,)),
    (1, 22): ('hw_video_model', (fields.VideoModel.GOP, fields.VideoModel.VIRTIO,
                                 fields.VideoModel.NONE)),
    (1, 6): ('hw_disk_bus', (fields.DiskBus.LXC, fields.DiskBus.UML)),
}


@base.MinischedObjectRegistry.register
class ImageMetaProps(base.MinischedObject):
    """Typed image properties: Nova 34's ImageMetaProps, every property, each of its type.

    ``hw_*`` properties shape the guest's virtual hardware, ``img_*`` how a compute uses
    the image, ``os_*`` the guest operating system. minisched's filters read a few of them
    (architecture, hypervisor type and version, VM mode, CPU/NUMA/PCI policies, traits); the
    others are carried unchanged, so that an image a Nova client describes loses nothing.
    """

    # Versions follow Nova's numbering, so that a version means the same fields: see
    # _PROPS_ADDED_IN and _PROPS_NEW_VALUES for what each version added.
    VERSION = '1.44'

    #: Most guest NUMA nodes the per-node properties may describe.
    NUMA_NODES_MAX = 128

    fields = {
        'hw_architecture': fields.ArchitectureField(),
        # The architecture to emulate, where it differs from the host's.
        'hw_emulation_architecture': fields.ArchitectureField(),
        'hw_auto_disk_config': fields.StringField(),
        'hw_boot_menu': fields.FlexibleBooleanField(),
        'hw_cdrom_bus': fields.DiskBusField(),
        'hw_cpu_cores': fields.IntegerField(),
        'hw_cpu_sockets': fields.IntegerField(),
        'hw_cpu_max_cores': fields.IntegerField(),
        'hw_cpu_max_sockets': fields.IntegerField(),
        'hw_cpu_max_threads': fields.IntegerField(),
        'hw_cpu_policy': fields.CPUAllocationPolicyField(),
        'hw_cpu_thread_policy': fields.CPUThreadAllocationPolicyField(),
        # Guest CPUs with a realtime policy, e.g. ``^0-1``: all but 0 and 1.
        'hw_cpu_realtime_mask': fields.StringField(),
        'hw_cpu_threads': fields.IntegerField(),
        'hw_device_id': fields.IntegerField(),
        'hw_disk_bus': fields.DiskBusField(),
        'hw_disk_type': fields.StringField(),
        'hw_floppy_bus': fields.DiskBusField(),
        'hw_firmware_type': fields.FirmwareTypeField(),
        'hw_firmware_stateless': fields.FlexibleBooleanField(),
        'hw_input_bus': fields.InputBusField(),
        'hw_ipxe_boot': fields.FlexibleBooleanField(),
        'hw_locked_memory': fields.FlexibleBooleanField(),
        'hw_machine_type': fields.StringField(),
        'hw_mem_encryption': fields.FlexibleBooleanField(),
        'hw_mem_encryption_model': fields.MemEncryptionModelField(),
        # 'small', 'large', 'any' or a size (KiB, or with a unit).
        'hw_mem_page_size': fields.StringField(),
        'hw_numa_nodes': fields.IntegerField(),
        # Per guest NUMA node, its CPUs and its memory (MiB): from hw_numa_cpus.N and
        # hw_numa_mem.N properties.
        'hw_numa_cpus': fields.ListOfSetsOfIntegersField(),
        'hw_numa_mem': fields.ListOfIntegersField(),
        'hw_pci_numa_affinity_policy': fields.PCINUMAAffinityPolicyField(),
        'hw_pointer_model': fields.PointerModelField(),
        'hw_pmu': fields.FlexibleBooleanField(),
        'hw_qemu_guest_agent': fields.FlexibleBooleanField(),
        'hw_rescue_bus': fields.DiskBusField(),
        'hw_rescue_device': fields.BlockDeviceTypeField(),
        'hw_rng_model': fields.RNGModelField(),
        'hw_time_hpet': fields.FlexibleBooleanField(),
        'hw_serial_port_count': fields.IntegerField(),
        'hw_scsi_model': fields.SCSIModelField(),
        'hw_video_model': fields.VideoModelField(),
        'hw_video_ram': fields.IntegerField(),
        'hw_vif_model': fields.VIFModelField(),
        'hw_viommu_model': fields.VIOMMUModelField(),
        'hw_vm_mode': fields.VMModeField(),
        'hw_watchdog_action': fields.WatchdogActionField(),
        'hw_vif_multiqueue_enabled': fields.FlexibleBooleanField(),
        'hw_tpm_model': fields.TPMModelField(),
        'hw_tpm_version': fields.TPMVersionField(),
        'hw_ephemeral_encryption': fields.FlexibleBooleanField(),
        'hw_ephemeral_encryption_format': fields.BlockDeviceEncryptionFormatTypeField(),
        'hw_ephemeral_encryption_secret_uuid': fields.UUIDField(),
        'hw_virtio_packed_ring': fields.FlexibleBooleanField(),
        'hw_maxphysaddr_mode': fields.MaxPhysAddrModeField(),
        'hw_maxphysaddr_bits': fields.IntegerField(),
        'hw_sound_model': fields.SoundModelField(),
        'hw_usb_model': fields.USBControllerModelField(),
        'hw_redirected_usb_ports': fields.IntegerField(),
        'img_bittorrent': fields.FlexibleBooleanField(),
        # Whether img_block_device_mapping is in the v2 format (else the legacy one).
        'img_bdm_v2': fields.FlexibleBooleanField(),
        'img_block_device_mapping': fields.ListOfDictOfNullableStringsField(),
        'img_cache_in_nova': fields.FlexibleBooleanField(),
        'img_compression_level': fields.IntegerField(),
        # The hypervisor versions the image runs on, e.g. '>=2.6'.
        'img_hv_requested_version': fields.VersionPredicateField(),
        'img_hv_type': fields.HVTypeField(),
        'img_config_drive': fields.ConfigDrivePolicyField(),
        'img_linked_clone': fields.FlexibleBooleanField(),
        'img_mappings': fields.ListOfDictOfNullableStringsField(),
        'img_owner_id': fields.StringField(),
        'img_root_device_name': fields.StringField(),
        'img_use_agent': fields.FlexibleBooleanField(),
        'img_version': fields.IntegerField(),
        'img_signature': fields.StringField(),
        'img_signature_hash_method': fields.ImageSignatureHashTypeField(),
        'img_signature_certificate_uuid': fields.UUIDField(),
        'img_signature_key_type': fields.ImageSignatureKeyTypeField(),
        'img_hide_hypervisor_id': fields.FlexibleBooleanField(),
        'os_admin_user': fields.StringField(),
        'os_command_line': fields.StringField(),
        # Free form: the distribution names are too many to list.
        'os_distro': fields.StringField(),
        'os_require_quiesce': fields.FlexibleBooleanField(),
        'os_secure_boot': fields.SecureBootField(),
        'os_skip_agent_inject_files_at_boot': fields.FlexibleBooleanField(),
        'os_skip_agent_inject_ssh': fields.FlexibleBooleanField(),
        'os_type': fields.OSTypeField(),
        # From 'trait:<NAME>': 'required' properties.
        'traits_required': fields.ListOfStringsField(),
    }

    # Legacy property names accepted on input and mapped to the new ones (Nova's).
    _legacy_property_map = {
        'architecture': 'hw_architecture',
        'owner_id': 'img_owner_id',
        'vmware_disktype': 'hw_disk_type',
        'vmware_image_version': 'img_version',
        'vmware_ostype': 'os_distro',
        'auto_disk_config': 'hw_auto_disk_config',
        'ipxe_boot': 'hw_ipxe_boot',
        'xenapi_device_id': 'hw_device_id',
        'xenapi_image_compression_level': 'img_compression_level',
        'vmware_linked_clone': 'img_linked_clone',
        'xenapi_use_agent': 'img_use_agent',
        'xenapi_skip_agent_inject_ssh': 'os_skip_agent_inject_ssh',
        'xenapi_skip_agent_inject_files_at_boot': 'os_skip_agent_inject_files_at_boot',
        'cache_in_nova': 'img_cache_in_nova',
        'vm_mode': 'hw_vm_mode',
        'bittorrent': 'img_bittorrent',
        'mappings': 'img_mappings',
        'block_device_mapping': 'img_block_device_mapping',
        'bdm_v2': 'img_bdm_v2',
        'root_device_name': 'img_root_device_name',
        'hypervisor_version_requires': 'img_hv_requested_version',
        'hypervisor_type': 'img_hv_type',
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = versionutils.convert_version_to_tuple(target_version)
        for added_in, (name, values) in _PROPS_NEW_VALUES.items():
            if target < added_in and primitive.get(name) in values:
                raise exception.ObjectActionError(
                    action='obj_make_compatible', reason='%s=%s not supported in version %s'
                    % (name, primitive[name], target_version))
        for added_in, names in _PROPS_ADDED_IN.items():
            if target < added_in:
                for name in names:
                    primitive.pop(name, None)
        # Before 1.16 'disabled' was no action: leaving it out means the same.
        if target < (1, 16) and primitive.get('hw_watchdog_action') == \
                fields.WatchdogAction.DISABLED:
            del primitive['hw_watchdog_action']

    @classmethod
    def from_dict(cls, image_props):
        obj = cls()
        # Legacy names first, so that a current name given too wins whatever the dict order.
        items = sorted((image_props or {}).items(),
                       key=lambda item: item[0] not in cls._legacy_property_map and
                       item[0] != 'vmware_adaptertype')
        for key, value in items:
            if key == 'vmware_adaptertype':  # a disk bus and, unless 'ide', a SCSI model
                obj.hw_disk_bus = 'ide' if value == 'ide' else 'scsi'
                if value and value != 'ide':
                    obj.hw_scsi_model = value
                continue
            key = cls._legacy_property_map.get(key, key)
            if key.startswith('trait:'):  # Nova's image property for a required trait
                if str(value) == 'required':
                    obj.traits_required = list(obj.get('traits_required', [])) + [key[6:]]
                continue
            if key not in cls.fields or key in cls._PER_NODE:
                continue
            if key in _JSON_LISTS and isinstance(value, str):
                value = jsonutils.loads(value)
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
