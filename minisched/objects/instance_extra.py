"""The objects an instance carries in JSON columns of its row, read and written one at a time.

Nova keeps an instance's info cache, key pairs, tags, trusted certificates, CPU model,
device metadata, migration context and resources in tables of their own (mostly
``instance_extra``); minisched keeps one row per instance, with each of these objects as the
JSON of its primitive in a column of the same name (see the 0004 migration). The remotable
``get_by_instance_uuid`` of each such object reads its column here.
"""
from oslo_serialization import jsonutils

from minisched import exception
from minisched.db import lazy
from minisched.objects import base

db = lazy.module('minisched.db.main.api')


def decode(context, raw):
    """The object a column holds (None for NULL)."""
    if not raw:
        return None
    return base.MinischedObject.obj_from_primitive(jsonutils.loads(raw), context=context)


def encode(obj):
    """The column value of ``obj`` (NULL for None)."""
    return None if obj is None else jsonutils.dumps(obj.obj_to_primitive())


def load(context, instance_uuid, column):
    """The object in ``column`` of the instance; None when the column is NULL or there is
    no such instance (as Nova's ``instance_extra_get_by_instance_uuid`` finds no row)."""
    try:
        row = db.instance_get_by_uuid(context, instance_uuid)
    except exception.InstanceNotFound:
        return None
    return decode(context, row.get(column))


def store(context, instance_uuid, column, obj):
    """Write ``obj`` (None: NULL) to ``column`` of the instance."""
    db.instance_update(context, instance_uuid, {column: encode(obj)})
