"""PCI helpers: matching a pool or device against request specs, PCI address parsing, and
the few sysfs look-ups a ``devname`` or PF address in ``[pci] device_spec`` needs."""
import logging
import os
import re

from minisched import exception

LOG = logging.getLogger(__name__)

#: Four hex digits: the form of vendor and product IDs (aliases are validated with it).
PCI_VENDOR_PATTERN = r'^([\da-fA-F]{4})$'
_PCI_ADDRESS_REGEX = re.compile(r'^([\da-fA-F]{4}):([\da-fA-F]{2}):([\da-fA-F]{2}).([0-7]{1})$')
_SYSFS_PCI_DEVICES = '/sys/bus/pci/devices'
_SRIOV_TOTALVFS = 'sriov_totalvfs'


def _lower(value):
    return value.lower() if isinstance(value, str) else value


def _spec_matches(pci_dev, spec):
    for key, wanted in spec.items():
        have = pci_dev.get(key)
        if isinstance(wanted, list) and isinstance(have, list):
            # A list (capabilities) matches when the device has every wanted item.
            if any(item not in have for item in wanted):
                return False
        # Strings compare case-insensitively: tags come both from operators' device_spec
        # and from users' port binding profiles.
        elif _lower(have) != _lower(wanted):
            return False
    return True


def pci_device_prop_match(pci_dev, specs):
    """True when the dict ``pci_dev`` (a pool or device) matches any of ``specs``.

    Every key of a spec must be present in ``pci_dev`` with the same value (strings
    compared case-insensitively; a list value needs all its items in the device's list).
    A missing key reads as None, so ``{'numa_node': None}`` matches a device with none.
    """
    return any(_spec_matches(pci_dev, spec) for spec in specs)


def parse_address(address):
    """``(domain, bus, slot, function)`` of a full PCI address; raises
    PciDeviceWrongAddressFormat otherwise."""
    match = _PCI_ADDRESS_REGEX.match(address)
    if not match:
        raise exception.PciDeviceWrongAddressFormat(address=address)
    return match.groups()


def get_pci_address_fields(pci_addr):
    """Split ``<domain>:<bus>:<slot>.<function>`` without validating the parts (a wrong
    number of ``:`` raises ValueError)."""
    dbs, _sep, func = pci_addr.partition('.')
    domain, bus, slot = dbs.split(':')
    return domain, bus, slot, func


def get_pci_address(domain, bus, slot, func):
    return '%s:%s:%s.%s' % (domain, bus, slot, func)


def _read_int(path):
    with open(path) as f:
        return int(f.read())


def get_function_by_ifname(ifname):
    """``(pci_address, is_pf)`` of the network interface ``ifname``; ``(None, False)``
    when the host has no such interface."""
    dev_path = '/sys/class/net/%s/device' % ifname
    if not os.path.isdir(dev_path):
        return None, False
    address = os.readlink(dev_path).strip('./')
    try:
        return address, _read_int(os.path.join(dev_path, _SRIOV_TOTALVFS)) > 0
    except (IOError, ValueError):
        return address, False


def is_physical_function(domain, bus, slot, function):
    """True when sysfs shows the device at this address can have VFs."""
    dev_path = '%s/%s:%s:%s.%s/' % (_SYSFS_PCI_DEVICES, domain, bus, slot, function)
    if not os.path.isdir(dev_path):
        return False
    try:
        return _read_int(dev_path + _SRIOV_TOTALVFS) > 0
    except (IOError, ValueError):
        return False


def get_vf_product_id_by_pf_addr(pci_addr):
    """The product ID the VFs of the PF at ``pci_addr`` have (from sysfs)."""
    path = '%s/%s/sriov_vf_device' % (_SYSFS_PCI_DEVICES, pci_addr)
    try:
        with open(path) as f:
            vf_product_id = f.readline().strip()
    except IOError as exc:
        LOG.warning('Cannot read the VF product ID of PF %s: %s', pci_addr, exc)
        raise exception.PciDeviceNotFoundById(id=pci_addr)
    if not vf_product_id:
        raise ValueError('sriov_vf_device file does not contain a VF product ID')
    return vf_product_id


def get_pci_ids_by_pci_addr(pci_addr):
    """``(vendor_id, product_id)`` of the device at ``pci_addr`` (from sysfs)."""
    ids = []
    for name in ('vendor', 'product'):
        try:
            with open(os.path.join(_SYSFS_PCI_DEVICES, pci_addr, name)) as f:
                value = f.readline()
        except IOError as exc:
            LOG.warning('Cannot read the %s ID of PCI device %s: %s', name, pci_addr, exc)
            raise exception.PciDeviceNotFoundById(id=pci_addr)
        if not value:
            raise ValueError('%s file does not contain a valid value' % name)
        ids.append(value.strip().replace('0x', ''))
    return tuple(ids)
