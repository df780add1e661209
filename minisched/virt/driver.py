"""The virt driver interface the compute manager talks to, and its loader."""
import abc
import math

import os_resource_classes as orc
import os_traits
from stevedore import driver as stevedore_driver
from stevedore import extension

from minisched import exception

NAMESPACE = 'minisched.compute.driver'
_IMAGE_TYPE_PREFIX = 'supports_image_type_'

#: A driver capability and the trait its compute node's provider has while it is True
#: (Nova's map, for the capabilities a minisched driver can have).
CAPABILITY_TRAITS_MAP = {
    'supports_attach_interface': os_traits.COMPUTE_NET_ATTACH_INTERFACE,
    'supports_device_tagging': os_traits.COMPUTE_DEVICE_TAGGING,
    'supports_tagged_attach_interface': os_traits.COMPUTE_NET_ATTACH_INTERFACE_WITH_TAG,
    'supports_tagged_attach_volume': os_traits.COMPUTE_VOLUME_ATTACH_WITH_TAG,
    'supports_extend_volume': os_traits.COMPUTE_VOLUME_EXTEND,
    'supports_multiattach': os_traits.COMPUTE_VOLUME_MULTI_ATTACH,
    'supports_trusted_certs': os_traits.COMPUTE_TRUSTED_CERTS,
    'supports_accelerators': os_traits.COMPUTE_ACCELERATORS,
    'supports_image_type_aki': os_traits.COMPUTE_IMAGE_TYPE_AKI,
    'supports_image_type_ami': os_traits.COMPUTE_IMAGE_TYPE_AMI,
    'supports_image_type_ari': os_traits.COMPUTE_IMAGE_TYPE_ARI,
    'supports_image_type_iso': os_traits.COMPUTE_IMAGE_TYPE_ISO,
    'supports_image_type_qcow2': os_traits.COMPUTE_IMAGE_TYPE_QCOW2,
    'supports_image_type_raw': os_traits.COMPUTE_IMAGE_TYPE_RAW,
    'supports_image_type_vdi': os_traits.COMPUTE_IMAGE_TYPE_VDI,
    'supports_image_type_vhd': os_traits.COMPUTE_IMAGE_TYPE_VHD,
    'supports_image_type_vhdx': os_traits.COMPUTE_IMAGE_TYPE_VHDX,
    'supports_image_type_vmdk': os_traits.COMPUTE_IMAGE_TYPE_VMDK,
    'supports_image_type_ploop': os_traits.COMPUTE_IMAGE_TYPE_PLOOP,
    'supports_migrate_to_same_host': os_traits.COMPUTE_SAME_HOST_COLD_MIGRATE,
    'supports_bfv_rescue': os_traits.COMPUTE_RESCUE_BFV,
    'supports_secure_boot': os_traits.COMPUTE_SECURITY_UEFI_SECURE_BOOT,
    'supports_socket_pci_numa_affinity': os_traits.COMPUTE_SOCKET_PCI_NUMA_AFFINITY,
    'supports_remote_managed_ports': os_traits.COMPUTE_REMOTE_MANAGED_PORTS,
    'supports_ephemeral_encryption': os_traits.COMPUTE_EPHEMERAL_ENCRYPTION,
    'supports_ephemeral_encryption_luks': os_traits.COMPUTE_EPHEMERAL_ENCRYPTION_LUKS,
    'supports_ephemeral_encryption_plain': os_traits.COMPUTE_EPHEMERAL_ENCRYPTION_PLAIN,
    'supports_address_space_passthrough': os_traits.COMPUTE_ADDRESS_SPACE_PASSTHROUGH,
    'supports_address_space_emulated': os_traits.COMPUTE_ADDRESS_SPACE_EMULATED,
    'supports_stateless_firmware': os_traits.COMPUTE_SECURITY_STATELESS_FIRMWARE,
    'supports_virtio_fs': os_traits.COMPUTE_STORAGE_VIRTIO_FS,
    'supports_mem_backing_file': os_traits.COMPUTE_MEM_BACKING_FILE,
}


class ComputeDriver(abc.ABC):
    """A hypervisor: reports node resources and runs instances."""

    #: What the hypervisor can do: ``supports_*`` flags, reported to Placement as traits.
    capabilities = {}

    def __init__(self, conf):
        self.conf = conf

    @abc.abstractmethod
    def init_host(self, host):
        """Prepare the driver for ``host`` (decides the node names)."""

    def check_config(self, host):
        """Raise ConfigInvalid, naming the option, for settings the driver cannot run
        ``host`` with. Called by ``minisched-compute`` before it waits for the conductor, so
        that a bad value stops it at once; must have no side effects."""

    @abc.abstractmethod
    def get_available_nodes(self, refresh=False):
        """Names of the nodes this driver manages."""

    @abc.abstractmethod
    def get_available_resource(self, nodename):
        """Resource dict of ``nodename`` (``{}`` for an unknown node)."""

    @abc.abstractmethod
    def spawn(self, context, instance, image_meta, injected_files, admin_password,
              allocations, network_info=None, block_device_info=None):
        """Create and start ``instance``."""

    @abc.abstractmethod
    def destroy(self, context, instance, network_info=None, block_device_info=None,
                destroy_disks=True):
        """Stop and remove ``instance`` (unknown instances are ignored)."""

    @abc.abstractmethod
    def get_info(self, instance):
        """``InstanceInfo`` with the instance's power state."""

    @abc.abstractmethod
    def list_instances(self):
        """Names (uuids) of the instances the driver runs."""

    def list_instance_uuids(self):
        return self.list_instances()

    def get_num_instances(self):
        return len(self.list_instances())

    def instance_exists(self, instance):
        return instance.uuid in self.list_instance_uuids()

    def reboot(self, context, instance, network_info, reboot_type):
        """Reboot ``instance``; drivers without reboot raise NotImplementedError."""
        raise NotImplementedError()

    def capabilities_as_traits(self):
        """``{trait: supported}`` of the capabilities that map to a trait; an image type
        of ``[compute] image_type_exclude_list`` is unsupported whatever the driver says,
        as in Nova."""
        traits = {}
        for name, supported in self.capabilities.items():
            if name.startswith(_IMAGE_TYPE_PREFIX):
                supported = self._check_image_type_exclude_list(name, supported)
            if name in CAPABILITY_TRAITS_MAP:
                traits[CAPABILITY_TRAITS_MAP[name]] = supported
        return traits

    def _check_image_type_exclude_list(self, capability, supported):
        """True when the driver supports the image type of ``capability``
        (``supports_image_type_<format>``) and the operator did not exclude it."""
        image_type = capability[len(_IMAGE_TYPE_PREFIX):]
        return supported and image_type not in self.conf.compute.image_type_exclude_list

    def update_provider_tree(self, provider_tree, nodename, allocations=None):
        """Set the inventory (and driver-owned traits) of ``nodename``'s provider in
        ``provider_tree`` (a :class:`minisched.compute.provider_tree.ProviderTree`), with
        the allocation ratios and reserved amounts of the configuration."""
        raise NotImplementedError()

    def _get_allocation_ratios(self, inventory):
        """The VCPU, MEMORY_MB and DISK_GB allocation ratios, as Nova picks them: the
        ``*_allocation_ratio`` option when set, else the ratio of the provider's current
        inventory, else ``initial_*_allocation_ratio`` (a new inventory)."""
        ratios = {}
        for prefix, rc in (('cpu', orc.VCPU), ('ram', orc.MEMORY_MB), ('disk', orc.DISK_GB)):
            option = '%s_allocation_ratio' % prefix
            if getattr(self.conf, option):
                ratios[rc] = getattr(self.conf, option)
            elif rc in inventory:
                ratios[rc] = inventory[rc]['allocation_ratio']
            else:
                ratios[rc] = getattr(self.conf, 'initial_%s' % option)
        return ratios

    def _get_reserved_host_disk_gb_from_config(self):
        return int(math.ceil(self.conf.reserved_host_disk_mb / 1024.0))

    def power_off(self, instance, timeout=0, retry_interval=0):
        raise NotImplementedError()

    def power_on(self, context, instance, network_info, block_device_info=None):
        raise NotImplementedError()


def load_compute_driver(conf, name=None):
    """Instantiate the virt driver named by ``[DEFAULT] compute_driver``."""
    name = name or conf.compute_driver
    try:
        mgr = stevedore_driver.DriverManager(NAMESPACE, name, invoke_on_load=True,
                                             invoke_args=(conf,))
    except Exception as exc:
        available = sorted(ext.name for ext in extension.ExtensionManager(NAMESPACE))
        raise exception.VirtDriverNotFound(name=name,
                                           available=', '.join(available) or 'none') from exc
    return mgr.driver
