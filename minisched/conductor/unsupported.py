"""The ``compute_task`` methods of Nova's API (up to 1.26) that minisched does not implement.

Each is an endpoint method of Nova's name, so that a message for it is answered, never
dropped: a call gets :class:`~minisched.exception.NotSupported` naming the method (a Nova
client catches ``nova.exception.NotSupported`` under the Nova wire profile), and every
message, call or cast, leaves one ERROR line with its request id and instance. The
arguments are not decoded (:func:`undecoded`): a Migration or a volume, objects minisched
does not have, would otherwise be refused as malformed before the method could say why.
"""
import logging

import oslo_messaging as messaging

from minisched import exception

LOG = logging.getLogger(__name__)

#: Method -> the compute_task version that added it (or its current arguments) in Nova.
METHODS = {
    'migrate_server': '1.20',
    'live_migrate_instance': '1.15',
    'unshelve_instance': '1.14',
    'rebuild_instance': '1.25',
    'cache_images': '1.21',
    'confirm_snapshot_based_resize': '1.22',
    'revert_snapshot_based_resize': '1.23',
    'attach_volume': '1.26',
}

REASON = ('minisched schedules and builds instances; move, rebuild, shelve, image cache '
          'and volume operations have no implementation here')


def undecoded(method):
    """Mark an endpoint method that takes its arguments as they arrived (primitives)."""
    method.undecoded = True
    return method


def _refuse(name):
    @undecoded
    def method(self, context, **kwargs):
        instance = kwargs.get('instance')
        if isinstance(instance, dict):
            instance = instance.get('nova_object.data', instance.get(
                'minisched_object.data', {})).get('uuid')
        LOG.error('compute_task %s (request %s, instance %s) is not supported by minisched; '
                  'nothing was done.', name, getattr(context, 'request_id', None), instance)
        try:
            raise exception.NotSupported(method='compute_task.%s' % name, reason=REASON)
        except exception.NotSupported:
            raise messaging.ExpectedException() from None

    method.__name__ = method.__qualname__ = name
    method.__doc__ = 'Nova %s (compute_task %s): answered with NotSupported.' % (
        name, METHODS[name])
    return method


class UnsupportedTasks:
    """The methods of :data:`METHODS`, each refusing its message (mixed into the
    ``compute_task`` endpoint)."""


for _name in METHODS:
    setattr(UnsupportedTasks, _name, _refuse(_name))
