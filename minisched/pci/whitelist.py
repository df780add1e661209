"""The parsed ``[pci] device_spec`` option: the devices a compute may assign to instances.

A device is assignable when one of the entries matches it, and it then carries that
(first matching) entry's tags. With no entries nothing is assignable.
"""
from oslo_serialization import jsonutils

from minisched import exception
from minisched.pci import devspec


class Whitelist:
    """The assignable-device filter built from the values of ``[pci] device_spec``.

    :param whitelist_spec: the option's value: a list of JSON strings, each an entry
        object or a list of them (None or empty: nothing is assignable).
    :param report_in_placement: Nova's ``[pci] report_in_placement``; always False in
        minisched (no Placement).
    :raises PciConfigInvalidSpec: an entry is not JSON, not an object, or invalid.
    """

    def __init__(self, whitelist_spec=None, report_in_placement=False):
        self.specs = (self._parse_white_list_from_config(whitelist_spec, report_in_placement)
                      if whitelist_spec else [])

    @staticmethod
    def _parse_white_list_from_config(whitelists, report_in_placement=False):
        specs = []
        for jsonspec in whitelists:
            try:
                entries = jsonutils.loads(jsonspec)
            except ValueError:
                raise exception.PciConfigInvalidSpec(reason="Invalid entry: '%s'" % jsonspec)
            if isinstance(entries, dict):
                entries = [entries]
            elif not isinstance(entries, list):
                raise exception.PciConfigInvalidSpec(
                    reason="Invalid entry: '%s'; Expecting list or dict" % jsonspec)
            for entry in entries:
                if not isinstance(entry, dict):
                    raise exception.PciConfigInvalidSpec(
                        reason="Invalid entry: '%s'; Expecting dict" % entry)
                specs.append(devspec.PciDeviceSpec(entry, report_in_placement))
        return specs

    def device_assignable(self, dev):
        """The first entry admitting the device dict ``dev`` (the hypervisor's form), or
        None."""
        return next((spec for spec in self.specs if spec.match(dev)), None)

    def get_devspec(self, pci_dev):
        """The first entry admitting the PciDevice ``pci_dev``, or None."""
        return next((spec for spec in self.specs if spec.match_pci_obj(pci_dev)), None)
