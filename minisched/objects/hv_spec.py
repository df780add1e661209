"""One (architecture, hypervisor type, VM mode) triple a compute node supports."""
from minisched.objects import base
from minisched.objects import fields


@base.MinischedObjectRegistry.register
class HVSpec(base.MinischedObject):
    VERSION = '1.2'

    fields = {
        'arch': fields.ArchitectureField(),
        'hv_type': fields.HVTypeField(),
        'vm_mode': fields.VMModeField(),
    }

    @classmethod
    def from_list(cls, data):
        return cls(arch=fields.Architecture.canonicalize(data[0]),
                   hv_type=fields.HVType.canonicalize(data[1]),
                   vm_mode=fields.VMMode.canonicalize(data[2]))

    def to_list(self):
        return [self.arch, self.hv_type, self.vm_mode]
