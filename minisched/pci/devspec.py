"""One ``[pci] device_spec`` entry: which host devices it admits, and the tags it gives them.

An entry matches a device on ``vendor_id``, ``product_id`` and its address, given as a
glob (``*:0a:00.*``), as regular expressions per address field, or through a network
interface name (``devname``) looked up in sysfs. Every other key is a tag copied onto the
pools of the devices it admits. The address classes validate each field against the PCI
maxima (ffff:ff:1f.7); they also parse the addresses the hypervisor reports, so a device
address that does not fit (a 32-bit domain) raises PciConfigInvalidSpec as a bad entry
would, which the compute's device sync skips.
"""
import abc
import copy
import re
import string

from oslo_utils import strutils

from minisched import exception
from minisched.pci.request import PCI_REMOTE_MANAGED_TAG
from minisched.pci import utils

MAX_VENDOR_ID = 0xFFFF
MAX_PRODUCT_ID = 0xFFFF
MAX_FUNC = 0x7
MAX_DOMAIN = 0xFFFF
MAX_BUS = 0xFF
MAX_SLOT = 0x1F
ANY = '*'
REGEX_ANY = '.*'

#: Boolean-like tags normalised to 'true'/'false'.
_BOOLEAN_TAGS = ('managed', 'live_migratable', 'one_time_use')
#: Tags the compute copies from the spec onto the device it admits.
_DEVICE_TAGS = ('managed', 'live_migratable')


class PciAddressSpec(metaclass=abc.ABCMeta):
    """The four fields of a PCI address (or address pattern) and their validation."""

    def __init__(self, pci_addr):
        self.domain = ''
        self.bus = ''
        self.slot = ''
        self.func = ''

    @abc.abstractmethod
    def match(self, pci_addr):
        """True when the PhysicalPciAddress ``pci_addr`` fits this address."""

    def is_single_address(self):
        """True when every field is plain hex: the spec names exactly one device."""
        return all(all(c in string.hexdigits for c in part)
                   for part in (self.domain, self.bus, self.slot, self.func))

    def _set_pci_dev_info(self, prop, maxval, hex_value):
        """Check that attribute ``prop`` is ``*`` or hex no larger than ``maxval``, and
        store it normalised with the format ``hex_value``."""
        text = getattr(self, prop)
        if text == ANY:
            return
        try:
            value = int(text, 16)
        except ValueError:
            raise exception.PciConfigInvalidSpec(
                reason="property %s ('%s') does not parse as a hex number." % (prop, text))
        if value > maxval:
            raise exception.PciConfigInvalidSpec(
                reason='property %s (%s) is greater than the maximum allowable value (%X).'
                % (prop, text, maxval))
        setattr(self, prop, hex_value % value)


class PhysicalPciAddress(PciAddressSpec):
    """A complete address (a string, or a dict with domain/bus/slot/function)."""

    def __init__(self, pci_addr):
        try:
            if isinstance(pci_addr, dict):
                self.domain = pci_addr['domain']
                self.bus = pci_addr['bus']
                self.slot = pci_addr['slot']
                self.func = pci_addr['function']
            else:
                self.domain, self.bus, self.slot, self.func = \
                    utils.get_pci_address_fields(pci_addr)
            self._set_pci_dev_info('func', MAX_FUNC, '%1x')
            self._set_pci_dev_info('domain', MAX_DOMAIN, '%04x')
            self._set_pci_dev_info('bus', MAX_BUS, '%02x')
            self._set_pci_dev_info('slot', MAX_SLOT, '%02x')
        except (KeyError, ValueError):
            raise exception.PciDeviceWrongAddressFormat(address=pci_addr)

    def match(self, phys_pci_addr):
        return ((self.domain, self.bus, self.slot, self.func)
                == (phys_pci_addr.domain, phys_pci_addr.bus, phys_pci_addr.slot,
                    phys_pci_addr.func))

    def __str__(self):
        return '%s:%s:%s.%s' % (self.domain, self.bus, self.slot, self.func)


class PciAddressGlobSpec(PciAddressSpec):
    """A glob address: ``*`` fields, and leading fields that may be left out
    (``:0a:00.`` means any domain, bus 0a, slot 00, any function)."""

    def __init__(self, pci_addr):
        self.domain = self.bus = self.slot = self.func = ANY
        dbs, _sep, func = pci_addr.partition('.')
        if func:
            self.func = func.strip()
            self._set_pci_dev_info('func', MAX_FUNC, '%01x')
        if dbs:
            given = dbs.split(':')
            if len(given) > 3:
                raise exception.PciDeviceWrongAddressFormat(address=pci_addr)
            # Missing leading fields, and empty ones, are wildcards.
            padded = [ANY] * (3 - len(given)) + given
            self.domain, self.bus, self.slot = [part.strip() or ANY for part in padded]
            self._set_pci_dev_info('domain', MAX_DOMAIN, '%04x')
            self._set_pci_dev_info('bus', MAX_BUS, '%02x')
            self._set_pci_dev_info('slot', MAX_SLOT, '%02x')

    def match(self, phys_pci_addr):
        return (self.domain in (ANY, phys_pci_addr.domain)
                and self.bus in (ANY, phys_pci_addr.bus)
                and self.slot in (ANY, phys_pci_addr.slot)
                and self.func in (ANY, phys_pci_addr.func))


class PciAddressRegexSpec(PciAddressSpec):
    """An address given as a dict of regular expressions; a missing field is ``.*``."""

    def __init__(self, pci_addr):
        try:
            self.domain = pci_addr.get('domain', REGEX_ANY)
            self.bus = pci_addr.get('bus', REGEX_ANY)
            self.slot = pci_addr.get('slot', REGEX_ANY)
            self.func = pci_addr.get('function', REGEX_ANY)
            self.domain_regex = re.compile(self.domain)
            self.bus_regex = re.compile(self.bus)
            self.slot_regex = re.compile(self.slot)
            self.func_regex = re.compile(self.func)
        except re.error:
            raise exception.PciDeviceWrongAddressFormat(address=pci_addr)

    def match(self, phys_pci_addr):
        # re.match: anchored at the start only, as Nova matches.
        return bool(self.domain_regex.match(phys_pci_addr.domain)
                    and self.bus_regex.match(phys_pci_addr.bus)
                    and self.slot_regex.match(phys_pci_addr.slot)
                    and self.func_regex.match(phys_pci_addr.func))


class WhitelistPciAddress:
    """The address part of a device_spec entry.

    When the entry names exactly one address and sysfs shows it is an SR-IOV PF (or the
    entry came from a PF's ``devname``), the entry also matches the PF's VFs, through
    their parent address.
    """

    def __init__(self, pci_addr, is_physical_function):
        self.is_physical_function = is_physical_function
        self._init_address_fields(pci_addr)

    def _check_physical_function(self):
        spec = self.pci_address_spec
        if spec.is_single_address():
            self.is_physical_function = utils.is_physical_function(
                spec.domain, spec.bus, spec.slot, spec.func)

    def _init_address_fields(self, pci_addr):
        if self.is_physical_function:
            self.pci_address_spec = PhysicalPciAddress(pci_addr)
            return
        if isinstance(pci_addr, str):
            self.pci_address_spec = PciAddressGlobSpec(pci_addr)
        elif isinstance(pci_addr, dict):
            self.pci_address_spec = PciAddressRegexSpec(pci_addr)
        else:
            raise exception.PciDeviceWrongAddressFormat(address=pci_addr)
        self._check_physical_function()

    def match(self, pci_addr, pci_phys_addr):
        """Match a device by its address, or a VF by its PF's (``pci_phys_addr``, None
        for a device without parent) when this entry is a PF's address."""
        if self.is_physical_function and pci_phys_addr:
            if self.pci_address_spec.match(PhysicalPciAddress(pci_phys_addr)):
                return True
        return self.pci_address_spec.match(PhysicalPciAddress(pci_addr))


class PciDeviceSpec(PciAddressSpec):
    """One parsed device_spec entry (a dict, which is consumed: it keeps only tags).

    ``report_in_placement`` stands for Nova's ``[pci] report_in_placement``; minisched
    has no Placement, so it is False and ``one_time_use = true`` is rejected.
    """

    def __init__(self, dev_spec, report_in_placement=False):
        # The entry as written, for error messages.
        self.dev_spec_conf = copy.deepcopy(dev_spec)
        # _init_dev_details pops the matching keys; what remains are the tags.
        self.tags = dev_spec
        self._report_in_placement = report_in_placement
        self._init_dev_details()

    def _address_obj(self):
        if not self.dev_name:
            return self.address
        # A devname is resolved on every use: the interface may come and go.
        address, is_pf = utils.get_function_by_ifname(self.dev_name)
        if not address:
            return None
        return WhitelistPciAddress(address, is_pf)

    def _init_dev_details(self):
        self.vendor_id = self.tags.pop('vendor_id', ANY)
        self.product_id = self.tags.pop('product_id', ANY)
        self.dev_name = self.tags.pop('devname', None)
        self.address = None
        address = self.tags.pop('address', None)

        self.vendor_id = self.vendor_id.strip()
        self._set_pci_dev_info('vendor_id', MAX_VENDOR_ID, '%04x')
        self._set_pci_dev_info('product_id', MAX_PRODUCT_ID, '%04x')

        if address and self.dev_name:
            raise exception.PciDeviceInvalidDeviceName()
        if not self.dev_name:
            self.address = WhitelistPciAddress(address or '*:*:*.*', False)

        address_obj = self._address_obj()
        self._remote_managed = strutils.bool_from_string(self.tags.get(PCI_REMOTE_MANAGED_TAG))
        for tag in _BOOLEAN_TAGS:
            self._normalize_device_spec_tag(tag)

        if self.tags.get('one_time_use') == 'true' and not self._report_in_placement:
            raise exception.PciConfigInvalidSpec(
                reason='one_time_use=true requires pci.report_in_placement to be enabled')
        if self._remote_managed:
            self._check_remote_managed(address_obj)

    def _check_remote_managed(self, address_obj):
        """A remote-managed entry must name present VFs, never a PF."""
        if address_obj is None:
            # A devname the host does not have.
            raise exception.PciDeviceRemoteManagedNotPresent()
        if not address_obj.is_physical_function:
            return
        # The entry names a PF's address: its IDs must be those of the PF's VFs.
        pf_addr = str(address_obj.pci_address_spec)
        vf_product_id = utils.get_vf_product_id_by_pf_addr(pf_addr)
        pf_vendor_id, pf_product_id = utils.get_pci_ids_by_pci_addr(pf_addr)
        vendor_ok = self.vendor_id in (pf_vendor_id, ANY)
        if self.product_id == vf_product_id and vendor_ok:
            return
        if self.product_id in (pf_product_id, ANY) and vendor_ok:
            raise exception.PciDeviceInvalidPFRemoteManaged(address=pf_addr)
        raise exception.PciConfigInvalidSpec(
            reason='the specified VF vendor ID %s and product ID %s do not match the '
                   'expected VF IDs based on the corresponding PF identified by PCI '
                   'address %s' % (self.vendor_id, self.product_id, pf_addr))

    def _normalize_device_spec_tag(self, tag):
        if self.tags.get(tag) is None:
            return
        try:
            value = strutils.bool_from_string(self.tags[tag], strict=True)
        except ValueError as exc:
            raise exception.PciConfigInvalidSpec(reason="Cannot parse tag '%s': %s"
                                                 % (tag, exc))
        self.tags[tag] = 'true' if value else 'false'

    def _ensure_remote_managed_dev_vpd_serial(self, dev_dict):
        # A remote-managed device is only usable with a card serial number in its VPD:
        # the networking backend identifies the card by it.
        if not self._remote_managed:
            return True
        capabilities = dev_dict.get('capabilities', {})
        return bool(capabilities.get('vpd', {}).get('card_serial_number'))

    def match(self, dev_dict):
        """True when this entry admits the device described by ``dev_dict`` (the
        hypervisor's form: ``vendor_id``, ``product_id``, ``address``, ``parent_addr``,
        ``capabilities``)."""
        address_obj = self._address_obj()
        if not address_obj:
            return False
        # Every check runs (no short cut), as in Nova: an address that does not parse
        # raises even when the IDs already differ.
        checks = [self.vendor_id in (ANY, dev_dict['vendor_id']),
                  self.product_id in (ANY, dev_dict['product_id']),
                  address_obj.match(dev_dict['address'], dev_dict.get('parent_addr')),
                  self._ensure_remote_managed_dev_vpd_serial(dev_dict)]
        return all(checks)

    def match_pci_obj(self, pci_obj):
        """``match`` for a PciDevice object."""
        return self.match({
            'vendor_id': pci_obj.vendor_id,
            'product_id': pci_obj.product_id,
            'address': pci_obj.address,
            'parent_addr': pci_obj.parent_addr,
            'capabilities': {'vpd': {'card_serial_number': pci_obj.card_serial_number}},
        })

    def get_tags(self):
        return self.tags

    def enhanced_pci_device_with_spec_tags(self, dev):
        """Copy the ``managed`` and ``live_migratable`` tags onto the device dict ``dev``:
        the hypervisor cannot report them."""
        for tag in _DEVICE_TAGS:
            if self.tags.get(tag) is not None:
                dev[tag] = self.tags[tag]
