"""PCI aliases and the PCI requests a flavor's ``pci_passthrough:alias`` becomes.

``[pci] alias`` entries are JSON objects naming a device requirement; entries sharing a
name are alternatives (a device matching any one of them will do) and must agree on
``device_type`` and ``numa_policy``. A flavor asks for ``<name>:<count>[,...]`` and each
item becomes one ``InstancePCIRequest`` of ``count`` devices whose ``spec`` lists the
alias's alternatives.

Nova reads ``CONF.pci.alias`` itself; here the caller passes its ``conf``. minisched has
no Placement, so Nova's ``[filter_scheduler] pci_in_placement`` is taken as False: every
alias entry needs ``vendor_id`` and ``product_id``, and several entries per name are fine.
"""
import functools
import re

from oslo_serialization import jsonutils
from oslo_utils import strutils
from oslo_utils import uuidutils

from minisched import exception
from minisched.objects import fields as obj_fields
from minisched.objects import instance_pci_requests as pci_requests_obj
from minisched.pci import utils

PCI_NET_TAG = 'physical_network'
PCI_TRUSTED_TAG = 'trusted'
PCI_DEVICE_TYPE_TAG = 'dev_type'
PCI_REMOTE_MANAGED_TAG = 'remote_managed'

#: The flavor extra spec naming the aliases a flavor wants.
ALIAS_EXTRA_SPEC = 'pci_passthrough:alias'

# The alias entry schema (Nova's, checked here without the jsonschema library): the
# allowed keys, and for each the choices or pattern its string value must fit. vDPA
# devices cannot be requested through an alias, hence not among the device types.
_ALIAS_KEYS = {
    'name': None,
    'capability_type': ['pci'],
    'product_id': utils.PCI_VENDOR_PATTERN,
    'vendor_id': utils.PCI_VENDOR_PATTERN,
    'device_type': [obj_fields.PciDeviceType.STANDARD, obj_fields.PciDeviceType.SRIOV_PF,
                    obj_fields.PciDeviceType.SRIOV_VF],
    'numa_policy': list(obj_fields.PCINUMAAffinityPolicy.ALL),
    'resource_class': None,
    'traits': None,
    'live_migratable': None,
}
_NAME_MAX_LENGTH = 256


def _property_error(key, value):
    rule = _ALIAS_KEYS[key]
    if not isinstance(value, str):
        return '%r is not of type %r' % (value, 'string')
    if key == 'name' and not value:
        return '%r should be non-empty' % value
    if key == 'name' and len(value) > _NAME_MAX_LENGTH:
        return '%r is too long' % value
    if isinstance(rule, list) and value not in rule:
        return '%r is not one of %r' % (value, rule)
    if isinstance(rule, str) and not re.search(rule, value):
        return '%r does not match %r' % (value, rule)
    return None


def _schema_error(entry):
    """How ``entry`` breaks the alias schema, in the words and with the choice of
    jsonschema's ``validate`` (its best match): an error about the whole entry first,
    else the one about the property whose name sorts last; None when it fits."""
    if not isinstance(entry, dict):
        return '%r is not of type %r' % (entry, 'object')
    extra = sorted((key for key in entry if key not in _ALIAS_KEYS), key=str)
    if extra:
        return 'Additional properties are not allowed (%s %s unexpected)' % (
            ', '.join(repr(key) for key in extra), 'was' if len(extra) == 1 else 'were')
    if 'name' not in entry:
        return "'name' is a required property"
    errors = {key: _property_error(key, entry[key]) for key in entry}
    bad = sorted(key for key, error in errors.items() if error)
    return errors[bad[-1]] if bad else None


def _parse_alias_entry(jsonspec):
    """``(name, numa_policy, spec)`` of one alias entry; the spec keeps the matching keys,
    ``device_type`` renamed to the pools' ``dev_type`` and ``live_migratable`` normalised
    to 'true'/'false'."""
    spec = jsonutils.loads(jsonspec)
    error = _schema_error(spec)
    if error:
        raise exception.PciInvalidAlias(reason=error)
    name = spec.pop('name').strip()
    numa_policy = spec.pop('numa_policy', None) or obj_fields.PCINUMAAffinityPolicy.LEGACY
    dev_type = spec.pop('device_type', None)
    if dev_type:
        spec['dev_type'] = dev_type
    live_migratable = spec.pop('live_migratable', None)
    if live_migratable is not None:
        # strict: anything but a boolean-like word is an error (a ValueError).
        spec['live_migratable'] = (
            'true' if strutils.bool_from_string(live_migratable, strict=True) else 'false')
    return name, numa_policy, spec


def _merge_alias(aliases, name, numa_policy, spec):
    if name not in aliases:
        aliases[name] = (numa_policy, [spec])
        return
    if aliases[name][0] != numa_policy:
        raise exception.PciInvalidAlias(reason="NUMA policy mismatch for alias '%s'" % name)
    # Alternatives must both state their device type: Nova reads the key of each, and a
    # missing one fails the whole option with the key's name as the reason.
    first = aliases[name][1][0]
    if 'dev_type' not in first or 'dev_type' not in spec:
        raise exception.PciInvalidAlias(reason="'dev_type'")
    if first['dev_type'] != spec['dev_type']:
        raise exception.PciInvalidAlias(reason="Device type mismatch for alias '%s'" % name)
    aliases[name][1].append(spec)


def _validate_aliases(aliases, pci_in_placement=False):
    """Check the rules that span entries; each failure names every alias it concerns."""
    if pci_in_placement:
        multi = [name for name, (_policy, specs) in aliases.items() if len(specs) > 1]
        if multi:
            raise exception.PciInvalidAlias(
                'The PCI alias(es) %s have multiple specs but '
                '[filter_scheduler]pci_in_placement is True. The PCI in Placement feature '
                'only supports one spec per alias. You can assign the same resource_class '
                'to multiple [pci]device_spec matchers to allow using different devices '
                'for the same alias.' % ','.join(multi))
    missing = set()
    for name, (_policy, specs) in aliases.items():
        for spec in specs:
            has_ids = 'vendor_id' in spec and 'product_id' in spec
            if not has_ids and not (pci_in_placement and 'resource_class' in spec):
                missing.add(name)
    if missing:
        needed = ('vendor_id and product_id fields set or resource_class field set'
                  if pci_in_placement else 'vendor_id and product_id fields set')
        raise exception.PciInvalidAlias('The PCI alias(es) %s does not have %s.'
                                        % (','.join(sorted(missing)), needed))


@functools.lru_cache(maxsize=16)
def _parse_aliases(jaliases):
    aliases = {}
    try:
        for jsonspec in jaliases:
            _merge_alias(aliases, *_parse_alias_entry(jsonspec))
    except exception.PciInvalidAlias:
        raise
    except Exception as exc:  # undecodable JSON, a bad live_migratable word, ...
        raise exception.PciInvalidAlias(reason=str(exc))
    _validate_aliases(aliases)
    return aliases


def get_alias_from_config(conf):
    """The aliases defined by ``conf.pci.alias``.

    :param conf: the service's ConfigOpts (only ``[pci] alias`` is read).
    :returns: ``{name: (numa_policy, [spec, ...])}``. Parsed once per distinct option
        value: treat the result as read-only.
    :raises PciInvalidAlias: an entry is invalid, or entries of one name disagree on
        ``numa_policy`` or ``device_type``.
    """
    return _parse_aliases(tuple(conf.pci.alias))


def _translate_alias_to_requests(alias_spec, affinity_policy=None, *, conf):
    """One InstancePCIRequest per ``name:count`` item of the extra spec's value."""
    pci_aliases = get_alias_from_config(conf)
    requests = []
    # A malformed item (no ':' or a non-integer count) raises ValueError, as in Nova,
    # whose API validates the extra spec's syntax beforehand.
    for name, count in [item.split(':') for item in alias_spec.split(',')]:
        name = name.strip()
        if name not in pci_aliases:
            raise exception.PciRequestAliasNotDefined(alias=name)
        numa_policy, specs = pci_aliases[name]
        requests.append(pci_requests_obj.InstancePCIRequest(
            count=int(count), spec=specs, alias_name=name,
            numa_policy=affinity_policy or numa_policy,
            request_id=uuidutils.generate_uuid()))
    return requests


def _extra_specs(flavor):
    if 'extra_specs' not in flavor:
        return {}
    return flavor['extra_specs'] if isinstance(flavor, dict) else flavor.extra_specs


def get_pci_requests_from_flavor(flavor, affinity_policy=None, *, conf):
    """The PCI requests of a flavor's ``pci_passthrough:alias`` extra spec.

    :param flavor: a Flavor object or a dict with ``extra_specs``.
    :param affinity_policy: a NUMA affinity policy overriding the aliases' own (the
        flavor's or image's ``pci_numa_affinity_policy``), or None.
    :param conf: the service's ConfigOpts, whose ``[pci] alias`` defines the names.
    :returns: an InstancePCIRequests, empty when the flavor asks for no device.
    :raises PciRequestAliasNotDefined: the flavor names an undefined alias.
    :raises PciInvalidAlias: ``[pci] alias`` is invalid.
    """
    requests = []
    extra_specs = _extra_specs(flavor)
    if ALIAS_EXTRA_SPEC in extra_specs:
        requests = _translate_alias_to_requests(
            extra_specs[ALIAS_EXTRA_SPEC], affinity_policy=affinity_policy, conf=conf)
    return pci_requests_obj.InstancePCIRequests(requests=requests)
