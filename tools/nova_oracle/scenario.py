"""Scenario (gen.py's JSON) to objects, for either side: ``classes`` names the object classes
of the implementation (Nova's ``objects`` namespace, or minisched's classes by the same names).
"""
import datetime
import traceback


def now_of(sc):
    return datetime.datetime.fromisoformat(sc['now'])


def _ago(now, seconds):
    return None if seconds is None else now - datetime.timedelta(seconds=seconds)


def host_states(sc, classes, new_state, service_binary):
    """The scenario's hosts, each built by ``new_state(host, node)`` and ``update``d."""
    now = now_of(sc)
    aggs = [classes.Aggregate(id=a['id'], name=a['name'], hosts=a['hosts'],
                              metadata=a['metadata'],
                              uuid='%08d-aaaa-4000-8000-000000000000' % a['id'])
            for a in sc['aggregates']]
    states = []
    for h in sc['hosts']:
        fields = dict(h['compute'], updated_at=now, numa_topology=None, pci_device_pools=None)
        fields['supported_hv_specs'] = [classes.HVSpec.from_list(s)
                                        for s in fields['supported_hv_specs']]
        s = h['service']
        service = {'host': h['host'], 'disabled': s['disabled'], 'forced_down': s['forced_down'],
                   'last_seen_up': _ago(now, s['last_seen_up_ago']),
                   'created_at': _ago(now, s['created_ago']), 'updated_at': None,
                   'binary': service_binary, 'id': 1, 'disabled_reason': None}
        state = new_state(h['host'], h['node'])
        state.update(classes.ComputeNode(**fields), service,
                     [a for a in aggs if h['host'] in a.hosts],
                     {u: classes.Instance(uuid=u) for u in h['instances']})
        states.append(state)
    return states


def request_spec(sc, classes):
    """The scenario's RequestSpec."""
    s = sc['spec']
    f = s['flavor']
    flavor = classes.Flavor(**{k: f[k] for k in ('name', 'flavorid', 'id', 'memory_mb', 'vcpus',
                                                 'root_gb', 'ephemeral_gb', 'swap',
                                                 'extra_specs')})
    image = classes.ImageMeta.from_dict({'id': s['image']['id'],
                                         'properties': s['image']['properties']})
    group = None
    if s['group']:
        g = s['group']
        group = classes.InstanceGroup(policy=g['policy'], members=g['members'], hosts=g['hosts'],
                                      policies=[g['policy']],
                                      uuid='eeeeeeee-0000-4000-8000-000000000000')
        # Both keep a group's rules as strings in _rules (Nova's 'rules' keyword does that).
        group._rules = {k: str(v) for k, v in g['rules'].items()}
    retry = None
    if s.get('retry'):
        retry = classes.SchedulerRetries(
            num_attempts=s['retry']['num_attempts'],
            hosts=classes.ComputeNodeList(objects=[
                classes.ComputeNode(host=h, hypervisor_hostname=n)
                for h, n in s['retry']['hosts']]))
    hints = {k: (v if isinstance(v, list) else [v]) for k, v in s['scheduler_hints'].items()}
    return classes.RequestSpec(
        flavor=flavor, image=image, project_id=s['project_id'], user_id=s['user_id'],
        availability_zone=s['availability_zone'], instance_uuid=s['instance_uuid'],
        scheduler_hints=hints, instance_group=group, num_instances=s['num_instances'],
        ignore_hosts=None, force_hosts=None, force_nodes=None, retry=retry,
        requested_destination=None)


def apply_conf(conf, sc, no_such_opt):
    """Reset ``conf`` and set the scenario's options (those this side does not have skipped)."""
    conf.reset()
    for group, values in sc['conf'].items():
        for name, value in values.items():
            group_name = None if group == 'DEFAULT' else group
            try:
                conf.clear_override(name, group=group_name)
                conf.set_override(name, value, group=group_name)
            except no_such_opt:
                pass


def outcome(function):
    """``{'ok': result}``, or ``{'error': type name, 'msg', 'tb'}`` if it raised."""
    try:
        return {'ok': function()}
    except Exception as exc:
        return {'error': type(exc).__name__, 'msg': str(exc)[:300],
                'tb': traceback.format_exc()[-800:]}


def plain_limits(limits):
    """The numeric limits a filter set, as plain floats (NUMA limit objects left out)."""
    return {k: float(v) for k, v in limits.items() if not hasattr(v, 'obj_to_primitive')}


def run_all(run, scenarios):
    results = []
    for sc in scenarios:
        try:
            results.append(run(sc))
        except Exception:
            results.append({'seed': sc['seed'], 'crash': traceback.format_exc()})
    return results
