"""[pci] options: which host PCI devices may be given to instances, and the aliases flavors
use to ask for them."""
from oslo_config import cfg

GROUP = cfg.OptGroup('pci', title='PCI passthrough', help="""
PCI passthrough: the devices a compute offers (``device_spec``) and the names
flavors request them by (``alias``).""")

OPTS = [
    cfg.MultiStrOpt('alias', default=[], deprecated_name='pci_alias',
                    deprecated_group='DEFAULT', help="""
A named PCI device requirement that flavors can ask for.

A flavor requests devices with the extra spec
``pci_passthrough:alias = <name>:<count>[,<name>:<count>...]``; each name
must be defined here, where the flavor's request is turned into PCI requests
(the API and conductor side), and on the computes for move operations.
Repeat the option to define several aliases. Entries with the same name are
alternatives (any one of them matches); they must then agree on
``device_type`` and ``numa_policy``.

Each value is a JSON object with these keys:

``name`` (required)
  The alias name, 1 to 256 characters.
``vendor_id``, ``product_id`` (both required)
  The device's PCI vendor and product IDs, four hexadecimal digits each.
``device_type``
  ``type-PCI`` (a device without SR-IOV), ``type-PF`` (an SR-IOV physical
  function, taken whole) or ``type-VF`` (an SR-IOV virtual function). Omit
  it to match any type except PFs and vDPA devices.
``numa_policy``
  How close to the instance's NUMA nodes the devices must be, when the
  instance has a NUMA topology: ``required`` (on one of its nodes),
  ``legacy`` (the default: on one of its nodes, or on no node at all if the
  device reports none), ``preferred`` (its nodes first, else anywhere) or
  ``socket`` (on a node of the same socket). The flavor's
  ``hw:pci_numa_affinity_policy`` overrides it.
``live_migratable``
  ``yes`` to require devices tagged live-migratable in ``device_spec``,
  ``no`` to require devices tagged not live-migratable. Omitted: either.
``resource_class``, ``traits``, ``capability_type``
  Accepted for compatibility with Nova's alias syntax. minisched has no
  Placement service, so resource classes and traits do not restrict the
  choice of device.

An invalid entry makes every request for PCI devices fail with an "Invalid
PCI alias definition" error.

Example::

  alias = {"name": "QuickAssist", "vendor_id": "8086",
           "product_id": "0443", "device_type": "type-PCI",
           "numa_policy": "required"}

Related options: ``[pci] device_spec``"""),
    cfg.MultiStrOpt('device_spec', default=[], deprecated_opts=[
        cfg.DeprecatedOpt('passthrough_whitelist', group='pci'),
        cfg.DeprecatedOpt('pci_passthrough_whitelist', group='DEFAULT')], help="""
The host PCI devices this compute may give to instances.

A device the hypervisor reports is offered only if one of these entries
matches it; with no entry (the default) no device is offered. Repeat the
option for several entries. Each value is a JSON object, or a JSON list of
objects, with any of these keys (a missing key matches anything):

``vendor_id``, ``product_id``
  PCI vendor and product IDs in hexadecimal (at most ffff).
``address``
  The device's PCI address ``<domain>:<bus>:<slot>.<function>``, either as
  a glob (``*`` or an omitted leading part matches anything, e.g.
  ``*:0a:00.*`` or ``:0a:00.``) or as an object of regular expressions
  with the keys ``domain``, ``bus``, ``slot`` and ``function``. Fields may
  not exceed ffff:ff:1f.7. A full address that sysfs shows to be an
  SR-IOV PF of this host also matches the PF's VFs.
``devname``
  A network interface name, looked up on the host; cannot be combined
  with ``address``. A name the host does not have matches nothing.
Any other key is a tag
  Copied onto the matching devices and matched against the PCI requests'
  specs (case-insensitively), e.g. ``physical_network``, ``trusted``.
  ``remote_managed`` (true/false) marks VFs managed by a SmartNIC DPU;
  such devices go only to requests asking for them. ``managed`` and
  ``live_migratable`` (yes/no) are normalised to ``true``/``false``.
  ``one_time_use = true`` needs Placement and is rejected.
  ``resource_class`` and ``traits`` are accepted and ignored (no
  Placement).

An invalid entry is an error as soon as the compute reads this option.

Examples::

  device_spec = {"vendor_id": "8086", "product_id": "154d"}
  device_spec = {"address": "*:0a:00.*", "physical_network": "physnet1"}
  device_spec = [{"vendor_id": "10de", "product_id": "1eb8"},
                 {"vendor_id": "10de", "product_id": "1df6"}]

Related options: ``[pci] alias``"""),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return {GROUP: OPTS}
