"""Flavors: the size of an instance (API database)."""
from oslo_utils import versionutils

from minisched import exception
from minisched.db import lazy
from minisched.objects import base
from minisched.objects import fields

api_db = lazy.module('minisched.db.api.api')

#: Fields an old primitive may lack, and what a flavor without them means (``projects`` is
#: read from the database instead, as Nova lazy-loads it).
_DEFAULTS = {'extra_specs': {}, 'description': None, 'swap': 0, 'ephemeral_gb': 0,
             'root_gb': 0, 'disabled': False, 'is_public': True, 'vcpu_weight': None,
             'rxtx_factor': 1.0, 'name': None}


@base.MinischedObjectRegistry.register
class Flavor(base.MinischedPersistentObject, base.MinischedObject):
    """Version 1.1 added ``save_projects`` and ``save_extra_specs``, 1.2 ``description``.

    ``deleted`` and ``deleted_at`` are always False and None: flavors are hard-deleted, and
    Nova keeps the two fields for its old cell-database flavors only.
    """

    VERSION = '1.2'

    fields = {
        'id': fields.IntegerField(),
        'name': fields.StringField(nullable=True),
        'memory_mb': fields.IntegerField(),
        'vcpus': fields.IntegerField(),
        'root_gb': fields.IntegerField(),
        'ephemeral_gb': fields.IntegerField(),
        'flavorid': fields.StringField(),
        'swap': fields.IntegerField(),
        'rxtx_factor': fields.FloatField(nullable=True, default=1.0),
        'vcpu_weight': fields.IntegerField(nullable=True),
        'disabled': fields.BooleanField(),
        'is_public': fields.BooleanField(),
        'extra_specs': fields.DictOfStringsField(),
        'projects': fields.ListOfStringsField(),
        'description': fields.StringField(nullable=True),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        if versionutils.convert_version_to_tuple(target_version) < (1, 2):
            primitive.pop('description', None)

    def obj_load_attr(self, attrname):
        if attrname == 'projects':
            self._load_projects()
            return
        if attrname not in _DEFAULTS:
            raise exception.ObjectActionError(action='obj_load_attr',
                                              reason='attribute %s not lazy-loadable' % attrname)
        setattr(self, attrname, _DEFAULTS[attrname])
        self.obj_reset_changes([attrname])

    @staticmethod
    def _from_db_object(context, flavor, db_flavor):
        """Set ``flavor`` from its row; ``projects`` only when the row has them (else they
        load on first use)."""
        for name in flavor.fields:
            if name in ('deleted', 'deleted_at') or (name == 'projects'
                                                     and name not in db_flavor):
                continue
            value = db_flavor.get(name)
            if name == 'extra_specs':
                value = value or {}
            setattr(flavor, name, value)
        flavor.deleted, flavor.deleted_at = False, None
        flavor._context = context
        flavor.obj_reset_changes()
        return flavor

    @base.remotable
    def _load_projects(self):
        self.projects = api_db.flavor_get_projects(self._context, self.flavorid)
        self.obj_reset_changes(['projects'])

    @base.remotable_classmethod
    def get_by_id(cls, context, id):
        return cls._from_db_object(context, cls(), api_db.flavor_get(context, id))

    @base.remotable_classmethod
    def get_by_flavor_id(cls, context, flavor_id, read_deleted=None):
        """``read_deleted`` is accepted as Nova does, and ignored as Nova does: a deleted
        flavor's row is gone."""
        return cls._from_db_object(context, cls(),
                                   api_db.flavor_get_by_flavor_id(context, flavor_id))

    @base.remotable_classmethod
    def get_by_name(cls, context, name):
        return cls._from_db_object(context, cls(), api_db.flavor_get_by_name(context, name))

    def _check_projects_unchanged(self, action):
        if 'projects' in self.obj_what_changed():
            raise exception.ObjectActionError(action=action, reason='projects modified')

    @base.remotable
    def add_access(self, project_id):
        """Give ``project_id`` access to this (private) flavor; reloads ``projects``."""
        self._check_projects_unchanged('add_access')
        api_db.flavor_add_project(self._context, self.id, project_id)
        self._load_projects()

    @base.remotable
    def remove_access(self, project_id):
        """Take the access of ``project_id`` away; reloads ``projects``."""
        self._check_projects_unchanged('remove_access')
        api_db.flavor_remove_project(self._context, self.id, project_id)
        self._load_projects()

    @base.remotable
    def save_projects(self, to_add=None, to_delete=None):
        """Give the projects of ``to_add`` access, take it from those of ``to_delete``."""
        for project_id in to_add or ():
            api_db.flavor_add_project(self._context, self.id, project_id)
        for project_id in to_delete or ():
            api_db.flavor_remove_project(self._context, self.id, project_id)
        self.obj_reset_changes(['projects'])

    @base.remotable
    def create(self):
        if self.obj_attr_is_set('id'):
            raise exception.ObjectActionError(action='create', reason='already created')
        updates = self.obj_get_changes()
        extra_specs = updates.pop('extra_specs', None)
        projects = updates.pop('projects', None)
        for name in ('deleted', 'deleted_at'):
            updates.pop(name, None)
        db_flavor = api_db.flavor_create(self._context, updates, extra_specs, projects)
        if projects is not None:
            db_flavor['projects'] = sorted(set(projects))
        self._from_db_object(self._context, self, db_flavor)

    @base.remotable
    def save_extra_specs(self, to_add=None, to_delete=None):
        specs = dict(self.extra_specs)
        specs.update(to_add or {})
        for key in to_delete or []:
            specs.pop(key, None)
        api_db.flavor_extra_specs_update(self._context, self.id, specs)
        self.extra_specs = specs
        self.obj_reset_changes(['extra_specs'])

    @base.remotable
    def destroy(self):
        """Delete this flavor: by ``id`` when set, else by ``flavorid`` (Nova's order)."""
        if 'id' in self:
            db_flavor = api_db.flavor_destroy(self._context, flavor_id=self.id)
        else:
            db_flavor = api_db.flavor_destroy(self._context, flavorid=self.flavorid)
        self._from_db_object(self._context, self, db_flavor)


@base.MinischedObjectRegistry.register
class FlavorList(base.ObjectListBase, base.MinischedObject):
    VERSION = '1.1'

    fields = {'objects': fields.ListOfObjectsField('Flavor')}

    @base.remotable_classmethod
    def get_all(cls, context, inactive=False, filters=None, sort_key='flavorid', sort_dir='asc',
                limit=None, marker=None):
        """The flavors ``context`` sees, filtered, sorted and paged as Nova's (see
        ``minisched.db.api.api.flavor_get_all``); ``inactive`` is accepted and ignored, as
        Nova ignores it: deleted flavors are gone."""
        return base.obj_make_list(context, cls(context), Flavor, api_db.flavor_get_all(
            context, filters=filters, sort_key=sort_key, sort_dir=sort_dir, limit=limit,
            marker=marker))
