"""Instance tags (Nova's Tag and TagList), kept in the instance's ``tags`` column.

Nova keeps tags in a ``tags`` table keyed by resource id (an instance's uuid); minisched
keeps an instance's tags with the instance, as the JSON of its TagList, so that the tags a
Nova client sends with a build survive and Nova's tag methods work on them.
"""
from minisched import exception
from minisched.db import lazy
from minisched.objects import base
from minisched.objects import fields
from minisched.objects import instance_extra

db = lazy.module('minisched.db.main.api')

#: Nova's limit of tags per instance (``instance.MAX_TAG_COUNT``).
MAX_TAG_COUNT = 50


def tag_list(context, resource_id, names):
    return TagList(context, objects=[Tag(context, resource_id=resource_id, tag=name)
                                     for name in names])


def _names(raw):
    """The tag names of a ``tags`` column (the JSON of a TagList primitive)."""
    tags = instance_extra.decode(None, raw)
    return [tag.tag for tag in tags] if tags is not None else []


def _update(context, resource_id, change):
    """Apply ``change(names) -> names`` to the instance's tags, atomically; the new names."""
    def write(raw):
        names = change(_names(raw))
        if len(names) > MAX_TAG_COUNT:
            raise exception.Invalid(reason='an instance has at most %d tags' % MAX_TAG_COUNT)
        return instance_extra.encode(tag_list(None, resource_id, names))
    return _names(db.instance_column_update(context, resource_id, 'tags', write))


@base.MinischedObjectRegistry.register
class Tag(base.MinischedObject):
    VERSION = '1.1'

    fields = {
        'resource_id': fields.StringField(),
        'tag': fields.StringField(),
    }

    @base.remotable
    def create(self):
        _update(self._context, self.resource_id,
                lambda names: names if self.tag in names else names + [self.tag])

    @base.remotable_classmethod
    def destroy(cls, context, resource_id, name):
        def remove(names):
            if name not in names:
                raise exception.InstanceTagNotFound(instance_id=resource_id, tag=name)
            return [n for n in names if n != name]
        _update(context, resource_id, remove)

    @base.remotable_classmethod
    def exists(cls, context, resource_id, name):
        return name in _names(db.instance_get_by_uuid(context, resource_id).get('tags'))


@base.MinischedObjectRegistry.register
class TagList(base.ObjectListBase, base.MinischedObject):
    VERSION = '1.1'

    fields = {'objects': fields.ListOfObjectsField('Tag')}

    @base.remotable_classmethod
    def get_by_resource_id(cls, context, resource_id):
        return tag_list(context, resource_id,
                        _names(db.instance_get_by_uuid(context, resource_id).get('tags')))

    @base.remotable_classmethod
    def create(cls, context, resource_id, tags):
        """Replace the instance's tags with ``tags``."""
        return tag_list(context, resource_id,
                        _update(context, resource_id, lambda names: list(dict.fromkeys(tags))))

    @base.remotable_classmethod
    def destroy(cls, context, resource_id):
        _update(context, resource_id, lambda names: [])
