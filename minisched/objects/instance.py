"""Instances: what a build creates, where it runs and in which state."""
from oslo_serialization import jsonutils

from minisched import exception
from minisched.db import lazy
from minisched.objects import base
from minisched.objects import fields
from minisched.objects import flavor as flavor_obj
from minisched.objects import image_meta as image_meta_obj

db = lazy.module('minisched.db.main.api')

# vm_state values (nova.compute.vm_states) and the task states the build flow uses.
ACTIVE = 'active'
BUILDING = 'building'
STOPPED = 'stopped'
DELETED = 'deleted'
SOFT_DELETED = 'soft-delete'
ERROR = 'error'
SHELVED = 'shelved'
SHELVED_OFFLOADED = 'shelved_offloaded'
RESIZED = 'resized'

SCHEDULING = 'scheduling'
SPAWNING = 'spawning'
DELETING = 'deleting'
REBOOTING = 'rebooting'

# power_state values (nova.compute.power_state)
NOSTATE = 0
RUNNING = 1
PAUSED = 3
SHUTDOWN = 4
CRASHED = 6
SUSPENDED = 7

_FLAVOR_SIZE_FIELDS = ('memory_mb', 'vcpus', 'root_gb', 'ephemeral_gb')


@base.MinischedObjectRegistry.register
class Instance(base.MinischedPersistentObject, base.MinischedObject):
    VERSION = '2.4'

    fields = {
        'id': fields.IntegerField(),
        'uuid': fields.UUIDField(),
        'user_id': fields.StringField(nullable=True),
        'project_id': fields.StringField(nullable=True),
        'image_ref': fields.StringField(nullable=True),
        'hostname': fields.StringField(nullable=True),
        'display_name': fields.StringField(nullable=True),
        'host': fields.StringField(nullable=True),
        'node': fields.StringField(nullable=True),
        'launched_on': fields.StringField(nullable=True),
        'vm_state': fields.StringField(nullable=True),
        'task_state': fields.StringField(nullable=True),
        'power_state': fields.IntegerField(nullable=True),
        'memory_mb': fields.IntegerField(nullable=True),
        'vcpus': fields.IntegerField(nullable=True),
        'root_gb': fields.IntegerField(nullable=True),
        'ephemeral_gb': fields.IntegerField(nullable=True),
        'instance_type_id': fields.IntegerField(nullable=True),
        'availability_zone': fields.StringField(nullable=True),
        'os_type': fields.StringField(nullable=True),
        'launched_at': fields.DateTimeField(nullable=True),
        'terminated_at': fields.DateTimeField(nullable=True),
        'scheduled_at': fields.DateTimeField(nullable=True),
        'locked': fields.BooleanField(default=False),
        'cleaned': fields.BooleanField(default=False),
        'metadata': fields.DictOfStringsField(),
        'system_metadata': fields.DictOfNullableStringsField(),
        'flavor': fields.ObjectField('Flavor'),
        'numa_topology': fields.ObjectField('InstanceNUMATopology', nullable=True),
        'pci_requests': fields.ObjectField('InstancePCIRequests', nullable=True),
        'pci_devices': fields.ObjectField('PciDeviceList', nullable=True),
    }

    _JSON_COLUMNS = {'metadata': 'instance_metadata', 'system_metadata': 'system_metadata'}
    #: Object fields kept as the JSON of their primitive in a column of the same name (Nova
    #: keeps them in ``instance_extra`` and ``pci_devices``: see the 0003 migration).
    _OBJECT_COLUMNS = ('numa_topology', 'pci_requests', 'pci_devices')
    #: What a create or a save does not read back (``_from_db_object``'s ``keep_objects``).
    _KEPT = frozenset(_OBJECT_COLUMNS + ('flavor',))

    @staticmethod
    def _from_db_object(context, instance, db_inst, keep_objects=False):
        """Set ``instance``'s fields from its row. With ``keep_objects``, the object fields
        it has already (flavor, NUMA topology, PCI requests and devices) are kept as they
        are, not decoded again from the JSON just written from them: as Nova's create and
        save, which read back neither the flavor nor the other ``instance_extra`` fields."""
        for name in instance.fields:
            if keep_objects and name in Instance._KEPT and instance.obj_attr_is_set(name):
                continue
            if name == 'flavor':
                raw = db_inst.get('flavor')
                if raw:
                    instance.flavor = flavor_obj.Flavor.obj_from_primitive(jsonutils.loads(raw))
                continue
            if name in Instance._OBJECT_COLUMNS:
                raw = db_inst.get(name)
                setattr(instance, name, base.MinischedObject.obj_from_primitive(
                    jsonutils.loads(raw), context=context) if raw else None)
                continue
            column = Instance._JSON_COLUMNS.get(name, name)
            value = db_inst.get(column)
            if name in Instance._JSON_COLUMNS:
                value = jsonutils.loads(value) if value else {}
            elif name in ('locked', 'cleaned'):
                value = bool(value)
            elif name == 'deleted':
                value = bool(value)
            setattr(instance, name, value)
        instance._context = context
        instance.obj_reset_changes(recursive=True)
        return instance

    def _db_values(self, updates):
        for name, column in self._JSON_COLUMNS.items():
            if name in updates:
                updates[column] = jsonutils.dumps(updates.pop(name))
        if 'flavor' in updates:
            flavor = updates.pop('flavor')
            updates['flavor'] = jsonutils.dumps(flavor.obj_to_primitive()) if flavor else None
            if flavor is not None:
                for size in _FLAVOR_SIZE_FIELDS:
                    updates.setdefault(size, getattr(flavor, size))
                updates.setdefault('instance_type_id', flavor.id if 'id' in flavor else None)
        for name in self._OBJECT_COLUMNS:
            if updates.get(name) is not None:
                updates[name] = jsonutils.dumps(updates[name].obj_to_primitive())
        if 'cleaned' in updates:
            updates['cleaned'] = int(updates['cleaned'])
        return updates

    @property
    def image_meta(self):
        """The instance's image as its ``system_metadata`` records it (an ImageMeta)."""
        return image_meta_obj.ImageMeta.from_instance(self)

    def obj_load_attr(self, attrname):
        if attrname in ('metadata', 'system_metadata'):
            setattr(self, attrname, {})
        elif attrname == 'flavor' or not self.obj_attr_is_set('uuid') or not self._context:
            raise exception.ObjectActionError(
                action='obj_load_attr', reason='attribute %s not lazy-loadable' % attrname)
        else:
            fresh = self.get_by_uuid(self._context, self.uuid)
            setattr(self, attrname, getattr(fresh, attrname))
        self.obj_reset_changes([attrname])

    @base.remotable_classmethod
    def get_by_uuid(cls, context, uuid, expected_attrs=None):
        return cls._from_db_object(context, cls(), db.instance_get_by_uuid(context, uuid))

    @base.remotable
    def create(self):
        self.create_with_action()

    def create_with_action(self, action=None, event=None):
        """:meth:`create`, with the instance's first action row (and an event of it) in the
        same transaction: the conductor records the ``create`` action and its ``schedule``
        event as it places the instance (see ``db.instance_create``). Not remotable: for
        callers with database access."""
        if self.obj_attr_is_set('id'):
            raise exception.ObjectActionError(action='create', reason='already created')
        updates = self._db_values(self.obj_get_changes())
        self._from_db_object(self._context, self, db.instance_create(
            self._context, updates, action=action, event=event), keep_objects=True)

    @base.remotable
    def save(self, expected_vm_state=None, expected_task_state=None):
        """Write the changed fields; ``expected_*`` make the write conditional, atomically."""
        updates = self.obj_get_changes()
        if 'flavor' not in updates and self.obj_attr_is_set('flavor') and \
                self.flavor.obj_what_changed():
            updates['flavor'] = self.flavor
        updates.pop('id', None)
        if not updates:
            return
        db_inst = db.instance_update(
            self._context, self.uuid, self._db_values(updates),
            expected_vm_state=expected_vm_state, expected_task_state=expected_task_state)
        self._from_db_object(self._context, self, db_inst, keep_objects=True)

    @base.remotable
    def destroy(self):
        db_inst = db.instance_destroy(self._context, self.uuid)
        self._from_db_object(self._context, self, db_inst)

    @base.remotable
    def refresh(self):
        current = self.__class__.get_by_uuid(self._context, self.uuid)
        for name in self.fields:
            if current.obj_attr_is_set(name) and (not self.obj_attr_is_set(name) or
                                                  getattr(self, name) != getattr(current, name)):
                setattr(self, name, getattr(current, name))
        self.obj_reset_changes()


@base.MinischedObjectRegistry.register
class InstanceList(base.ObjectListBase, base.MinischedObject):
    VERSION = '2.4'

    fields = {'objects': fields.ListOfObjectsField('Instance')}

    @classmethod
    def _make(cls, context, rows):
        return base.obj_make_list(context, cls(context), Instance, rows)

    @base.remotable_classmethod
    def get_by_host(cls, context, host, expected_attrs=None):
        return cls._make(context, db.instance_get_all_by_host(context, host))

    @base.remotable_classmethod
    def get_by_host_and_node(cls, context, host, node, expected_attrs=None):
        return cls._make(context, db.instance_get_all_by_host_and_node(context, host, node))

    @base.remotable_classmethod
    def get_by_filters(cls, context, filters, sort_key='created_at', sort_dir='desc',
                       limit=None, marker=None, expected_attrs=None):
        return cls._make(context, db.instance_get_all_by_filters(
            context, filters, sort_key=sort_key, sort_dir=sort_dir, limit=limit, marker=marker))

    @base.remotable_classmethod
    def get_uuids_by_host(cls, context, host):
        return db.instance_get_uuids_by_host(context, host)

    def fill_metadata(self):
        """Read ``system_metadata`` of the instances that lack it, in one query.

        Reads the database of the list's context (target the instances' cell first). As
        Nova's reads system metadata, deleted instances are read too; an instance not in the
        database at all gets an empty ``system_metadata``.
        """
        shells = [inst for inst in self if 'system_metadata' not in inst]
        if not shells:
            return
        rows = db.instance_get_all_by_filters(
            self._context.elevated(read_deleted='yes'),
            {'uuid': sorted({inst.uuid for inst in shells})}, sort_key='id')
        found = {row['uuid']: row['system_metadata'] for row in rows}
        for inst in shells:
            raw = found.get(inst.uuid)
            inst.system_metadata = jsonutils.loads(raw) if raw else {}
            inst.obj_reset_changes(['system_metadata'])
