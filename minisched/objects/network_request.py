"""The networks a build asks for (Nova's NetworkRequest(List)).

minisched plugs no ports: a request is carried from the API through the conductor to the
compute as Nova's client sends it, so that nothing of it is lost on the way.
"""
from minisched.objects import base
from minisched.objects import fields

#: ``network_id`` values that mean no network at all, or one allocated automatically.
NETWORK_ID_NONE = 'none'
NETWORK_ID_AUTO = 'auto'


@base.MinischedObjectRegistry.register
class NetworkRequest(base.MinischedObject):
    """One requested network, port or fixed address.

    1.1 ``pci_request_id``; 1.2 ``tag``; 1.3 ``arq_uuid`` and ``device_profile`` (an
    accelerator's port).
    """

    VERSION = '1.3'

    fields = {
        'network_id': fields.StringField(nullable=True),
        'address': fields.IPAddressField(nullable=True),
        'port_id': fields.UUIDField(nullable=True),
        'pci_request_id': fields.UUIDField(nullable=True),
        'tag': fields.StringField(nullable=True),
        'arq_uuid': fields.UUIDField(nullable=True),
        'device_profile': fields.StringField(nullable=True),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = tuple(int(part) for part in target_version.split('.'))
        for added_in, names in (((1, 3), ('arq_uuid', 'device_profile')), ((1, 2), ('tag',)),
                                ((1, 1), ('pci_request_id',))):
            if target < added_in:
                for name in names:
                    primitive.pop(name, None)

    def obj_load_attr(self, attrname):
        setattr(self, attrname, None)

    def to_tuple(self):
        """``(network_id, address, port_id, pci_request_id, arq_uuid, device_profile)``."""
        address = str(self.address) if self.address is not None else None
        return (self.network_id, address, self.port_id, self.pci_request_id, self.arq_uuid,
                self.device_profile)

    @classmethod
    def from_tuple(cls, net_tuple):
        network_id, address, port_id, pci_request_id, arq_uuid, device_profile = net_tuple
        return cls(network_id=network_id, address=address, port_id=port_id,
                   pci_request_id=pci_request_id, arq_uuid=arq_uuid,
                   device_profile=device_profile)

    @property
    def auto_allocate(self):
        return self.network_id == NETWORK_ID_AUTO

    @property
    def no_allocate(self):
        return self.network_id == NETWORK_ID_NONE


@base.MinischedObjectRegistry.register
class NetworkRequestList(base.ObjectListBase, base.MinischedObject):
    VERSION = '1.1'

    fields = {'objects': fields.ListOfObjectsField('NetworkRequest')}

    def as_tuples(self):
        return [request.to_tuple() for request in self.objects]

    @classmethod
    def from_tuples(cls, net_tuples):
        return cls(objects=[NetworkRequest.from_tuple(t) for t in net_tuples])

    @property
    def auto_allocate(self):
        return len(self.objects) == 1 and self.objects[0].auto_allocate

    @property
    def no_allocate(self):
        return len(self.objects) == 1 and self.objects[0].no_allocate
