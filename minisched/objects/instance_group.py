"""Server groups: (anti-)affinity policies and their member instances."""
from oslo_serialization import jsonutils
from oslo_utils import uuidutils

from minisched import exception
from minisched.db import lazy
from minisched.objects import base
from minisched.objects import fields

api_db = lazy.module('minisched.db.api.api')

POLICIES = ('affinity', 'anti-affinity', 'soft-affinity', 'soft-anti-affinity')


@base.MinischedObjectRegistry.register
class InstanceGroup(base.MinischedPersistentObject, base.MinischedObject):
    """A server group. ``hosts`` is filled by the conductor for scheduling, not stored.

    Groups live in the API database, whose rows are hard-deleted: ``deleted`` is always
    False and ``deleted_at`` None, as Nova fills them for its API database groups.
    """

    VERSION = '1.11'

    fields = {
        'id': fields.IntegerField(),
        'user_id': fields.StringField(nullable=True),
        'project_id': fields.StringField(nullable=True),
        'uuid': fields.UUIDField(),
        'name': fields.StringField(nullable=True),
        'policies': fields.ListOfStringsField(nullable=True, read_only=True),
        'members': fields.ListOfStringsField(nullable=True),
        'hosts': fields.ListOfStringsField(nullable=True),
        'policy': fields.StringField(nullable=True),
        '_rules': fields.DictOfStringsField(),
    }

    @property
    def rules(self):
        if 'max_server_per_host' not in self._rules:
            return self._rules
        rules = dict(self._rules)
        rules['max_server_per_host'] = int(rules['max_server_per_host'])
        return rules

    def obj_load_attr(self, attrname):
        defaults = {'hosts': [], 'members': [], '_rules': {}, 'policy': None}
        if attrname == 'policies':
            self.policies = [self.policy] if self.obj_attr_is_set('policy') and \
                self.policy else []
        elif attrname in defaults:
            setattr(self, attrname, defaults[attrname])
        else:
            raise exception.ObjectActionError(action='obj_load_attr',
                                              reason='attribute %s not lazy-loadable' % attrname)
        self.obj_reset_changes([attrname])

    @staticmethod
    def _from_db_object(context, group, db_group):
        for name in ('id', 'user_id', 'project_id', 'uuid', 'name', 'policy',
                     'created_at', 'updated_at'):
            setattr(group, name, db_group.get(name))
        group.deleted = False
        group.deleted_at = None
        group.members = list(db_group.get('members') or [])
        rules = db_group.get('rules')
        group._rules = {k: str(v) for k, v in (jsonutils.loads(rules) if rules else {}).items()}
        group.policies = [group.policy] if group.policy else []
        group._context = context
        group.obj_reset_changes()
        return group

    @base.remotable_classmethod
    def get_by_uuid(cls, context, uuid):
        return cls._from_db_object(context, cls(), api_db.instance_group_get(context, uuid))

    @base.remotable_classmethod
    def get_by_instance_uuid(cls, context, instance_uuid):
        return cls._from_db_object(context, cls(),
                                   api_db.instance_group_get_by_instance(context, instance_uuid))

    @base.remotable_classmethod
    def get_by_name(cls, context, name):
        """The group of that name in the context's project."""
        return cls._from_db_object(context, cls(),
                                   api_db.instance_group_get_by_name(context, name))

    @base.remotable
    def refresh(self):
        """Set the fields this group has to what the database holds now."""
        current = self.__class__.get_by_uuid(self._context, self.uuid)
        for name in self.fields:
            if self.obj_attr_is_set(name) and getattr(self, name) != getattr(current, name):
                setattr(self, name, getattr(current, name))
        self.obj_reset_changes()

    @base.remotable
    def save(self):
        """Write the changed name, user, project and new members. As Nova's, ``hosts`` (never
        stored) and the policy (no API changes it) cannot be saved; members are only added."""
        updates = self.obj_get_changes()
        for name in ('hosts', 'policies', 'policy', '_rules'):
            if name in updates:
                raise exception.ObjectActionError(
                    action='save', reason='%s of a server group cannot be saved' % name)
        members = updates.pop('members', None)
        updates.pop('id', None)
        updates.pop('uuid', None)
        for name in ('created_at', 'updated_at', 'deleted', 'deleted_at'):
            updates.pop(name, None)
        if members is not None:
            api_db.instance_group_members_add(self._context, self.uuid, members)
        db_group = (api_db.instance_group_update(self._context, self.uuid, updates) if updates
                    else api_db.instance_group_get(self._context, self.uuid))
        self._from_db_object(self._context, self, db_group)

    @base.remotable
    def count_members_by_user(self, user_id):
        """How many of the group's live members belong to ``user_id``, in every cell."""
        return len(self._live_members({'user_id': user_id}))

    @base.remotable
    def create(self):
        if self.obj_attr_is_set('id'):
            raise exception.ObjectActionError(action='create', reason='already created')
        if self.obj_attr_is_set('policy') and self.policy not in POLICIES:
            raise exception.Invalid(reason='policy must be one of %s' % ', '.join(POLICIES))
        values = {name: getattr(self, name) for name in ('user_id', 'project_id', 'name',
                                                          'policy') if self.obj_attr_is_set(name)}
        values['uuid'] = self.uuid if self.obj_attr_is_set('uuid') else \
            uuidutils.generate_uuid()
        values['rules'] = jsonutils.dumps(self._rules if self.obj_attr_is_set('_rules') else {})
        members = self.members if self.obj_attr_is_set('members') else []
        self._from_db_object(self._context, self,
                             api_db.instance_group_create(self._context, values, members))

    @base.remotable_classmethod
    def add_members(cls, context, group_uuid, instance_uuids):
        api_db.instance_group_members_add(context, group_uuid, instance_uuids)
        return list(instance_uuids)

    @base.remotable
    def destroy(self):
        api_db.instance_group_destroy(self._context, self.uuid)

    @base.remotable
    def get_hosts(self, exclude=None):
        """Hosts of the group's live members, looked up in every cell (cell0 has none)."""
        instances = self._live_members({}, exclude)
        return sorted({inst.host for inst in instances if inst.host})

    def _live_members(self, filters, exclude=None):
        """The group's live member instances matching ``filters``, read in every cell (the
        cell list is admin-only; the members are still read with the caller's context)."""
        from minisched import context as ms_context
        from minisched.objects import cell_mapping
        from minisched.objects import instance as instance_obj
        uuids = list(set(self.members) - set(exclude or []))
        if not uuids:
            return []
        cells = [c for c in cell_mapping.CellMappingList.get_all(self._context.elevated())
                 if not c.is_cell0()] or [None]
        found = []
        for cell in cells:
            with ms_context.target_cell(self._context, cell) as cctxt:
                found.extend(instance_obj.InstanceList.get_by_filters(
                    cctxt, filters=dict(filters, uuid=uuids, deleted=False)))
        return found


@base.MinischedObjectRegistry.register
class InstanceGroupList(base.ObjectListBase, base.MinischedObject):
    VERSION = '1.8'

    fields = {'objects': fields.ListOfObjectsField('InstanceGroup')}

    @classmethod
    def _make(cls, context, rows):
        return base.obj_make_list(context, cls(context), InstanceGroup, rows)

    @base.remotable_classmethod
    def get_all(cls, context):
        """Every group the context may see (a user's context: its project's)."""
        return cls._make(context, api_db.instance_group_get_all(context))

    @base.remotable_classmethod
    def get_by_project_id(cls, context, project_id):
        return cls._make(context, api_db.instance_group_get_all(context, project_id=project_id))

    @base.remotable_classmethod
    def get_counts(cls, context, project_id, user_id=None):
        """``{'project': {'server_groups': n}}`` (and ``'user'`` with ``user_id``): the quota
        usage of server groups, as Nova counts it."""
        groups = api_db.instance_group_get_all(context, project_id=project_id)
        counts = {'project': {'server_groups': len(groups)}}
        if user_id:
            counts['user'] = {'server_groups': sum(1 for g in groups
                                                   if g['user_id'] == user_id)}
        return counts
