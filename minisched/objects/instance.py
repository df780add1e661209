"""Instances: what a build creates, where it runs and in which state."""
from oslo_serialization import jsonutils
from oslo_utils import versionutils
from oslo_versionedobjects import fields as ovo_fields

from minisched import exception
from minisched.db import lazy
from minisched.objects import base
from minisched.objects import fields
from minisched.objects import flavor as flavor_obj
from minisched.objects import image_meta as image_meta_obj
from minisched.objects import instance_carried
from minisched.objects import instance_extra
from minisched.objects import instance_fault as instance_fault_obj

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
_NO_SECURITY_GROUP_IDS = ('minisched keeps an instance\'s security groups by name, without '
                          'the ids of a security group table (they live in Neutron)')

@base.MinischedObjectRegistry.register
class Instance(base.MinischedPersistentObject, base.MinischedObject):
    """An instance, with every field of Nova 34's Instance 2.8.

    Every field is carried over RPC and kept in the instance's row, so that nothing a Nova
    client sends is lost, though minisched's own flow sets only what scheduling and its
    compute use. Fields Nova keeps as columns are columns; the objects Nova keeps in
    ``instance_extra`` and tables of their own are the JSON of their primitive, one column
    each (info cache, security groups, key pairs, tags, trusted certificates, CPU model,
    device metadata, migration context, resources, flavors). Three are not stored, as in
    Nova: ``fault`` (the newest row of ``instance_faults``), ``services`` (those of the
    instance's host) and ``ec2_ids`` (derived); they load when read, or with
    ``expected_attrs``. ``scheduled_at``, a column Nova's object does not carry, is no
    field (minisched's 2.4 had it).
    """

    VERSION = '2.8'

    fields = {
        'id': fields.IntegerField(),
        'user_id': fields.StringField(nullable=True),
        'project_id': fields.StringField(nullable=True),
        'image_ref': fields.StringField(nullable=True),
        'kernel_id': fields.StringField(nullable=True),
        'ramdisk_id': fields.StringField(nullable=True),
        'hostname': fields.StringField(nullable=True),
        'launch_index': fields.IntegerField(nullable=True),
        'key_name': fields.StringField(nullable=True),
        'key_data': fields.StringField(nullable=True),
        'power_state': fields.IntegerField(nullable=True),
        'vm_state': fields.StringField(nullable=True),
        'task_state': fields.StringField(nullable=True),
        # 2.1
        'services': fields.ObjectField('ServiceList'),
        'memory_mb': fields.IntegerField(nullable=True),
        'vcpus': fields.IntegerField(nullable=True),
        'root_gb': fields.IntegerField(nullable=True),
        'ephemeral_gb': fields.IntegerField(nullable=True),
        'ephemeral_key_uuid': fields.UUIDField(nullable=True),
        'host': fields.StringField(nullable=True),
        'node': fields.StringField(nullable=True),
        # 2.8
        'compute_id': fields.IntegerField(nullable=True),
        'instance_type_id': fields.IntegerField(nullable=True),
        'user_data': fields.StringField(nullable=True),
        'reservation_id': fields.StringField(nullable=True),
        'launched_at': fields.DateTimeField(nullable=True),
        'terminated_at': fields.DateTimeField(nullable=True),
        'availability_zone': fields.StringField(nullable=True),
        'display_name': fields.StringField(nullable=True),
        'display_description': fields.StringField(nullable=True),
        'launched_on': fields.StringField(nullable=True),
        'locked': fields.BooleanField(default=False),
        'locked_by': fields.StringField(nullable=True),
        'os_type': fields.StringField(nullable=True),
        'architecture': fields.StringField(nullable=True),
        'vm_mode': fields.StringField(nullable=True),
        'uuid': fields.UUIDField(),
        'root_device_name': fields.StringField(nullable=True),
        'default_ephemeral_device': fields.StringField(nullable=True),
        'default_swap_device': fields.StringField(nullable=True),
        'config_drive': fields.StringField(nullable=True),
        'access_ip_v4': fields.IPV4AddressField(nullable=True),
        'access_ip_v6': ovo_fields.IPV6AddressField(nullable=True),
        'auto_disk_config': fields.BooleanField(default=False),
        'progress': fields.IntegerField(nullable=True),
        'shutdown_terminate': fields.BooleanField(default=False),
        'disable_terminate': fields.BooleanField(default=False),
        'cell_name': fields.StringField(nullable=True),
        'metadata': fields.DictOfStringsField(),
        'system_metadata': fields.DictOfNullableStringsField(),
        'info_cache': fields.ObjectField('InstanceInfoCache', nullable=True),
        'security_groups': fields.ObjectField('SecurityGroupList'),
        'fault': fields.ObjectField('InstanceFault', nullable=True),
        'cleaned': fields.BooleanField(default=False),
        'pci_devices': fields.ObjectField('PciDeviceList', nullable=True),
        'numa_topology': fields.ObjectField('InstanceNUMATopology', nullable=True),
        'pci_requests': fields.ObjectField('InstancePCIRequests', nullable=True),
        # 2.3
        'device_metadata': fields.ObjectField('InstanceDeviceMetadata', nullable=True),
        'tags': fields.ObjectField('TagList'),
        'flavor': fields.ObjectField('Flavor'),
        'old_flavor': fields.ObjectField('Flavor', nullable=True),
        'new_flavor': fields.ObjectField('Flavor', nullable=True),
        'vcpu_model': fields.ObjectField('VirtCPUModel', nullable=True),
        'ec2_ids': fields.ObjectField('EC2Ids'),
        'migration_context': fields.ObjectField('MigrationContext', nullable=True),
        # 2.2
        'keypairs': fields.ObjectField('KeyPairList'),
        # 2.4
        'trusted_certs': fields.ObjectField('TrustedCerts', nullable=True),
        # 2.6
        'hidden': fields.BooleanField(default=False),
        # 2.7
        'resources': fields.ObjectField('ResourceList', nullable=True),
    }

    #: (version, field added in it), newest first: what older versions do not carry.
    _ADDED = (((2, 8), 'compute_id'), ((2, 7), 'resources'), ((2, 6), 'hidden'),
              ((2, 4), 'trusted_certs'), ((2, 3), 'device_metadata'), ((2, 2), 'keypairs'),
              ((2, 1), 'services'))

    _JSON_COLUMNS = {'metadata': 'instance_metadata', 'system_metadata': 'system_metadata'}
    #: Object fields kept as the JSON of their primitive in a column of the same name (Nova
    #: keeps them in ``instance_extra`` and tables of their own: see the 0003 and 0004
    #: migrations); NULL is None.
    _OBJECT_COLUMNS = ('numa_topology', 'pci_requests', 'pci_devices', 'info_cache',
                       'trusted_certs', 'vcpu_model', 'device_metadata', 'migration_context',
                       'resources', 'old_flavor', 'new_flavor')
    #: List fields kept the same way, an empty list as NULL, read back unset (loaded as
    #: an empty list when read): {field: list class name}.
    _LIST_COLUMNS = {'security_groups': 'SecurityGroupList', 'keypairs': 'KeyPairList',
                     'tags': 'TagList'}
    #: Fields not stored: loaded when read (``obj_load_attr``) or asked for.
    _DERIVED = ('fault', 'services', 'ec2_ids')
    _BOOLEANS = frozenset(name for name, field in fields.items()
                          if isinstance(field, ovo_fields.BooleanField))
    _IP_FIELDS = ('access_ip_v4', 'access_ip_v6')
    #: What a create or a save does not read back (``_from_db_object``'s ``keep_objects``).
    _KEPT = frozenset(_OBJECT_COLUMNS + tuple(_LIST_COLUMNS) + ('flavor',))

    @classmethod
    def _read_plan(cls):
        """``(field, kind, column)`` of each stored field, as ``_from_db_object`` reads it."""
        plan = []
        for name in cls.fields:
            if name in cls._DERIVED:
                continue
            if name == 'flavor':
                kind = 'flavor'
            elif name in cls._OBJECT_COLUMNS:
                kind = 'object'
            elif name in cls._LIST_COLUMNS:
                kind = 'list'
            elif name in cls._JSON_COLUMNS:
                kind = 'json'
            elif name in cls._BOOLEANS:
                kind = 'bool'
            else:
                kind = 'value'
            plan.append((name, kind, cls._JSON_COLUMNS.get(name, name)))
        return tuple(plan)

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = versionutils.convert_version_to_tuple(target_version)
        for version, name in self._ADDED:
            if target < version:
                primitive.pop(name, None)

    @staticmethod
    def _from_db_object(context, instance, db_inst, keep_objects=False, expected_attrs=None):
        """Set ``instance``'s fields from its row. With ``keep_objects``, the object fields
        it has already (flavors, NUMA topology, PCI requests and devices, the other objects
        kept as JSON) are kept as they are, not decoded again from the JSON just written
        from them: as Nova's create and save, which read back neither the flavor nor the
        other ``instance_extra`` fields. ``expected_attrs`` may ask for the derived fields
        (``fault``, ``services``, ``ec2_ids``), loaded then."""
        attrs = instance.__dict__
        fields_ = Instance.fields
        # Values go straight into the attributes, coerced as the field's setter would: a
        # row has 70 fields, and the setter's indirections doubled the cost of a read.
        for name, kind, column in Instance._READ_PLAN:
            attrname = '_obj_' + name
            if keep_objects and kind in ('flavor', 'object', 'list') and attrname in attrs:
                continue
            raw = db_inst.get(column)
            if kind == 'flavor':
                if not raw:
                    continue
                value = flavor_obj.Flavor.obj_from_primitive(jsonutils.loads(raw))
            elif kind == 'object':
                value = instance_extra.decode(context, raw)
            elif kind == 'list':
                # An empty list (NULL) is left unset, not built: three empty lists cost
                # every read, and every instance sent, more than all its other fields.
                # Reading it loads the empty list (obj_load_attr).
                if not raw:
                    attrs.pop(attrname, None)
                    continue
                value = instance_extra.decode(context, raw)
            elif kind == 'json':
                value = jsonutils.loads(raw) if raw else {}
            elif kind == 'bool':
                value = bool(raw)
            else:
                value = raw
            attrs[attrname] = fields_[name].coerce(instance, name, value)
        instance._context = context
        for name in set(expected_attrs or ()) & set(Instance._DERIVED):
            instance.obj_load_attr(name)
        instance._changed_fields = set()
        for key, value in attrs.items():
            if key.startswith('_obj_') and isinstance(value, base.MinischedObject):
                value.obj_reset_changes(recursive=True)
        return instance

    def _db_values(self, updates):
        for name in self._DERIVED:
            updates.pop(name, None)
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
            if name in updates:
                updates[name] = instance_extra.encode(updates[name])
        for name in self._LIST_COLUMNS:
            if name in updates:
                updates[name] = instance_extra.encode(updates[name]) if len(
                    updates[name]) else None
        for name in self._IP_FIELDS:
            if updates.get(name) is not None:
                updates[name] = str(updates[name])
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
        elif attrname == 'fault':
            self.fault = instance_fault_obj.InstanceFault.get_latest_for_instance(
                self._context, self.uuid)
        elif attrname == 'ec2_ids':
            self.ec2_ids = instance_carried.EC2Ids.get_by_instance(self._context, self)
        elif attrname == 'services':
            from minisched.objects import service as service_obj
            self.services = (service_obj.ServiceList.get_by_host(self._context, self.host)
                             if self.obj_attr_is_set('host') and self.host
                             else service_obj.ServiceList(objects=[]))
        elif attrname in self._LIST_COLUMNS:
            # Unset when read: the database holds an empty list (or no instance yet).
            fresh = None
            if self.obj_attr_is_set('id'):
                fresh = self.get_by_uuid(self._context, self.uuid)
            setattr(self, attrname, getattr(fresh, attrname) if fresh is not None and
                    fresh.obj_attr_is_set(attrname) else base.MinischedObjectRegistry
                    .obj_classes()[self._LIST_COLUMNS[attrname]][0](objects=[]))
        else:
            fresh = self.get_by_uuid(self._context, self.uuid)
            setattr(self, attrname, getattr(fresh, attrname))
        self.obj_reset_changes([attrname])

    @base.remotable_classmethod
    def get_by_uuid(cls, context, uuid, expected_attrs=None, use_slave=False):
        """The instance (``use_slave`` is accepted: minisched has no read replica)."""
        return cls._from_db_object(context, cls(), db.instance_get_by_uuid(context, uuid),
                                   expected_attrs=expected_attrs)

    @base.remotable_classmethod
    def get_by_id(cls, context, inst_id, expected_attrs=None):
        return cls._from_db_object(context, cls(), db.instance_get(context, inst_id),
                                   expected_attrs=expected_attrs)

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
    def save(self, expected_vm_state=None, expected_task_state=None, admin_state_reset=False):
        """Write the changed fields; ``expected_*`` make the write conditional, atomically.
        (``admin_state_reset`` tells Nova's notifications of an admin's reset: minisched
        sends no notifications.)"""
        updates = self.obj_get_changes()
        if 'flavor' not in updates and self.obj_attr_is_set('flavor') and \
                self.flavor.obj_what_changed():
            updates['flavor'] = self.flavor
        updates.pop('id', None)
        updates = self._db_values(updates)
        if not updates:
            self.obj_reset_changes(recursive=True)
            return
        db_inst = db.instance_update(
            self._context, self.uuid, updates,
            expected_vm_state=expected_vm_state, expected_task_state=expected_task_state)
        self._from_db_object(self._context, self, db_inst, keep_objects=True)

    @base.remotable
    def destroy(self, hard_delete=False):
        """Delete the instance (soft unless ``hard_delete``). As Nova's, an instance this
        object knows without a host is deleted only while it still has none: a compute that
        took it meanwhile makes this an ObjectActionError ('host changed')."""
        if not self.obj_attr_is_set('id'):
            raise exception.ObjectActionError(action='destroy', reason='already destroyed')
        host_unset = not self.obj_attr_is_set('host') or not self.host
        db_inst = db.instance_destroy(self._context, self.uuid, hard_delete=hard_delete,
                                      host_unset=host_unset)
        self._from_db_object(self._context, self, db_inst)
        delattr(self, '_obj_id')

    @base.remotable
    def refresh(self, use_slave=False):
        current = self.__class__.get_by_uuid(self._context, self.uuid)
        for name in self.fields:
            if name in self._DERIVED and not self.obj_attr_is_set(name):
                continue
            if current.obj_attr_is_set(name) and (not self.obj_attr_is_set(name) or
                                                  getattr(self, name) != getattr(current, name)):
                setattr(self, name, getattr(current, name))
        self.obj_reset_changes()

    @base.remotable
    def delete_metadata_key(self, key):
        """Remove one key of the instance's ``metadata``, in the database and here (the key
        was there), without writing the other changes."""
        def remove(raw):
            metadata = jsonutils.loads(raw) if raw else {}
            metadata.pop(key, None)
            return jsonutils.dumps(metadata)
        db.instance_column_update(self._context, self.uuid, 'instance_metadata', remove)
        was_changed = 'metadata' in self.obj_what_changed()
        metadata = dict(self.metadata)
        metadata.pop(key, None)
        self.metadata = metadata
        if not was_changed:
            self.obj_reset_changes(['metadata'])

    @base.remotable
    def drop_migration_context(self):
        if self.migration_context:
            instance_extra.store(self._context, self.uuid, 'migration_context', None)
            self.migration_context = None
            self.obj_reset_changes(['migration_context'])


Instance._READ_PLAN = Instance._read_plan()


@base.MinischedObjectRegistry.register
class InstanceList(base.ObjectListBase, base.MinischedObject):
    """Lists of instances. ``use_slave`` is accepted everywhere Nova takes it: minisched has
    no read replica. The security group queries are not supported: minisched keeps groups
    by name with their instance, not the ids they ask about."""

    VERSION = '2.6'

    fields = {'objects': fields.ListOfObjectsField('Instance')}

    @classmethod
    def _make(cls, context, rows, expected_attrs=None):
        instances = cls(context, objects=[
            Instance._from_db_object(context, Instance(context), row) for row in rows])
        if expected_attrs and 'fault' in expected_attrs and instances.objects:
            faults = db.instance_fault_get_by_instance_uuids(
                context, [inst.uuid for inst in instances])
            for inst in instances:
                newest = faults.get(inst.uuid)
                inst.fault = instance_fault_obj.InstanceFault._from_db_object(
                    context, instance_fault_obj.InstanceFault(), newest[0]) if newest else None
                inst.obj_reset_changes(['fault'])
        for name in set(expected_attrs or ()) & {'services', 'ec2_ids'}:
            for inst in instances:
                inst.obj_load_attr(name)
        instances.obj_reset_changes()
        return instances

    @base.remotable_classmethod
    def get_by_filters(cls, context, filters, sort_key='created_at', sort_dir='desc',
                       limit=None, marker=None, expected_attrs=None, use_slave=False,
                       sort_keys=None, sort_dirs=None):
        """Instances matching ``filters``, in ``sort_key`` order (or the first of
        ``sort_keys``: minisched sorts by one key, then id), paged by ``marker``."""
        if sort_keys:
            sort_key = sort_keys[0]
            sort_dir = sort_dirs[0] if sort_dirs else 'desc'
        return cls._make(context, db.instance_get_all_by_filters(
            context, filters, sort_key=sort_key, sort_dir=sort_dir, limit=limit, marker=marker),
            expected_attrs)

    @base.remotable_classmethod
    def get_by_host(cls, context, host, expected_attrs=None, use_slave=False):
        return cls._make(context, db.instance_get_all_by_host(context, host), expected_attrs)

    @base.remotable_classmethod
    def get_by_host_and_node(cls, context, host, node, expected_attrs=None):
        return cls._make(context, db.instance_get_all_by_host_and_node(context, host, node),
                         expected_attrs)

    @base.remotable_classmethod
    def get_by_host_and_not_type(cls, context, host, type_id=None, expected_attrs=None):
        return cls._make(context, db.instance_get_all_by_filters(
            context, {'host': host}, sort_key='id', sort_dir='asc',
            exclude={'instance_type_id': type_id}), expected_attrs)

    @base.remotable_classmethod
    def get_all(cls, context, expected_attrs=None):
        return cls._make(context, db.instance_get_all_by_filters(
            context, {}, sort_key='id', sort_dir='asc'), expected_attrs)

    @base.remotable_classmethod
    def get_hung_in_rebooting(cls, context, reboot_window, expected_attrs=None):
        """Instances still rebooting ``reboot_window`` seconds after their last update."""
        return cls._make(context, db.instance_get_all_hung_in_rebooting(
            context, reboot_window), expected_attrs)

    @base.remotable_classmethod
    def _get_active_by_window_joined(cls, context, begin, end=None, project_id=None,
                                     host=None, expected_attrs=None, use_slave=False,
                                     limit=None, marker=None):
        return cls._make(context, db.instance_get_active_by_window_joined(
            context, begin, end, project_id=project_id, host=host, limit=limit,
            marker=marker), expected_attrs)

    @classmethod
    def get_active_by_window_joined(cls, context, begin, end=None, project_id=None,
                                    host=None, expected_attrs=None, use_slave=False,
                                    limit=None, marker=None):
        """Instances not terminated before ``begin`` (nor launched after ``end``), deleted
        ones included, ordered by project and uuid; ``marker`` is the uuid of the last one
        of the previous page."""
        return cls._get_active_by_window_joined(
            context, begin, end=end, project_id=project_id, host=host,
            expected_attrs=expected_attrs, use_slave=use_slave, limit=limit, marker=marker)

    @base.remotable_classmethod
    def get_by_security_group_id(cls, context, security_group_id):
        raise exception.ObjectMethodNotSupported(
            objname='InstanceList', method='get_by_security_group_id',
            reason=_NO_SECURITY_GROUP_IDS)

    @base.remotable_classmethod
    def get_by_grantee_security_group_ids(cls, context, security_group_ids):
        raise exception.ObjectMethodNotSupported(
            objname='InstanceList', method='get_by_grantee_security_group_ids',
            reason=_NO_SECURITY_GROUP_IDS)

    @base.remotable_classmethod
    def get_uuids_by_host(cls, context, host):
        return db.instance_get_uuids_by_host(context, host)

    @base.remotable_classmethod
    def get_uuids_by_host_and_node(cls, context, host, node):
        return [row['uuid'] for row in db.instance_get_all_by_host_and_node(context, host,
                                                                            node)]

    @base.remotable_classmethod
    def get_uuids_by_hosts(cls, context, hosts):
        """``{host: [uuids of its instances]}`` for the hosts that have instances."""
        found = {}
        for row in db.instance_get_all_by_filters(context, {'host': list(hosts)},
                                                  sort_key='id', sort_dir='asc'):
            found.setdefault(row['host'], []).append(row['uuid'])
        return found

    @base.remotable_classmethod
    def get_count_by_vm_state(cls, context, project_id, user_id, vm_state):
        return db.instance_count(context, project_id, user_id=user_id,
                                 vm_state=vm_state)['instances']

    @base.remotable_classmethod
    def get_counts(cls, context, project_id, user_id=None):
        """Nova's quota usage: ``{'project': {'instances', 'cores', 'ram'}}`` (and ``'user'``
        with ``user_id``) of the live, not soft-deleted, not hidden instances."""
        counts = {'project': db.instance_count(context, project_id)}
        if user_id:
            counts['user'] = db.instance_count(context, project_id, user_id=user_id)
        return counts

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
