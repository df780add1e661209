"""What a build asks of the scheduler: flavor, image, placement hints, group and retries."""
from oslo_serialization import jsonutils
from oslo_utils import versionutils

from minisched.db import lazy
from minisched import exception
from minisched import objects
from minisched.objects import base
from minisched.objects import compute_node as compute_node_obj
from minisched.objects import fields
from minisched.objects import flavor as flavor_obj
from minisched.objects import image_meta as image_meta_obj
from minisched.objects import instance_group as instance_group_obj

api_db = lazy.module('minisched.db.api.api')


@base.MinischedObjectRegistry.register
class SchedulerLimits(base.MinischedObject):
    """Limits the resource filters computed; the compute claim checks against them."""

    VERSION = '1.0'

    fields = {
        'numa_topology': fields.ObjectField('NUMATopologyLimits', nullable=True, default=None),
        'vcpu': fields.IntegerField(nullable=True, default=None),
        'disk_gb': fields.IntegerField(nullable=True, default=None),
        'memory_mb': fields.IntegerField(nullable=True, default=None),
    }

    @classmethod
    def from_dict(cls, limits_dict):
        """Every field set: the dict's value, else the field's default (None), in the order
        the constructor and obj_set_defaults set them (so the change list reads the same)."""
        values = {k: v for k, v in (limits_dict or {}).items() if k in cls.fields}
        for name, field in cls.fields.items():
            values.setdefault(name, field.default)
        return cls._new(**values)

    def to_dict(self):
        return {name: getattr(self, name) for name in self.fields
                if self.obj_attr_is_set(name) and getattr(self, name) is not None}


@base.MinischedObjectRegistry.register
class SchedulerRetries(base.MinischedObject):
    VERSION = '1.1'

    fields = {
        'num_attempts': fields.IntegerField(),
        'hosts': fields.ObjectField('ComputeNodeList'),
    }

    @classmethod
    def from_dict(cls, context, retry_dict):
        if not retry_dict or 'num_attempts' not in retry_dict:
            return None
        nodes = [compute_node_obj.ComputeNode(context=context, host=host,
                                              hypervisor_hostname=node)
                 for host, node in retry_dict.get('hosts', [])]
        return cls(context=context, num_attempts=retry_dict['num_attempts'],
                   hosts=compute_node_obj.ComputeNodeList(objects=nodes))

    def to_dict(self):
        return {'num_attempts': self.num_attempts,
                'hosts': [[cn.host, cn.hypervisor_hostname] for cn in self.hosts]}


@base.MinischedObjectRegistry.register
class Destination(base.MinischedObject):
    """A requested destination: a host, optionally a node, optionally a cell.

    1.1 ``cell``; 1.2 ``aggregates``; 1.3 ``allow_cross_cell_move``; 1.4
    ``forbidden_aggregates``.
    """

    VERSION = '1.4'

    fields = {
        'host': fields.StringField(),
        'node': fields.StringField(nullable=True),
        'cell': fields.ObjectField('CellMapping', nullable=True),
        # Sets of aggregate uuids: the host must be in at least one of each set.
        'aggregates': fields.ListOfStringsField(nullable=True, default=None),
        # With a cell: may the request leave it (a cross-cell move)? Else only that cell.
        'allow_cross_cell_move': fields.BooleanField(default=False),
        # Aggregates the host must be in none of (Nova's isolate_aggregates filter).
        'forbidden_aggregates': fields.SetOfStringsField(nullable=True, default=None),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        _drop_newer(primitive, target_version, {(1, 4): ('forbidden_aggregates',),
                                                (1, 3): ('allow_cross_cell_move',),
                                                (1, 2): ('aggregates',),
                                                (1, 1): ('cell',)})

    def obj_load_attr(self, attrname):
        self.obj_set_defaults(attrname)

    def require_aggregates(self, aggregates):
        """Require the host in one of ``aggregates`` (AND'd with the sets given before)."""
        if self.aggregates is None:
            self.aggregates = []
        self.aggregates.append(','.join(aggregates))

    def append_forbidden_aggregates(self, forbidden_aggregates):
        if self.forbidden_aggregates is None:
            self.forbidden_aggregates = set()
        self.forbidden_aggregates |= forbidden_aggregates


@base.MinischedObjectRegistry.register
class RequestGroup(base.MinischedObject):
    """A group of resources and traits to be found on one provider (or spread over the
    tree when ``use_same_provider`` is false): the unit of Nova's placement query.

    minisched asks no placement service: the groups a Nova client sends (a port's bandwidth,
    a flavor's ``resourcesN``) are carried as they come. Defaults are set at creation.
    1.1 ``requester_id`` and ``provider_uuids``; 1.2 ``in_tree``; 1.3 ``forbidden_aggregates``.
    """

    VERSION = '1.3'

    fields = {
        'use_same_provider': fields.BooleanField(default=True),
        'resources': fields.DictOfIntegersField(default={}),
        'required_traits': fields.SetOfStringsField(default=set()),
        'forbidden_traits': fields.SetOfStringsField(default=set()),
        # [[agg1], [agg2, agg3]]: in agg1, and in agg2 or agg3.
        'aggregates': fields.ListOfListsOfStringsField(default=[]),
        'forbidden_aggregates': fields.SetOfStringsField(default=set()),
        # Who asked (a port uuid, a group suffix): not always a uuid.
        'requester_id': fields.StringField(nullable=True, default=None),
        # The providers that together fulfil the group, once chosen.
        'provider_uuids': fields.ListOfUUIDField(default=[]),
        'in_tree': fields.UUIDField(nullable=True, default=None),
    }

    def __init__(self, context=None, **kwargs):
        super().__init__(context, **kwargs)
        self.obj_set_defaults()  # every field not given (Nova's EphemeralObject)

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        _drop_newer(primitive, target_version, {(1, 3): ('forbidden_aggregates',),
                                                (1, 2): ('in_tree',),
                                                (1, 1): ('requester_id', 'provider_uuids')})

    def is_empty(self):
        return not any((self.resources, self.required_traits, self.forbidden_traits,
                        self.aggregates, self.forbidden_aggregates))

    def strip_zeros(self):
        """Drop the resources asked for in an amount of zero."""
        for rclass in [rc for rc, amount in self.resources.items() if amount == 0]:
            del self.resources[rclass]


@base.MinischedObjectRegistry.register
class RequestLevelParams(base.MinischedObject):
    """What applies to the request as a whole rather than to one group (Nova sends it to
    placement beside the groups). 1.1 ``same_subtree``."""

    VERSION = '1.1'

    fields = {
        # Traits the root provider must have / must not have.
        'root_required': fields.SetOfStringsField(default=set()),
        'root_forbidden': fields.SetOfStringsField(default=set()),
        # Lists of group suffixes to be fulfilled from one provider subtree.
        'same_subtree': fields.ListOfListsOfStringsField(default=list()),
    }

    def obj_load_attr(self, attrname):
        self.obj_set_defaults(attrname)

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        _drop_newer(primitive, target_version, {(1, 1): ('same_subtree',)})

    def extend_with(self, other):
        """AND ``other``'s requirements with these."""
        self.root_required = self.root_required | other.root_required
        self.root_forbidden = self.root_forbidden | other.root_forbidden
        self.same_subtree.extend(other.same_subtree)


@base.MinischedObjectRegistry.register
class RequestSpec(base.MinischedObject):
    """Nova's RequestSpec at 1.15, every field of that version.

    1.6 ``requested_destination``; 1.7 ``destroy()``; 1.8 ``security_groups``; 1.9
    ``user_id``; 1.10 ``network_metadata``; 1.11 ``is_bfv``; 1.12 ``requested_resources``;
    1.13 ``request_level_params``; 1.14 ``requested_networks``; 1.15
    ``get_by_instance_uuids()``. minisched has no placement and no network service: the
    resource groups, request level parameters, networks and security groups a Nova client
    sends are carried as they come.
    """

    VERSION = '1.15'

    fields = {
        'id': fields.IntegerField(),
        'image': fields.ObjectField('ImageMeta', nullable=True),
        'numa_topology': fields.ObjectField('InstanceNUMATopology', nullable=True),
        'pci_requests': fields.ObjectField('InstancePCIRequests', nullable=True),
        'project_id': fields.StringField(nullable=True),
        'user_id': fields.StringField(nullable=True),
        'availability_zone': fields.StringField(nullable=True),
        'flavor': fields.ObjectField('Flavor', nullable=False),
        'num_instances': fields.IntegerField(default=1),
        # Per request (never stored): ignore_hosts, requested_destination, retry,
        # network_metadata, requested_resources, request_level_params, requested_networks.
        'ignore_hosts': fields.ListOfStringsField(nullable=True),
        # A list, though only one host (node) can ever be forced.
        'force_hosts': fields.ListOfStringsField(nullable=True),
        'force_nodes': fields.ListOfStringsField(nullable=True),
        'requested_destination': fields.ObjectField('Destination', nullable=True,
                                                    default=None),
        'retry': fields.ObjectField('SchedulerRetries', nullable=True),
        'limits': fields.ObjectField('SchedulerLimits', nullable=True),
        'instance_group': fields.ObjectField('InstanceGroup', nullable=True),
        # Free form: the API checked the hints the enabled filters know.
        'scheduler_hints': fields.DictOfListOfStringsField(nullable=True),
        'instance_uuid': fields.UUIDField(),
        'security_groups': fields.ObjectField('SecurityGroupList'),
        'network_metadata': fields.ObjectField('NetworkMetadata'),
        'is_bfv': fields.BooleanField(),
        # Resource groups beyond the flavor's sizes (a port's bandwidth, say).
        'requested_resources': fields.ListOfObjectsField('RequestGroup', nullable=True,
                                                         default=None),
        'request_level_params': fields.ObjectField('RequestLevelParams'),
        'requested_networks': fields.ObjectField('NetworkRequestList'),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        _drop_newer(primitive, target_version, {
            (1, 14): ('requested_networks',), (1, 13): ('request_level_params',),
            (1, 12): ('requested_resources',), (1, 11): ('is_bfv',),
            (1, 10): ('network_metadata',), (1, 9): ('user_id',), (1, 8): ('security_groups',),
            (1, 6): ('requested_destination',)})

    # Flavor sizes, read through as Nova's properties do.
    @property
    def vcpus(self):
        return self.flavor.vcpus

    @property
    def memory_mb(self):
        return self.flavor.memory_mb

    @property
    def root_gb(self):
        return self.flavor.root_gb

    @property
    def ephemeral_gb(self):
        return self.flavor.ephemeral_gb

    @property
    def swap(self):
        return self.flavor.swap

    @property
    def root_required(self):
        return self.request_level_params.root_required

    @property
    def root_forbidden(self):
        return self.request_level_params.root_forbidden

    @property
    def same_subtree(self):
        return self.request_level_params.same_subtree

    def obj_load_attr(self, attrname):
        """Nova lazy-loads the fields a spec of an older version lacks; minisched also reads
        an unset nullable field as None and ``num_instances``/``is_bfv`` as their defaults."""
        if attrname in ('ignore_hosts', 'force_hosts', 'force_nodes', 'requested_destination',
                        'retry', 'limits', 'instance_group', 'scheduler_hints', 'image',
                        'numa_topology', 'pci_requests', 'availability_zone', 'project_id',
                        'user_id', 'requested_resources'):
            setattr(self, attrname, None)
        elif attrname == 'security_groups':
            self.security_groups = objects.SecurityGroupList(objects=[])
        elif attrname == 'request_level_params':
            self.request_level_params = RequestLevelParams()
        elif attrname == 'requested_networks':
            self.requested_networks = objects.NetworkRequestList(objects=[])
        elif attrname == 'num_instances':
            self.num_instances = 1
        elif attrname == 'is_bfv':
            self.is_bfv = False
        elif attrname == 'network_metadata':
            self.network_metadata = objects.NetworkMetadata(physnets=set(), tunneled=False)
        else:
            raise AttributeError("'RequestSpec' has no set attribute '%s'" % attrname)
        self.obj_reset_changes([attrname])

    def get_scheduler_hint(self, hint_name, default=None):
        """A hint's value: one-element lists are unwrapped, a missing hint is ``default``."""
        if self.scheduler_hints is None or hint_name not in self.scheduler_hints:
            return default
        value = self.scheduler_hints[hint_name]
        if isinstance(value, list) and len(value) == 1:
            return value[0]
        return value

    def get_request_group_mapping(self):
        """``{requester_id: [provider uuid]}`` of ``requested_resources`` (the providers a
        claimed allocation took each group from), or None when it is not set."""
        if 'requested_resources' in self and self.requested_resources is not None:
            return {group.requester_id: group.provider_uuids
                    for group in self.requested_resources}
        return None

    # -- legacy dict forms (RPC 4.0 and notifications) --------------------------------

    @classmethod
    def from_primitives(cls, context, request_spec, filter_properties):
        """Build a RequestSpec from the legacy ``request_spec``/``filter_properties`` dicts."""
        request_spec = dict(request_spec or {})
        filter_properties = dict(filter_properties or {})
        spec = cls(context)
        image = request_spec.get('image')
        spec.image = image_meta_obj.ImageMeta.from_dict(image) if image is not None else None
        spec.num_instances = request_spec.get('num_instances', 1)
        flavor = request_spec.get('instance_type') or filter_properties.get('instance_type')
        if flavor:  # as Nova's: no flavor leaves the (non-nullable) field unset
            spec.flavor = _flavor_from(flavor)
        props = request_spec.get('instance_properties') or {}
        spec.project_id = props.get('project_id', context.project_id if context else None)
        spec.user_id = props.get('user_id', context.user_id if context else None)
        spec.availability_zone = props.get('availability_zone')
        if props.get('uuid'):
            spec.instance_uuid = props['uuid']
        spec.numa_topology = _numa_topology_from(props.get('numa_topology'))
        spec.pci_requests = _pci_requests_from(props.get('pci_requests'))
        spec._from_filter_properties(context, filter_properties)
        return spec

    def _from_filter_properties(self, context, props):
        self.ignore_hosts = props.get('ignore_hosts')
        self.force_hosts = props.get('force_hosts')
        self.force_nodes = props.get('force_nodes')
        self.retry = SchedulerRetries.from_dict(context, props.get('retry'))
        self.limits = SchedulerLimits.from_dict(props.get('limits', {}))
        hints = props.get('scheduler_hints') or {}
        self.scheduler_hints = {k: v if isinstance(v, list) else [v] for k, v in hints.items()}
        self.requested_destination = props.get('requested_destination')
        self.instance_group = None
        if props.get('group_updated') or props.get('group_policies'):
            policies = list(props.get('group_policies') or [])
            self.instance_group = instance_group_obj.InstanceGroup(
                policy=policies[0] if policies else None,
                hosts=list(props.get('group_hosts') or []),
                members=list(props.get('group_members') or []))
            self.instance_group._rules = {}

    def to_legacy_request_spec_dict(self):
        spec = {}
        if self.obj_attr_is_set('image') and self.image is not None:
            spec['image'] = base.obj_to_primitive(self.image)
        else:
            spec['image'] = {}
        if self.obj_attr_is_set('flavor'):
            spec['instance_type'] = self.flavor
        spec['num_instances'] = self.num_instances
        props = {}
        for name in ('project_id', 'user_id', 'availability_zone', 'numa_topology',
                     'pci_requests'):
            if self.obj_attr_is_set(name):
                props[name] = getattr(self, name)
        if self.obj_attr_is_set('instance_uuid'):
            props['uuid'] = self.instance_uuid
        spec['instance_properties'] = props
        return spec

    def to_legacy_filter_properties_dict(self):
        props = {}
        for name in ('ignore_hosts', 'force_hosts', 'force_nodes'):
            if self.obj_attr_is_set(name) and getattr(self, name):
                props[name] = getattr(self, name)
        if self.obj_attr_is_set('retry') and self.retry:
            props['retry'] = self.retry.to_dict()
        if self.obj_attr_is_set('limits') and self.limits:
            props['limits'] = self.limits.to_dict()
        if self.obj_attr_is_set('instance_group') and self.instance_group:
            group = self.instance_group
            props['group_updated'] = True
            props['group_hosts'] = set(group.hosts)
            props['group_policies'] = set(group.policies)
            props['group_members'] = set(group.members)
        if self.obj_attr_is_set('scheduler_hints') and self.scheduler_hints:
            # Legacy hints are scalars where the list has one element (Nova's form).
            props['scheduler_hints'] = {name: self.get_scheduler_hint(name)
                                        for name in self.scheduler_hints}
        if self.obj_attr_is_set('requested_destination') and self.requested_destination:
            props['requested_destination'] = self.requested_destination
        return props

    # -- persistence (API database) ---------------------------------------------------

    def _to_json(self):
        spec = self.obj_clone()
        # Per request state is not stored, as in Nova.
        for name in ('retry', 'requested_destination', 'limits', 'id', 'network_metadata',
                     'ignore_hosts', 'requested_resources', 'request_level_params',
                     'requested_networks'):
            if spec.obj_attr_is_set(name):
                delattr(spec, name)
        if spec.obj_attr_is_set('instance_group') and spec.instance_group:
            for name in ('hosts', 'members'):
                if spec.instance_group.obj_attr_is_set(name):
                    setattr(spec.instance_group, name, [])
        return jsonutils.dumps(spec.obj_to_primitive())

    @classmethod
    def _from_db(cls, context, db_spec):
        primitive = jsonutils.loads(db_spec['spec'])
        _security_group_names_to_list(primitive)
        spec = cls.obj_from_primitive(primitive, context=context)
        spec.id = db_spec['id']
        spec._context = context
        spec.obj_reset_changes(recursive=True)
        return spec

    @base.remotable_classmethod
    def get_by_instance_uuid(cls, context, instance_uuid):
        return cls._from_db(context, api_db.request_spec_get_by_instance_uuid(context,
                                                                               instance_uuid))

    @base.remotable_classmethod
    def get_by_instance_uuids(cls, context, instance_uuids):
        """The specs of those of ``instance_uuids`` that have one (a list, in no order)."""
        return [cls._from_db(context, db_spec) for db_spec in
                api_db.request_spec_get_by_instance_uuids(context, instance_uuids)]

    @base.remotable
    def create(self):
        if self.obj_attr_is_set('id'):
            raise exception.ObjectActionError(action='create', reason='already created')
        db_spec = api_db.request_spec_create(self._context, self.instance_uuid, self._to_json())
        self.id = db_spec['id']
        self.obj_reset_changes(['id'])

    @base.remotable
    def save(self):
        api_db.request_spec_update(self._context, self.instance_uuid, self._to_json())
        self.obj_reset_changes()

    @base.remotable
    def destroy(self):
        """Delete the stored spec of ``instance_uuid``; RequestSpecNotFound when none."""
        api_db.request_spec_destroy(self._context, self.instance_uuid)

    def reset_forced_destinations(self):
        """Forget the forced host and node for this run only (they stay stored)."""
        self.force_hosts = None
        self.force_nodes = None
        self.obj_reset_changes(['force_hosts', 'force_nodes'])


def _security_group_names_to_list(primitive):
    """A spec stored before 1.15, when minisched kept ``security_groups`` as a list of names
    (Nova always had a SecurityGroupList), given the list object in its place."""
    key = primitive.get('minisched_object.data') or {}
    names = key.get('security_groups')
    if isinstance(names, list):
        key['security_groups'] = objects.SecurityGroupList.from_names(
            [str(name) for name in names]).obj_to_primitive()


def _drop_newer(primitive, target_version, added_in):
    """Remove from ``primitive`` the fields ``added_in`` (``{(major, minor): names}``) says
    came after ``target_version``."""
    target = versionutils.convert_version_to_tuple(target_version)
    for version, names in added_in.items():
        if target < version:
            for name in names:
                primitive.pop(name, None)


def _numa_topology_from(value):
    """A legacy ``instance_properties['numa_topology']``: an object, its primitive (a dict
    or its JSON), or None."""
    if isinstance(value, str):
        value = jsonutils.loads(value)
    if isinstance(value, dict):
        return objects.InstanceNUMATopology.obj_from_primitive(value)
    return value


def _pci_requests_from(value):
    """A legacy ``instance_properties['pci_requests']``: an object, its primitive, or None."""
    if isinstance(value, dict):
        return objects.InstancePCIRequests.obj_from_primitive(value)
    return value


def _flavor_from(value):
    if value is None or isinstance(value, flavor_obj.Flavor):
        return value
    flavor = flavor_obj.Flavor()
    for name in flavor.fields:
        if name in value and value[name] is not None:
            setattr(flavor, name, value[name])
    return flavor
