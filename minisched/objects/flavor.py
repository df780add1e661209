"""Flavors: the size of an instance (API database)."""
from minisched import exception
from minisched.db import lazy
from minisched.objects import base
from minisched.objects import fields

api_db = lazy.module('minisched.db.api.api')


@base.MinischedObjectRegistry.register
class Flavor(base.MinischedTimestampObject, base.MinischedObject):
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

    def obj_load_attr(self, attrname):
        defaults = {'extra_specs': {}, 'projects': [], 'description': None, 'swap': 0,
                    'ephemeral_gb': 0, 'root_gb': 0, 'disabled': False, 'is_public': True,
                    'vcpu_weight': None, 'rxtx_factor': 1.0, 'name': None}
        if attrname not in defaults:
            raise exception.ObjectActionError(action='obj_load_attr',
                                              reason='attribute %s not lazy-loadable' % attrname)
        setattr(self, attrname, defaults[attrname])
        self.obj_reset_changes([attrname])

    @staticmethod
    def _from_db_object(context, flavor, db_flavor):
        for name in flavor.fields:
            if name == 'projects':
                continue
            value = db_flavor.get(name)
            if name == 'extra_specs':
                value = value or {}
            setattr(flavor, name, value)
        flavor.projects = []
        flavor._context = context
        flavor.obj_reset_changes()
        return flavor

    @base.remotable_classmethod
    def get_by_id(cls, context, id):
        return cls._from_db_object(context, cls(), api_db.flavor_get(context, id))

    @base.remotable_classmethod
    def get_by_flavor_id(cls, context, flavorid):
        return cls._from_db_object(context, cls(), api_db.flavor_get_by_flavor_id(context,
                                                                                   flavorid))

    @base.remotable_classmethod
    def get_by_name(cls, context, name):
        return cls._from_db_object(context, cls(), api_db.flavor_get_by_name(context, name))

    @base.remotable
    def create(self):
        updates = self.obj_get_changes()
        extra_specs = updates.pop('extra_specs', None)
        updates.pop('projects', None)
        self._from_db_object(self._context, self,
                             api_db.flavor_create(self._context, updates, extra_specs))

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
        api_db.flavor_destroy(self._context, self.flavorid)


@base.MinischedObjectRegistry.register
class FlavorList(base.ObjectListBase, base.MinischedObject):
    VERSION = '1.1'

    fields = {'objects': fields.ListOfObjectsField('Flavor')}

    @base.remotable_classmethod
    def get_all(cls, context):
        return base.obj_make_list(context, cls(context), Flavor, api_db.flavor_get_all(context))
