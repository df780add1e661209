"""What a set of networks needs from a host's NICs: the physnets they use, and whether any
is tunneled (Nova's NetworkMetadata).

A guest's networks are summed up this way in ``RequestSpec.network_metadata``; a host NUMA
cell's ``network_metadata`` says which of them have their NICs local to that cell. The NUMA
fitting matches the two (``minisched.virt.hardware``).
"""
from minisched.objects import base
from minisched.objects import fields


@base.MinischedObjectRegistry.register
class NetworkMetadata(base.MinischedObject):
    """Physnets (L2 networks, by their ``provider:physical_network``) and whether tunneled
    (L3, all sharing one logical NIC) networks are involved."""

    VERSION = '1.0'

    fields = {
        'physnets': fields.SetOfStringsField(),
        'tunneled': fields.BooleanField(),
    }
