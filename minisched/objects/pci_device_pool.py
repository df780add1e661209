"""PCI device pools: the per-host summary of free PCI devices that the scheduler sees.

A compute groups its assignable devices into pools of identical devices (same vendor,
product, NUMA node and tags) and reports only their counts; the node record keeps the
list in its ``pci_stats`` column as the JSON of the ``PciDevicePoolList`` primitive.
"""
import copy

from oslo_serialization import jsonutils
from oslo_utils import versionutils

from minisched import objects
from minisched.objects import base
from minisched.objects import fields

__all__ = ['PciDevicePool', 'PciDevicePoolList', 'from_pci_stats']

#: The pool keys that are fields; every other key of a pool dict is a tag.
_FIELD_KEYS = ('vendor_id', 'product_id', 'numa_node', 'count')


@base.MinischedObjectRegistry.register
class PciDevicePool(base.MinischedObject):
    """One pool of interchangeable devices and how many of them are free.

    Version history (Nova's): 1.0 initial, 1.1 ``numa_node``.
    """

    VERSION = '1.1'

    fields = {
        'product_id': fields.StringField(),
        'vendor_id': fields.StringField(),
        'numa_node': fields.IntegerField(nullable=True),
        'tags': fields.DictOfNullableStringsField(),
        'count': fields.IntegerField(),
    }

    def obj_make_compatible(self, primitive, target_version):
        if versionutils.convert_version_to_tuple(target_version) < (1, 1):
            primitive.pop('numa_node', None)

    @classmethod
    def from_dict(cls, value):
        """Build a pool from the flat dict form (fields and tags side by side), the form
        pools had before this object existed and still have inside ``PciDeviceStats``."""
        rest = copy.copy(value)
        pool = cls()
        pool.vendor_id = rest.pop('vendor_id')
        pool.product_id = rest.pop('product_id')
        pool.numa_node = rest.pop('numa_node', None)
        pool.count = rest.pop('count')
        pool.tags = rest
        return pool

    def to_dict(self):
        """The flat dict form: the set fields, with the tags merged in at the top level."""
        flat = base.obj_to_primitive(self)
        flat.update(flat.pop('tags', {}))
        return flat


@base.MinischedObjectRegistry.register
class PciDevicePoolList(base.ObjectListBase, base.MinischedObject):
    """Version history (Nova's): 1.0 initial, 1.1 holds PciDevicePool 1.1."""

    VERSION = '1.1'

    fields = {'objects': fields.ListOfObjectsField('PciDevicePool')}


def from_pci_stats(pci_stats):
    """A ``PciDevicePoolList`` from what a node record holds in ``pci_stats``.

    Accepts the JSON text or the decoded value of: the list's object primitive (today's
    form), or, as older computes wrote it, one flat pool dict or a list of them. Anything
    empty or undecodable gives an empty list.
    """
    if isinstance(pci_stats, str):
        try:
            pci_stats = jsonutils.loads(pci_stats)
        except (ValueError, TypeError):
            pci_stats = None
    if not pci_stats:
        return objects.PciDevicePoolList(objects=[])
    if 'minisched_object.namespace' in pci_stats:
        return objects.PciDevicePoolList.obj_from_primitive(pci_stats)
    if not isinstance(pci_stats, list):
        pci_stats = [pci_stats]
    return objects.PciDevicePoolList(
        objects=[objects.PciDevicePool.from_dict(stat) for stat in pci_stats])
