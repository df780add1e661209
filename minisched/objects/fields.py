"""Field types of minisched objects: oslo.versionedobjects' fields plus a few Nova enums."""
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


class Architecture(ovo_fields.Enum):
    """Canonical CPU architecture names: Nova's (libvirt's), in Nova's order, which is part of
    the fingerprint of every object with such a field."""

    AARCH64 = 'aarch64'
    ARMV7 = 'armv7l'
    I686 = 'i686'
    PPC64 = 'ppc64'
    PPC64LE = 'ppc64le'
    S390X = 's390x'
    X86_64 = 'x86_64'
    ALL = ('alpha', 'armv6', ARMV7, 'armv7b', AARCH64, 'cris', I686, 'ia64', 'lm32', 'm68k',
           'microblaze', 'microblazeel', 'mips', 'mipsel', 'mips64', 'mips64el', 'openrisc',
           'parisc', 'parisc64', 'ppc', 'ppcle', PPC64, PPC64LE, 'ppcemb', 's390', S390X,
           'sh4', 'sh4eb', 'sparc', 'sparc64', 'unicore32', X86_64, 'xtensa', 'xtensaeb')

    def __init__(self):
        super().__init__(valid_values=self.ALL)

    @classmethod
    def canonicalize(cls, name):
        if name is None:
            return None
        newname = name.lower()
        if newname in ('i386', 'i486', 'i586'):
            newname = cls.I686
        elif newname == 'x86_32':  # Xen's name
            newname = cls.I686
        elif newname == 'amd64':
            newname = cls.X86_64
        elif newname == 'arm64':
            newname = cls.AARCH64
        return newname


class HVType(ovo_fields.Enum):
    """Hypervisor (virtualization) types: Nova's, in Nova's order (see ``Architecture``);
    ``fake`` is the fake driver's."""

    BAREMETAL = 'baremetal'
    FAKE = 'fake'
    HYPERV = 'hyperv'
    IRONIC = 'ironic'
    KVM = 'kvm'
    LXC = 'lxc'
    QEMU = 'qemu'
    VMWARE = 'vmware'
    XEN = 'xen'
    ALL = (BAREMETAL, 'bhyve', 'docker', FAKE, HYPERV, IRONIC, 'kqemu', KVM, LXC, 'lxd',
           'openvz', 'parallels', 'phyp', QEMU, 'test', 'uml', 'vbox', 'vz', VMWARE, XEN,
           'zvm', 'prsm')

    def __init__(self):
        super().__init__(valid_values=self.ALL)

    @classmethod
    def canonicalize(cls, name):
        if name is None:
            return None
        newname = name.lower()
        if newname == 'xapi':
            newname = cls.XEN
        return newname


class VMMode(ovo_fields.Enum):
    """Virtual machine modes (Nova's ``fields.VMMode``)."""

    HVM = 'hvm'
    XEN = 'xen'
    UML = 'uml'
    EXE = 'exe'
    ALL = (HVM, XEN, UML, EXE)

    def __init__(self):
        super().__init__(valid_values=self.ALL)

    @classmethod
    def canonicalize(cls, mode):
        if mode is None:
            return None
        mode = mode.lower()
        if mode in ('pv', 'xen'):
            mode = cls.XEN
        elif mode == 'hv':
            mode = cls.HVM
        elif mode == 'baremetal':
            mode = cls.HVM
        return mode


class ArchitectureField(ovo_fields.BaseEnumField):
    AUTO_TYPE = Architecture()


class HVTypeField(ovo_fields.BaseEnumField):
    AUTO_TYPE = HVType()


class VMModeField(ovo_fields.BaseEnumField):
    AUTO_TYPE = VMMode()


class PCINUMAAffinityPolicy(ovo_fields.Enum):
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

    def __init__(self):
        super().__init__(valid_values=self.ALL)


class PCINUMAAffinityPolicyField(ovo_fields.BaseEnumField):
    AUTO_TYPE = PCINUMAAffinityPolicy()


class MaxPhyAddrMode(ovo_fields.Enum):
    """How a guest's physical address bits are chosen (Nova's ``MaxPhyAddrMode``)."""

    PASSTHROUGH = 'passthrough'
    EMULATE = 'emulate'
    ALL = (PASSTHROUGH, EMULATE)

    def __init__(self):
        super().__init__(valid_values=self.ALL)


class MaxPhysAddrModeField(ovo_fields.BaseEnumField):
    AUTO_TYPE = MaxPhyAddrMode()


class PciDeviceStatus(ovo_fields.Enum):
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

    def __init__(self):
        super().__init__(valid_values=self.ALL)


class PciDeviceType(ovo_fields.Enum):
    """Kinds of PCI device (Nova's strings, ``type-`` prefix included; ``vdpa`` has none)."""

    STANDARD = 'type-PCI'
    SRIOV_PF = 'type-PF'
    SRIOV_VF = 'type-VF'
    VDPA = 'vdpa'
    ALL = (STANDARD, SRIOV_PF, SRIOV_VF, VDPA)

    def __init__(self):
        super().__init__(valid_values=self.ALL)


class PciDeviceStatusField(ovo_fields.BaseEnumField):
    AUTO_TYPE = PciDeviceStatus()


class PciDeviceTypeField(ovo_fields.BaseEnumField):
    AUTO_TYPE = PciDeviceType()


# Compound field types the NUMA objects use (oslo.versionedobjects has them).
SetOfStringsField = ovo_fields.SetOfStringsField
ListOfSetsOfIntegersField = ovo_fields.ListOfSetsOfIntegersField
DictOfSetOfIntegersField = ovo_fields.DictOfSetOfIntegersField
DictProxyField = ovo_fields.DictProxyField


class CPUAllocationPolicy(ovo_fields.Enum):
    """Whether guest CPUs float over the host's shared CPUs, are each pinned to a host CPU
    of their own, or a mix of both (Nova's ``hw:cpu_policy`` values)."""

    DEDICATED = 'dedicated'
    SHARED = 'shared'
    MIXED = 'mixed'
    ALL = (DEDICATED, SHARED, MIXED)

    def __init__(self):
        super().__init__(valid_values=self.ALL)


class CPUThreadAllocationPolicy(ovo_fields.Enum):
    """How pinned guest CPUs use host SMT siblings (Nova's ``hw:cpu_thread_policy``).

    ``prefer``: siblings when there are any, else separate cores; ``isolate``: one guest CPU
    per core, its siblings left unused; ``require``: siblings only, on an SMT host.
    """

    PREFER = 'prefer'
    ISOLATE = 'isolate'
    REQUIRE = 'require'
    ALL = (PREFER, ISOLATE, REQUIRE)

    def __init__(self):
        super().__init__(valid_values=self.ALL)


class CPUEmulatorThreadsPolicy(ovo_fields.Enum):
    """Where a pinned guest's emulator threads run (Nova's ``hw:emulator_threads_policy``):
    ``share`` over the guest's own CPUs, or ``isolate`` on one extra host CPU."""

    SHARE = 'share'
    ISOLATE = 'isolate'
    ALL = (SHARE, ISOLATE)

    def __init__(self):
        super().__init__(valid_values=self.ALL)


class CPUAllocationPolicyField(ovo_fields.BaseEnumField):
    AUTO_TYPE = CPUAllocationPolicy()


class CPUThreadAllocationPolicyField(ovo_fields.BaseEnumField):
    AUTO_TYPE = CPUThreadAllocationPolicy()


class CPUEmulatorThreadsPolicyField(ovo_fields.BaseEnumField):
    AUTO_TYPE = CPUEmulatorThreadsPolicy()
