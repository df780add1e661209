"""Security groups as Nova's RequestSpec and Instance carry them (Nova's SecurityGroup(List)).

minisched has no network service: a group is carried by name (and whatever else the caller
set) so that nothing a Nova client sends is lost, and the remotable methods Nova's objects have
over its ``security_groups`` table answer that minisched keeps no such table.
"""
from minisched import exception
from minisched.objects import base
from minisched.objects import fields

_NO_TABLE = 'minisched keeps no security group table (security groups live in Neutron)'


def _unsupported(objname, method):
    raise exception.ObjectMethodNotSupported(objname=objname, method=method, reason=_NO_TABLE)


@base.MinischedObjectRegistry.register
class SecurityGroup(base.MinischedPersistentObject, base.MinischedObject):
    VERSION = '1.2'

    fields = {
        'id': fields.IntegerField(),
        'name': fields.StringField(),
        'description': fields.StringField(),
        'user_id': fields.StringField(),
        'project_id': fields.StringField(),
        # 1.2: the Neutron group's uuid
        'uuid': fields.UUIDField(),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        if target_version is not None and tuple(
                int(x) for x in target_version.split('.')) < (1, 2):
            primitive.pop('uuid', None)

    @base.remotable_classmethod
    def get(cls, context, secgroup_id):
        _unsupported('SecurityGroup', 'get')

    @base.remotable_classmethod
    def get_by_name(cls, context, project_id, group_name):
        _unsupported('SecurityGroup', 'get_by_name')

    @base.remotable
    def in_use(self):
        _unsupported('SecurityGroup', 'in_use')

    @base.remotable
    def save(self):
        _unsupported('SecurityGroup', 'save')

    @base.remotable
    def refresh(self):
        _unsupported('SecurityGroup', 'refresh')


@base.MinischedObjectRegistry.register
class SecurityGroupList(base.ObjectListBase, base.MinischedObject):
    VERSION = '1.1'

    fields = {'objects': fields.ListOfObjectsField('SecurityGroup')}

    @classmethod
    def from_names(cls, names, context=None):
        """A list of groups known only by name, as Nova's API builds it for a boot request."""
        return cls(context, objects=[SecurityGroup(context, name=name) for name in names])

    def names(self):
        """The groups' names, in order (those set)."""
        return [group.name for group in self.objects if group.obj_attr_is_set('name')]

    @base.remotable_classmethod
    def get_all(cls, context):
        _unsupported('SecurityGroupList', 'get_all')

    @base.remotable_classmethod
    def get_by_project(cls, context, project_id):
        _unsupported('SecurityGroupList', 'get_by_project')

    @base.remotable_classmethod
    def get_by_instance(cls, context, instance):
        _unsupported('SecurityGroupList', 'get_by_instance')

    @base.remotable_classmethod
    def get_counts(cls, context, project_id, user_id=None):
        _unsupported('SecurityGroupList', 'get_counts')
