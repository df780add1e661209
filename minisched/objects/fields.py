"""Field types of minisched objects: oslo.versionedobjects' fields plus Nova's enums (same
class names and values, so that a field reads the same in both projects' fingerprints)."""
import re

from oslo_versionedobjects import fields as ovo_fields

# Re-exported so object modules import one ``fields`` module, as Nova's do.
Field = ovo_fields.Field
BaseEnumField = ovo_fields.BaseEnumField
Enum = ovo_fields.Enum
StringField = ovo_fields.StringField
IntegerField = ovo_fields.IntegerField
NonNegativeIntegerField = ovo_fields.NonNegativeIntegerField
FloatField = ovo_fields.FloatField
NonNegativeFloatField = ovo_fields.NonNegativeFloatField
BooleanField = ovo_fields.BooleanField
FlexibleBooleanField = ovo_fields.FlexibleBooleanField
DateTimeField = ovo_fields.DateTimeField
DictOfStringsField = ovo_fields.DictOfStringsField
DictOfNullableStringsField = ovo_fields.DictOfNullableStringsField
DictOfIntegersField = ovo_fields.DictOfIntegersField
ListOfStringsField = ovo_fields.ListOfStringsField
ListOfIntegersField = ovo_fields.ListOfIntegersField
ListOfDictOfNullableStringsField = ovo_fields.ListOfDictOfNullableStringsField
DictOfListOfStringsField = ovo_fields.DictOfListOfStringsField
SetOfIntegersField = ovo_fields.SetOfIntegersField
ObjectField = ovo_fields.ObjectField
ListOfObjectsField = ovo_fields.ListOfObjectsField
IPAddressField = ovo_fields.IPAddressField
IPV4AddressField = ovo_fields.IPV4AddressField
SensitiveStringField = ovo_fields.SensitiveStringField
VersionPredicateField = ovo_fields.VersionPredicateField
ListOfUUIDField = ovo_fields.ListOfUUIDField
ListOfListsOfStringsField = ovo_fields.ListOfListsOfStringsField

_CANONICAL_UUID = re.compile(r'[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-'
                             r'[0-9a-fA-F]{12}')


class UUID(ovo_fields.UUID):
    """oslo.versionedobjects' UUID type (the value as a string; a FutureWarning, not an
    error, when it is no UUID), without its per-value warnings context.

    The library sets up a ``warnings.catch_warnings()`` block for every value, even a valid
    one: 4 us each, a dozen times per select_destinations. A value already in the canonical
    8-4-4-4-12 hex form is a UUID and is returned at once; any other takes the library's
    path, warning included.
    """

    def coerce(self, obj, attr, value):
        text = f'{value}'
        if _CANONICAL_UUID.fullmatch(text):
            return text
        return super().coerce(obj, attr, value)


class UUIDField(ovo_fields.AutoTypedField):
    AUTO_TYPE = UUID()


class BaseMinischedEnum(ovo_fields.Enum):
    """An enum whose valid values are its class's ``ALL`` (Nova's ``BaseNovaEnum``)."""

    ALL = ()

    def __init__(self):
        super().__init__(valid_values=self.ALL)


class _CanonicalEnum(BaseMinischedEnum):
    """An enum whose values are canonicalized (``canonicalize``) before they are checked."""

    @classmethod
    def canonicalize(cls, name):
        return name

    def coerce(self, obj, attr, value):
        return super().coerce(obj, attr, self.canonicalize(value))


class Architecture(_CanonicalEnum):
    """Canonical CPU architecture names: libvirt's, as Nova lists them."""

    ALPHA = 'alpha'
    ARMV6 = 'armv6'
    ARMV7 = 'armv7l'
    ARMV7B = 'armv7b'
    AARCH64 = 'aarch64'
    CRIS = 'cris'
    I686 = 'i686'
    IA64 = 'ia64'
    LM32 = 'lm32'
    M68K = 'm68k'
    MICROBLAZE = 'microblaze'
    MICROBLAZEEL = 'microblazeel'
    MIPS = 'mips'
    MIPSEL = 'mipsel'
    MIPS64 = 'mips64'
    MIPS64EL = 'mips64el'
    OPENRISC = 'openrisc'
    PARISC = 'parisc'
    PARISC64 = 'parisc64'
    PPC = 'ppc'
    PPCLE = 'ppcle'
    PPC64 = 'ppc64'
    PPC64LE = 'ppc64le'
    PPCEMB = 'ppcemb'
    S390 = 's390'
    S390X = 's390x'
    SH4 = 'sh4'
    SH4EB = 'sh4eb'
    SPARC = 'sparc'
    SPARC64 = 'sparc64'
    UNICORE32 = 'unicore32'
    X86_64 = 'x86_64'
    XTENSA = 'xtensa'
    XTENSAEB = 'xtensaeb'
    ALL = (ALPHA, ARMV6, ARMV7, ARMV7B, AARCH64, CRIS, I686, IA64, LM32, M68K, MICROBLAZE,
           MICROBLAZEEL, MIPS, MIPSEL, MIPS64, MIPS64EL, OPENRISC, PARISC, PARISC64, PPC,
           PPCLE, PPC64, PPC64LE, PPCEMB, S390, S390X, SH4, SH4EB, SPARC, SPARC64, UNICORE32,
           X86_64, XTENSA, XTENSAEB)

    @classmethod
    def canonicalize(cls, name):
        """``name`` lower-cased, its aliases mapped to the canonical name (an unknown name
        comes back as it is: a field refuses it, see :meth:`coerce`)."""
        if name is None:
            return None
        newname = name.lower()
        if newname in ('i386', 'i486', 'i586', 'x86_32', 'x86_32p'):  # x86_32: Xen's name
            newname = cls.I686
        elif newname == 'amd64':
            newname = cls.X86_64
        elif newname == 'arm64':
            newname = cls.AARCH64
        return newname


class HVType(_CanonicalEnum):
    """Guest virtualization types (Nova's list); ``fake`` is the fake driver's."""

    BAREMETAL = 'baremetal'
    BHYVE = 'bhyve'
    DOCKER = 'docker'
    FAKE = 'fake'
    HYPERV = 'hyperv'
    IRONIC = 'ironic'
    KQEMU = 'kqemu'
    KVM = 'kvm'
    LXC = 'lxc'
    LXD = 'lxd'
    OPENVZ = 'openvz'
    PARALLELS = 'parallels'
    VIRTUOZZO = 'vz'
    PHYP = 'phyp'
    QEMU = 'qemu'
    TEST = 'test'
    UML = 'uml'
    VBOX = 'vbox'
    VMWARE = 'vmware'
    XEN = 'xen'
    ZVM = 'zvm'
    PRSM = 'prsm'
    ALL = (BAREMETAL, BHYVE, DOCKER, FAKE, HYPERV, IRONIC, KQEMU, KVM, LXC, LXD, OPENVZ,
           PARALLELS, PHYP, QEMU, TEST, UML, VBOX, VIRTUOZZO, VMWARE, XEN, ZVM, PRSM)

    @classmethod
    def canonicalize(cls, name):
        if name is None:
            return None
        newname = name.lower()
        if newname == 'xapi':
            newname = cls.XEN
        return newname


class VMMode(_CanonicalEnum):
    """Virtual machine modes (Nova's ``fields.VMMode``)."""

    HVM = 'hvm'
    XEN = 'xen'
    UML = 'uml'
    EXE = 'exe'
    ALL = (HVM, XEN, UML, EXE)

    @classmethod
    def canonicalize(cls, mode):
        if mode is None:
            return None
        mode = mode.lower()
        if mode in ('pv', 'xen'):
            mode = cls.XEN
        elif mode in ('hv', 'baremetal'):
            mode = cls.HVM
        return mode


class DiskBus(BaseMinischedEnum):
    FDC = 'fdc'
    IDE = 'ide'
    SATA = 'sata'
    SCSI = 'scsi'
    USB = 'usb'
    VIRTIO = 'virtio'
    XEN = 'xen'
    LXC = 'lxc'
    UML = 'uml'
    ALL = (FDC, IDE, SATA, SCSI, USB, VIRTIO, XEN, LXC, UML)


class BlockDeviceType(BaseMinischedEnum):
    ALL = ('cdrom', 'disk', 'floppy', 'fs', 'lun')


class BlockDeviceEncryptionFormatType(BaseMinischedEnum):
    ALL = ('plain', 'luks', 'luksv2')


class ConfigDrivePolicy(BaseMinischedEnum):
    ALL = ('optional', 'mandatory')


class FirmwareType(BaseMinischedEnum):
    ALL = ('uefi', 'bios')


class ImageSignatureHashType(BaseMinischedEnum):
    """Hash methods of image signatures (those of the ``cursive`` library Nova uses)."""

    ALL = ('SHA-224', 'SHA-256', 'SHA-384', 'SHA-512')


class ImageSignatureKeyType(BaseMinischedEnum):
    ALL = ('DSA', 'ECC_SECP384R1', 'ECC_SECP521R1', 'ECC_SECT409K1', 'ECC_SECT409R1',
           'ECC_SECT571K1', 'ECC_SECT571R1', 'RSA-PSS')


class InputBus(BaseMinischedEnum):
    ALL = ('usb', 'virtio')


class OSType(_CanonicalEnum):
    ALL = ('linux', 'windows')

    @classmethod
    def canonicalize(cls, name):
        return name.lower()  # 'Linux', 'Windows' are seen


class _LegacyNamedEnum(_CanonicalEnum):
    """An enum that also takes, in any case, the older names of ``LEGACY_VALUES``."""

    LEGACY_VALUES = {}

    @classmethod
    def canonicalize(cls, name):
        name = name.lower()
        return cls.LEGACY_VALUES.get(name, name)


class RNGModel(BaseMinischedEnum):
    ALL = ('virtio',)


class TPMModel(BaseMinischedEnum):
    ALL = ('tpm-tis', 'tpm-crb')


class TPMVersion(BaseMinischedEnum):
    ALL = ('1.2', '2.0')


class MemEncryptionModel(BaseMinischedEnum):
    AMD_SEV = 'amd-sev'
    AMD_SEV_ES = 'amd-sev-es'
    AMD_SEV_SNP = 'amd-sev-snp'
    INTEL_TDX = 'intel-tdx'
    ALL = (AMD_SEV, AMD_SEV_ES, AMD_SEV_SNP, INTEL_TDX)


class SCSIModel(_LegacyNamedEnum):
    ALL = ('buslogic', 'ibmvscsi', 'lsilogic', 'lsisas1068', 'lsisas1078', 'virtio-scsi',
           'vmpvscsi')
    #: Names of the legacy ``vmware_adaptertype`` property.
    LEGACY_VALUES = {'lsilogicsas': 'lsisas1068', 'paravirtual': 'vmpvscsi'}


class SecureBoot(BaseMinischedEnum):
    ALL = ('required', 'disabled', 'optional')


class VideoModel(BaseMinischedEnum):
    GOP = 'gop'
    VIRTIO = 'virtio'
    NONE = 'none'
    BOCHS = 'bochs'
    ALL = ('cirrus', 'qxl', 'vga', 'vmvga', 'xen', VIRTIO, GOP, NONE, BOCHS)


class VIFModel(_LegacyNamedEnum):
    IGB = 'igb'
    ALL = ('virtio', 'ne2k_pci', 'pcnet', 'rtl8139', 'e1000', 'e1000e', 'netfront',
           'spapr-vlan', 'lan9118', 'sriov', 'vmxnet', 'vmxnet3', IGB)
    #: VMware's names of the models.
    LEGACY_VALUES = {'virtuale1000': 'e1000', 'virtuale1000e': 'e1000e',
                     'virtualpcnet32': 'pcnet', 'virtualsriovethernetcard': 'sriov',
                     'virtualvmxnet': 'vmxnet', 'virtualvmxnet3': 'vmxnet3'}


class VIOMMUModel(BaseMinischedEnum):
    ALL = ('intel', 'smmuv3', 'virtio', 'auto')


class WatchdogAction(BaseMinischedEnum):
    DISABLED = 'disabled'
    ALL = ('none', 'pause', 'poweroff', 'reset', DISABLED)


class PointerModelType(BaseMinischedEnum):
    ALL = ('usbtablet',)


class SoundModelType(BaseMinischedEnum):
    ALL = ('sb16', 'es1370', 'pcspk', 'ac97', 'ich6', 'ich9', 'usb', 'virtio')


class USBControllerModelType(BaseMinischedEnum):
    ALL = ('none', 'nec-xhci', 'qemu-xhci')


class ArchitectureField(ovo_fields.BaseEnumField):
    AUTO_TYPE = Architecture()


class HVTypeField(ovo_fields.BaseEnumField):
    AUTO_TYPE = HVType()


class VMModeField(ovo_fields.BaseEnumField):
    AUTO_TYPE = VMMode()


def _enum_field(name, enum):
    return type(name, (ovo_fields.BaseEnumField,), {'AUTO_TYPE': enum()})


# The enum fields of ImageMetaProps, named as Nova names them.
DiskBusField = _enum_field('DiskBusField', DiskBus)
BlockDeviceTypeField = _enum_field('BlockDeviceTypeField', BlockDeviceType)
BlockDeviceEncryptionFormatTypeField = _enum_field('BlockDeviceEncryptionFormatTypeField',
                                                   BlockDeviceEncryptionFormatType)
ConfigDrivePolicyField = _enum_field('ConfigDrivePolicyField', ConfigDrivePolicy)
FirmwareTypeField = _enum_field('FirmwareTypeField', FirmwareType)
ImageSignatureHashTypeField = _enum_field('ImageSignatureHashTypeField',
                                          ImageSignatureHashType)
ImageSignatureKeyTypeField = _enum_field('ImageSignatureKeyTypeField', ImageSignatureKeyType)
InputBusField = _enum_field('InputBusField', InputBus)
OSTypeField = _enum_field('OSTypeField', OSType)
RNGModelField = _enum_field('RNGModelField', RNGModel)
TPMModelField = _enum_field('TPMModelField', TPMModel)
TPMVersionField = _enum_field('TPMVersionField', TPMVersion)
MemEncryptionModelField = _enum_field('MemEncryptionModelField', MemEncryptionModel)
SCSIModelField = _enum_field('SCSIModelField', SCSIModel)
SecureBootField = _enum_field('SecureBootField', SecureBoot)
VideoModelField = _enum_field('VideoModelField', VideoModel)
VIFModelField = _enum_field('VIFModelField', VIFModel)
VIOMMUModelField = _enum_field('VIOMMUModelField', VIOMMUModel)
WatchdogActionField = _enum_field('WatchdogActionField', WatchdogAction)
PointerModelField = _enum_field('PointerModelField', PointerModelType)
SoundModelField = _enum_field('SoundModelField', SoundModelType)
USBControllerModelField = _enum_field('USBControllerModelField', USBControllerModelType)


class PCINUMAAffinityPolicy(BaseMinischedEnum):
    """How strictly a PCI device must share a NUMA node with the instance (Nova's names).

    ``required``: only devices on the instance's nodes; ``legacy``: those, else devices
    reporting no node at all; ``preferred``: any device, the instance's nodes first;
    ``socket``: devices on a node of the same socket as one of the instance's nodes.
    """

    REQUIRED = 'required'
    LEGACY = 'legacy'
    PREFERRED = 'preferred'
    SOCKET = 'socket'
    ALL = (REQUIRED, LEGACY, PREFERRED, SOCKET)


class PCINUMAAffinityPolicyField(ovo_fields.BaseEnumField):
    AUTO_TYPE = PCINUMAAffinityPolicy()


class MaxPhyAddrMode(BaseMinischedEnum):
    """How a guest's physical address bits are chosen (Nova's ``MaxPhyAddrMode``)."""

    PASSTHROUGH = 'passthrough'
    EMULATE = 'emulate'
    ALL = (PASSTHROUGH, EMULATE)


class MaxPhysAddrModeField(ovo_fields.BaseEnumField):
    AUTO_TYPE = MaxPhyAddrMode()


class PciDeviceStatus(BaseMinischedEnum):
    """Life cycle of a PCI device on its compute (Nova's values).

    ``unclaimable``/``unavailable``: a PF whose VF is claimed/allocated, or a VF whose PF is;
    ``removed``: gone from the hypervisor but still in use; ``deleted``: forgotten.
    """

    AVAILABLE = 'available'
    CLAIMED = 'claimed'
    ALLOCATED = 'allocated'
    REMOVED = 'removed'
    DELETED = 'deleted'
    UNCLAIMABLE = 'unclaimable'
    UNAVAILABLE = 'unavailable'
    ALL = (AVAILABLE, CLAIMED, ALLOCATED, REMOVED, DELETED, UNAVAILABLE, UNCLAIMABLE)


class PciDeviceType(BaseMinischedEnum):
    """Kinds of PCI device (Nova's strings, ``type-`` prefix included; ``vdpa`` has none)."""

    STANDARD = 'type-PCI'
    SRIOV_PF = 'type-PF'
    SRIOV_VF = 'type-VF'
    VDPA = 'vdpa'
    ALL = (STANDARD, SRIOV_PF, SRIOV_VF, VDPA)


class PciDeviceStatusField(ovo_fields.BaseEnumField):
    AUTO_TYPE = PciDeviceStatus()


class PciDeviceTypeField(ovo_fields.BaseEnumField):
    AUTO_TYPE = PciDeviceType()


# Compound field types the NUMA objects use (oslo.versionedobjects has them).
SetOfStringsField = ovo_fields.SetOfStringsField
ListOfSetsOfIntegersField = ovo_fields.ListOfSetsOfIntegersField
DictOfSetOfIntegersField = ovo_fields.DictOfSetOfIntegersField
DictProxyField = ovo_fields.DictProxyField


class CPUAllocationPolicy(BaseMinischedEnum):
    """Whether guest CPUs float over the host's shared CPUs, are each pinned to a host CPU
    of their own, or a mix of both (Nova's ``hw:cpu_policy`` values)."""

    DEDICATED = 'dedicated'
    SHARED = 'shared'
    MIXED = 'mixed'
    ALL = (DEDICATED, SHARED, MIXED)


class CPUThreadAllocationPolicy(BaseMinischedEnum):
    """How pinned guest CPUs use host SMT siblings (Nova's ``hw:cpu_thread_policy``).

    ``prefer``: siblings when there are any, else separate cores; ``isolate``: one guest CPU
    per core, its siblings left unused; ``require``: siblings only, on an SMT host.
    """

    PREFER = 'prefer'
    ISOLATE = 'isolate'
    REQUIRE = 'require'
    ALL = (PREFER, ISOLATE, REQUIRE)


class CPUEmulatorThreadsPolicy(BaseMinischedEnum):
    """Where a pinned guest's emulator threads run (Nova's ``hw:emulator_threads_policy``):
    ``share`` over the guest's own CPUs, or ``isolate`` on one extra host CPU."""

    SHARE = 'share'
    ISOLATE = 'isolate'
    ALL = (SHARE, ISOLATE)


class CPUAllocationPolicyField(ovo_fields.BaseEnumField):
    AUTO_TYPE = CPUAllocationPolicy()


class CPUThreadAllocationPolicyField(ovo_fields.BaseEnumField):
    AUTO_TYPE = CPUThreadAllocationPolicy()


class CPUEmulatorThreadsPolicyField(ovo_fields.BaseEnumField):
    AUTO_TYPE = CPUEmulatorThreadsPolicy()
