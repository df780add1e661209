"""Helpers the conductor uses around scheduling (Nova's nova/scheduler/utils.py names)."""
import logging

from minisched import exception
from minisched.objects import instance_group as instance_group_obj

LOG = logging.getLogger(__name__)

#: Filter that must be enabled for each server group policy.
_POLICY_FILTERS = {
    'affinity': 'ServerGroupAffinityFilter',
    'anti-affinity': 'ServerGroupAntiAffinityFilter',
    'soft-affinity': 'ServerGroupSoftAffinityWeigher',
    'soft-anti-affinity': 'ServerGroupSoftAntiAffinityWeigher',
}


def populate_retry(filter_properties, instance_uuid, max_attempts):
    """Count one more build attempt; raise MaxRetriesExceeded past ``max_attempts``.

    Rescheduling is disabled (nothing recorded) with ``max_attempts == 1`` or exactly one
    forced host or node.
    """
    force_hosts = filter_properties.get('force_hosts', [])
    force_nodes = filter_properties.get('force_nodes', [])
    if max_attempts == 1 or len(force_hosts) == 1 or len(force_nodes) == 1:
        LOG.debug('Re-scheduling is disabled for instance %s', instance_uuid)
        return
    retry = filter_properties.setdefault('retry', {'num_attempts': 0, 'hosts': []})
    retry['num_attempts'] += 1
    exc_reason = retry.pop('exc_reason', None)
    if retry.get('exc'):
        LOG.error('Error from last host: %(last_host)s (node %(last_node)s): %(exc)s',
                  {'last_host': retry['hosts'][-1][0] if retry['hosts'] else None,
                   'last_node': retry['hosts'][-1][1] if retry['hosts'] else None,
                   'exc': retry['exc']})
        retry.pop('exc', None)
    if retry['num_attempts'] > max_attempts:
        raise exception.MaxRetriesExceeded(reason=(
            'Exceeded max scheduling attempts %(max_attempts)d for instance '
            '%(instance_uuid)s. Last exception: %(exc_reason)s' %
            {'max_attempts': max_attempts, 'instance_uuid': instance_uuid,
             'exc_reason': exc_reason}))


def populate_filter_properties(filter_properties, selection):
    """Record the chosen host in ``retry`` and its limits (unless hosts were forced)."""
    limits = selection.limits.to_dict() if selection.limits is not None else {}
    retry = filter_properties.get('retry')
    if retry:
        retry['hosts'].append([selection.service_host, selection.nodename])
    if not filter_properties.get('force_hosts'):
        filter_properties['limits'] = limits


def setup_instance_group(context, request_spec, enabled_filters, enabled_weighers=()):
    """Fill the request's group with its policy, members and their current hosts."""
    if request_spec is None or not request_spec.obj_attr_is_set('instance_uuid'):
        return
    try:
        group = instance_group_obj.InstanceGroup.get_by_instance_uuid(
            context, request_spec.instance_uuid)
    except exception.InstanceGroupNotFound:
        return
    needed = _POLICY_FILTERS.get(group.policy)
    if needed and needed not in list(enabled_filters) + list(enabled_weighers):
        raise exception.UnsupportedPolicyException(
            reason='%s is not configured for server group policy %s' % (needed, group.policy))
    hosts = group.get_hosts(exclude=[request_spec.instance_uuid])
    if request_spec.obj_attr_is_set('instance_group') and request_spec.instance_group:
        target = request_spec.instance_group
    else:
        target = request_spec.instance_group = instance_group_obj.InstanceGroup(
            uuid=group.uuid)
    target.hosts = list(hosts)
    target.policy = group.policy
    target.members = list(group.members)
    target._rules = dict(group._rules)
    if not target.obj_attr_is_set('uuid'):
        target.uuid = group.uuid


def parse_options(opts, sep='=', converter=str, name=''):
    """``[(key, converted value)]`` of the ``<key><sep><value>`` items of ``opts``, in order.

    Nova's ``nova.scheduler.utils.parse_options``: an item without the separator, with an
    empty key or a value ``converter`` rejects (ValueError) is left out, and all such items
    are named in one warning. Keys are kept as written (not stripped).
    """
    good, bad = [], []
    for opt in opts:
        key, seen_sep, value = opt.partition(sep)
        try:
            value = converter(value)
        except ValueError:
            key = value = None
        if key and seen_sep and value is not None:
            good.append((key, value))
        else:
            bad.append(opt)
    if bad:
        LOG.warning('Ignoring the invalid elements of the option %(name)s: %(options)s',
                    {'name': name, 'options': ', '.join(bad)})
    return good
