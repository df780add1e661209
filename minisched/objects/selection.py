"""A scheduling decision for one instance: the host, its node, its cell and the limits."""
from oslo_serialization import jsonutils

from minisched.objects import base
from minisched.objects import fields
from minisched.objects import request_spec


@base.MinischedObjectRegistry.register
class Selection(base.MinischedObject):
    """Not persisted. Version 1.1 added ``availability_zone``."""

    VERSION = '1.1'

    fields = {
        'compute_node_uuid': fields.UUIDField(),
        'service_host': fields.StringField(),
        'nodename': fields.StringField(),
        'cell_uuid': fields.UUIDField(),
        'limits': fields.ObjectField('SchedulerLimits', nullable=True),
        'allocation_request': fields.StringField(nullable=True),
        'allocation_request_version': fields.StringField(nullable=True),
        'availability_zone': fields.StringField(nullable=True),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        from oslo_utils import versionutils
        if versionutils.convert_version_to_tuple(target_version) < (1, 1):
            primitive.pop('availability_zone', None)

    @classmethod
    def from_host_state(cls, host_state, allocation_request=None,
                        allocation_request_version=None, limits=None):
        """Build a Selection from a HostState (float limits are truncated to int), with
        ``limits`` (a dict) in place of ``host_state.limits`` when given."""
        limits = request_spec.SchedulerLimits.from_dict(
            host_state.limits if limits is None else limits)
        return cls._new(compute_node_uuid=host_state.uuid, service_host=host_state.host,
                        nodename=host_state.nodename, cell_uuid=host_state.cell_uuid,
                        limits=limits, allocation_request=jsonutils.dumps(allocation_request),
                        allocation_request_version=allocation_request_version,
                        availability_zone=None)

    def to_dict(self):
        limits = self.limits.to_dict() if self.limits is not None else {}
        return {'host': self.service_host, 'nodename': self.nodename, 'limits': limits}
