"""What PCI devices an instance asked for: the requests a flavor's PCI aliases became.

An instance row keeps its requests as the JSON of their primitive; Nova keeps the list
``InstancePCIRequests.to_json()`` writes in ``instance_extra.pci_requests``, which
``obj_from_db`` reads back.
"""
from oslo_serialization import jsonutils
from oslo_utils import versionutils

from minisched.db import lazy
from minisched import exception
from minisched.objects import base
from minisched.objects import fields

db = lazy.module('minisched.db.main.api')

__all__ = ['InstancePCIRequest', 'InstancePCIRequests']


@base.MinischedObjectRegistry.register
class InstancePCIRequest(base.MinischedObject):
    """``count`` devices matching any one of the dicts in ``spec``.

    Version history (Nova's): 1.1 ``request_id``, 1.2 ``numa_policy``, 1.3
    ``requester_id``, 1.4 ``socket`` among the ``numa_policy`` values.
    """

    VERSION = '1.4'

    #: Where a request came from (``source``): a flavor alias, or a Neutron SR-IOV port.
    FLAVOR_ALIAS = 0
    NEUTRON_PORT = 1

    fields = {
        'count': fields.IntegerField(),
        'spec': fields.ListOfDictOfNullableStringsField(),
        'alias_name': fields.StringField(nullable=True),
        # Deprecated in Nova, kept for its object version.
        'is_new': fields.BooleanField(default=False),
        'request_id': fields.UUIDField(nullable=True),
        'requester_id': fields.StringField(nullable=True),
        'numa_policy': fields.PCINUMAAffinityPolicyField(nullable=True),
    }

    @property
    def source(self):
        # A port's request has no alias name; a flavor's always has one.
        if self.alias_name is None:
            return InstancePCIRequest.NEUTRON_PORT
        return InstancePCIRequest.FLAVOR_ALIAS

    def obj_load_attr(self, attr):
        # An unset field reads as None, as in Nova (older requests lack the newer fields).
        setattr(self, attr, None)

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = versionutils.convert_version_to_tuple(target_version)
        for added_in, name in (((1, 3), 'requester_id'), ((1, 2), 'numa_policy'),
                               ((1, 1), 'request_id')):
            if target < added_in:
                primitive.pop(name, None)

    def is_live_migratable(self):
        """True when every spec asks for a live-migratable device."""
        return ('spec' in self and self.spec is not None
                and all(spec.get('live_migratable') == 'true' for spec in self.spec))


@base.MinischedObjectRegistry.register
class InstancePCIRequests(base.MinischedObject):
    """All the PCI requests of one instance. Version history (Nova's): 1.1 holds
    InstancePCIRequest 1.1."""

    VERSION = '1.1'

    fields = {
        'instance_uuid': fields.UUIDField(),
        'requests': fields.ListOfObjectsField('InstancePCIRequest'),
    }

    @classmethod
    def obj_from_db(cls, context, instance_uuid, db_requests):
        """Rebuild the requests from their stored JSON (``None`` means none).

        A stored request without ``numa_policy`` predates it and reads as ``legacy``;
        ``is_new`` always reads as False.
        """
        self = cls(context=context, requests=[], instance_uuid=instance_uuid)
        for stored in jsonutils.loads(db_requests) if db_requests is not None else []:
            request = InstancePCIRequest(
                count=stored['count'], spec=stored['spec'], alias_name=stored['alias_name'],
                is_new=False,
                numa_policy=stored.get('numa_policy', fields.PCINUMAAffinityPolicy.LEGACY),
                request_id=stored['request_id'], requester_id=stored.get('requester_id'))
            request.obj_reset_changes()
            self.requests.append(request)
        self.obj_reset_changes()
        return self

    @base.remotable_classmethod
    def get_by_instance_uuid(cls, context, instance_uuid):
        """The stored requests of the instance: none (an empty list) when it has none or
        does not exist, as in Nova."""
        try:
            raw = db.instance_get_by_uuid(context, instance_uuid)['pci_requests']
        except exception.InstanceNotFound:
            raw = None
        stored = jsonutils.loads(raw) if raw else None
        if isinstance(stored, dict):  # an instance row's: the object's primitive
            return cls.obj_from_primitive(stored, context=context)
        return cls.obj_from_db(context, instance_uuid, raw)

    def to_json(self):
        """The stored form: a JSON list with one dict per request."""
        return jsonutils.dumps([
            {'count': req.count, 'spec': req.spec, 'alias_name': req.alias_name,
             'is_new': req.is_new, 'numa_policy': req.numa_policy,
             'request_id': req.request_id, 'requester_id': req.requester_id}
            for req in self.requests])

    def neutron_requests(self):
        # Nova's expression, kept as is: all() of the port requests themselves, so it is
        # True whenever no request comes from a port (a request object is always truthy).
        return all([req for req in self.requests
                    if req.source == InstancePCIRequest.NEUTRON_PORT])
