"""How much one create request may ask for: checked before anything is written.

Two bounds, both raising before the API database sees the request:

* ``[api] max_instances_per_request``: a request for more instances (Nova's ``max_count``)
  is refused with TooManyInstances unless its ``min_count`` fits, in which case this many
  are created, as Nova clamps a request to what the project's quota allows;
* the message that hands the builds to the conductor must fit ``[DEFAULT]
  rpc_max_message_size_mb``, the limit the conductor applies as the message arrives (a
  larger one is dropped there, unread: its builds would never start). Its size is one
  instance's share, measured as the wire encodes it (with a margin), times the count.
"""
from oslo_serialization import jsonutils

from minisched import exception
from minisched.objects import base as objects_base

_MIB = 1024 * 1024
#: Bytes of the message that do not grow with the count (envelope, context, other
#: arguments): a generous bound, the context of a user with many roles included.
_FIXED_BYTES = 64 * 1024
#: The share measured before the rows are written, times this, bounds the share in the
#: cast (the objects as sent carry their ids, timestamps and each name's suffix: 6% more
#: for a plain flavor, measured in tests/unit/compute/test_api.py).
_MARGIN = 1.15
_SERIALIZER = objects_base.MinischedObjectSerializer()


def allowed_count(conf, request):
    """How many instances ``request`` (a validated CreateRequest) gets: its count when within
    ``[api] max_instances_per_request``, else that maximum when ``min_count`` fits."""
    limit = conf.api.max_instances_per_request
    if request.count <= limit:
        return request.count
    if request.min_count <= limit:
        return limit
    raise exception.TooManyInstances(requested=request.count, allowed=limit)


def check_message_size(conf, context, build_request, spec, count):
    """Raise RequestTooLarge when ``count`` build requests and specs like these would make
    a cast larger than ``[DEFAULT] rpc_max_message_size_mb`` (0: no limit); else return the
    size it expects (bytes; None when not checked)."""
    limit_mb = conf.rpc_max_message_size_mb
    if not limit_mb:
        return None
    # The wire's encoding: the message is JSON held as a string in the JSON envelope.
    share = int(_MARGIN * len(jsonutils.dumps(jsonutils.dumps([
        _SERIALIZER.serialize_entity(context, build_request),
        _SERIALIZER.serialize_entity(context, spec)]))))
    size = share * count + _FIXED_BYTES
    if size > limit_mb * _MIB:
        most = max((limit_mb * _MIB - _FIXED_BYTES) // share, 0)
        raise exception.RequestTooLarge(count=count, size_mb=size / _MIB, limit_mb=limit_mb,
                                        most=most)
    return size
