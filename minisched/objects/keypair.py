"""Key pairs as Nova's Instance carries them (Nova's KeyPair and KeyPairList).

Nova keeps key pairs in its API database and copies an instance's into the instance
(``instance_extra.keypairs``) for the metadata service. minisched has no key pair API: an
instance's key pairs are what the caller set, kept with the instance (its ``keypairs``
column) so that nothing a Nova client sends is lost. The remotable methods over Nova's
``key_pairs`` table answer as that table would if empty: no key pair of any name, none per
user; creating one is not supported.
"""
from oslo_utils import versionutils

from minisched import exception
from minisched.objects import base
from minisched.objects import fields

_NO_TABLE = 'minisched keeps no key pair table (key pairs are a Nova API resource)'


@base.MinischedObjectRegistry.register
class KeyPair(base.MinischedPersistentObject, base.MinischedObject):
    VERSION = '1.4'

    fields = {
        'id': fields.IntegerField(),
        'name': fields.StringField(nullable=False),
        'user_id': fields.StringField(nullable=True),
        'fingerprint': fields.StringField(nullable=True),
        'public_key': fields.StringField(nullable=True),
        # 1.2
        'type': fields.StringField(nullable=False),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        if versionutils.convert_version_to_tuple(target_version) < (1, 2):
            primitive.pop('type', None)

    @base.remotable_classmethod
    def get_by_name(cls, context, user_id, name, localonly=False):
        raise exception.KeypairNotFound(user_id=user_id, name=name)

    @base.remotable_classmethod
    def destroy_by_name(cls, context, user_id, name):
        raise exception.KeypairNotFound(user_id=user_id, name=name)

    @base.remotable
    def create(self):
        raise exception.ObjectMethodNotSupported(objname='KeyPair', method='create',
                                                 reason=_NO_TABLE)

    @base.remotable
    def destroy(self):
        raise exception.KeypairNotFound(user_id=self.user_id, name=self.name)


@base.MinischedObjectRegistry.register
class KeyPairList(base.ObjectListBase, base.MinischedObject):
    VERSION = '1.3'

    fields = {'objects': fields.ListOfObjectsField('KeyPair')}

    @base.remotable_classmethod
    def get_by_user(cls, context, user_id, limit=None, marker=None):
        if marker is not None:
            raise exception.MarkerNotFound(marker=marker)
        return cls(context, objects=[])

    @base.remotable_classmethod
    def get_count_by_user(cls, context, user_id):
        return 0
