"""Compute node records: a hypervisor node's resources, as the resource tracker reports them."""
from oslo_serialization import jsonutils
from oslo_utils import uuidutils
from oslo_utils import versionutils

from minisched import conf
from minisched import exception
from minisched.db import lazy
from minisched.objects import base
from minisched.objects import fields
from minisched.objects import hv_spec
from minisched.objects import pci_device_pool

db = lazy.module('minisched.db.main.api')

CONF = conf.CONF

#: Used without Placement when neither the node nor the scheduler's config sets a ratio
#: (Rocky's constants).
DEFAULT_RATIOS = {'cpu_allocation_ratio': 16.0, 'ram_allocation_ratio': 1.5,
                  'disk_allocation_ratio': 1.0}


def effective_ratio(name, value, conf):
    """A 0.0/None node ratio means "unset": use ``conf``'s option, else, with Placement,
    ``initial_<name>`` as Nova 34's ComputeNode does, else (the path without Placement)
    Rocky's constant."""
    if value:
        return value
    configured = getattr(conf, name)
    if configured:
        return configured
    if conf.placement.enabled:
        return getattr(conf, 'initial_' + name)
    return DEFAULT_RATIOS[name]


@base.MinischedObjectRegistry.register
class ComputeNode(base.MinischedPersistentObject, base.MinischedObject):
    """One hypervisor node.

    Version history (Nova's numbering): 1.14 cpu/ram_allocation_ratio, 1.15 uuid,
    1.16 disk_allocation_ratio, 1.17 mapped, 1.18 get_by_uuid, 1.19 get_by_nodename.
    """

    VERSION = '1.19'

    fields = {
        'id': fields.IntegerField(read_only=True),
        'uuid': fields.UUIDField(read_only=True),
        'service_id': fields.IntegerField(nullable=True),
        'host': fields.StringField(nullable=True),
        'vcpus': fields.IntegerField(),
        'memory_mb': fields.IntegerField(),
        'local_gb': fields.IntegerField(),
        'vcpus_used': fields.IntegerField(),
        'memory_mb_used': fields.IntegerField(),
        'local_gb_used': fields.IntegerField(),
        'hypervisor_type': fields.StringField(),
        'hypervisor_version': fields.IntegerField(),
        'hypervisor_hostname': fields.StringField(nullable=True),
        'free_ram_mb': fields.IntegerField(nullable=True),
        'free_disk_gb': fields.IntegerField(nullable=True),
        'current_workload': fields.IntegerField(nullable=True),
        'running_vms': fields.IntegerField(nullable=True),
        'cpu_info': fields.StringField(nullable=True),
        'disk_available_least': fields.IntegerField(nullable=True),
        'metrics': fields.StringField(nullable=True),
        'stats': fields.DictOfNullableStringsField(nullable=True),
        'host_ip': fields.IPAddressField(nullable=True),
        'numa_topology': fields.StringField(nullable=True),
        'supported_hv_specs': fields.ListOfObjectsField('HVSpec'),
        # Stored in the ``pci_stats`` column as the JSON of the list's primitive (Nova's form).
        'pci_device_pools': fields.ObjectField('PciDevicePoolList', nullable=True),
        'cpu_allocation_ratio': fields.FloatField(),
        'ram_allocation_ratio': fields.FloatField(),
        'disk_allocation_ratio': fields.FloatField(),
        'mapped': fields.IntegerField(),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = versionutils.convert_version_to_tuple(target_version)
        for added_in, names in (((1, 17), ('mapped',)),
                                ((1, 16), ('disk_allocation_ratio',)),
                                ((1, 15), ('uuid',)),
                                ((1, 14), ('cpu_allocation_ratio', 'ram_allocation_ratio'))):
            if target < added_in:
                for name in names:
                    primitive.pop(name, None)

    #: Fields kept as JSON in their columns.
    _JSON_FIELDS = ('stats', 'supported_hv_specs', 'pci_device_pools')

    @staticmethod
    def _ratio(name, value):
        return effective_ratio(name, value, CONF)

    @classmethod
    def _from_db_object(cls, context, compute, db_compute, keep=()):
        """Set ``compute``'s fields from its row, but those of ``keep`` (the JSON columns a
        save did not write: the object has them as they were read)."""
        for name in compute.fields:
            if name in keep:
                continue
            value = db_compute.get('supported_instances' if name == 'supported_hv_specs'
                                   else 'pci_stats' if name == 'pci_device_pools' else name)
            if name == 'stats':
                value = jsonutils.loads(value) if value else {}
                value = {k: None if v is None else str(v) for k, v in value.items()}
            elif name == 'supported_hv_specs':
                value = [hv_spec.HVSpec.from_list(x) for x in jsonutils.loads(value or '[]')]
            elif name == 'pci_device_pools' and value is not None:
                value = pci_device_pool.from_pci_stats(value)
            elif name in DEFAULT_RATIOS:
                value = cls._ratio(name, value)
            elif name == 'uuid' and value is None:
                continue
            elif name == 'mapped' and value is None:
                value = 0
            setattr(compute, name, value)
        compute._context = context
        compute.obj_reset_changes()
        return compute

    def _db_values(self, updates):
        if 'stats' in updates:
            updates['stats'] = jsonutils.dumps(updates['stats'] or {})
        if 'supported_hv_specs' in updates:
            updates['supported_instances'] = jsonutils.dumps(
                [spec.to_list() for spec in updates.pop('supported_hv_specs')])
        if 'pci_device_pools' in updates:
            pools = updates.pop('pci_device_pools')
            updates['pci_stats'] = (jsonutils.dumps(pools.obj_to_primitive())
                                    if pools is not None else None)
        if updates.get('host_ip') is not None:
            updates['host_ip'] = str(updates['host_ip'])
        return updates

    @base.remotable_classmethod
    def get_by_id(cls, context, compute_id):
        return cls._from_db_object(context, cls(), db.compute_node_get(context, compute_id))

    @base.remotable_classmethod
    def get_by_uuid(cls, context, compute_uuid):
        return cls._from_db_object(context, cls(), db.compute_node_get_by_uuid(context,
                                                                                compute_uuid))

    @base.remotable_classmethod
    def get_by_service_id(cls, context, service_id):
        """The first node of service ``service_id`` (``ServiceNotFound`` if it has none)."""
        return cls._from_db_object(context, cls(),
                                   db.compute_nodes_get_by_service_id(context, service_id)[0])

    @base.remotable_classmethod
    def get_by_host_and_nodename(cls, context, host, nodename):
        return cls._from_db_object(context, cls(), db.compute_node_get_by_host_and_nodename(
            context, host, nodename))

    @base.remotable_classmethod
    def get_by_nodename(cls, context, hypervisor_hostname):
        """The node named ``hypervisor_hostname`` (``ComputeHostNotFound`` if none)."""
        return cls._from_db_object(context, cls(), db.compute_node_get_by_nodename(
            context, hypervisor_hostname))

    @base.remotable_classmethod
    def get_first_node_by_host_for_old_compat(cls, context, host, use_slave=False):
        """The first node of ``host`` (a host with several nodes has more: Nova's old
        one-node-per-host callers)."""
        return ComputeNodeList.get_all_by_host(context, host, use_slave)[0]

    @base.remotable
    def create(self):
        if self.obj_attr_is_set('id'):
            raise exception.ObjectActionError(action='create', reason='already created')
        updates = self.obj_get_changes()
        if 'uuid' not in updates:
            updates['uuid'] = uuidutils.generate_uuid()
        self._from_db_object(self._context, self,
                             db.compute_node_create(self._context, self._db_values(updates)))

    @base.remotable
    def save(self, prune_stats=False):
        updates = self.obj_get_changes()
        updates.pop('id', None)
        # What the save does not write is not decoded again (a claim writes the usage).
        keep = [name for name in self._JSON_FIELDS
                if name not in updates and self.obj_attr_is_set(name)]
        db_compute = db.compute_node_update(self._context, self.id, self._db_values(updates))
        self._from_db_object(self._context, self, db_compute, keep=keep)

    @base.remotable
    def destroy(self):
        db.compute_node_delete(self._context, self.id)


@base.MinischedObjectRegistry.register
class ComputeNodeList(base.ObjectListBase, base.MinischedObject):
    """Version 1.16 added ``get_all_by_uuids``, 1.17 ``get_all_by_not_mapped`` (Nova's).

    ``use_slave`` is accepted as Nova's callers send it; minisched reads the primary
    database whatever its value (it has no replica reader), as Nova does when
    ``[database] slave_connection`` is unset.
    """

    VERSION = '1.17'

    fields = {'objects': fields.ListOfObjectsField('ComputeNode')}

    @classmethod
    def _make(cls, context, rows):
        return base.obj_make_list(context, cls(context), ComputeNode, rows)

    @base.remotable_classmethod
    def get_all(cls, context):
        return cls._make(context, db.compute_node_get_all(context))

    @base.remotable_classmethod
    def get_all_by_uuids(cls, context, compute_uuids):
        return cls._make(context, db.compute_node_get_all_by_uuids(context, compute_uuids))

    @base.remotable_classmethod
    def get_all_by_not_mapped(cls, context, mapped_less_than):
        return cls._make(context, db.compute_node_get_all_by_not_mapped(context,
                                                                         mapped_less_than))

    @base.remotable_classmethod
    def get_by_pagination(cls, context, limit=None, marker=None):
        """``limit`` nodes in id order after the node of id ``marker``."""
        return cls._make(context, db.compute_node_get_all_by_pagination(
            context, limit=limit, marker=marker))

    @base.remotable_classmethod
    def get_by_hypervisor(cls, context, hypervisor_match):
        return cls._make(context, [row for row in db.compute_node_get_all(context)
                                   if hypervisor_match in (row['hypervisor_hostname'] or '')])

    @base.remotable_classmethod
    def _get_by_service(cls, context, service_id, use_slave=False):
        """The nodes of service ``service_id``; none rather than ``ServiceNotFound``."""
        try:
            rows = db.compute_nodes_get_by_service_id(context, service_id)
        except exception.ServiceNotFound:
            rows = []
        return cls._make(context, rows)

    @base.remotable_classmethod
    def get_all_by_host(cls, context, host, use_slave=False):
        """The nodes of ``host`` (``ComputeHostNotFound`` if it has none)."""
        return cls._make(context, db.compute_node_get_all_by_host(context, host))

    @classmethod
    def get_by_hypervisor_type(cls, context, hv_type):
        """The nodes whose hypervisor type is ``hv_type`` (Nova's; not remotable)."""
        return cls._make(context, db.compute_node_get_all_by_hypervisor_type(context,
                                                                              hv_type))

    @classmethod
    def get_all_changed_since(cls, context, since):
        """Nodes created, updated or deleted at or after ``since`` (deleted ones included).

        Not remotable: Nova has no such method, and only processes with database access (the
        scheduler, the conductor) read changes.
        """
        return cls._make(context, db.compute_node_get_all_changed_since(context, since))
