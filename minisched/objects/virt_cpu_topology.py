"""A guest's CPU topology: sockets, cores per socket and threads per core (Nova's
VirtCPUTopology), as ``InstanceNUMACell.cpu_topology`` carries it."""
from minisched.objects import base
from minisched.objects import fields


@base.MinischedObjectRegistry.register
class VirtCPUTopology(base.MinischedObject):
    VERSION = '1.0'

    fields = {
        'sockets': fields.IntegerField(nullable=True, default=1),
        'cores': fields.IntegerField(nullable=True, default=1),
        'threads': fields.IntegerField(nullable=True, default=1),
    }

    @classmethod
    def from_dict(cls, data):
        """The topology a ``{'sockets', 'cores', 'threads'}`` dict describes (missing: None)."""
        return cls(sockets=data.get('sockets'), cores=data.get('cores'),
                   threads=data.get('threads'))

    def to_dict(self):
        return {'sockets': self.sockets, 'cores': self.cores, 'threads': self.threads}
