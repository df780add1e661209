"""Unmodified Nova 34 RPC clients in a process of their own, driven by JSON lines.

Run as ``python -m tests.nova_compat.nova_rpc_client NOVA_CONF``, where ``NOVA_CONF`` is a
``nova.conf`` naming the message bus (``[DEFAULT] transport_url``; Nova's own defaults for
everything else: exchange ``nova``, transient queues). Nova registers its options on
``cfg.CONF`` and its objects in oslo.versionedobjects' registry at import, as minisched does,
so nothing of minisched is imported here: this is what a Nova service would run.

Each line on stdin is a command ``{"op": ..., ...}``; each answer is one line on stdout,
``{"ok": <result>}`` or ``{"error": {"module", "class", "bases", "message"}}`` (the class of
the exception Nova's client raised, and the names of its bases). The operations:

``spec``
    The primitive of the RequestSpec that Nova's ``RequestSpec.from_components`` builds from
    the command's ``request`` (see :func:`_spec`), as Nova's serializer sends it.
``select``
    ``SchedulerAPI.select_destinations`` of that RequestSpec, with objects and alternates:
    the Selection objects' fields, hosts first.
``update_aggregates``, ``update_instance_info``, ``sync_instance_info``
    Nova's fanout casts to the schedulers (``SchedulerQueryClient``).
``build``
    ``ComputeAPI.build_and_run_instance`` (compute RPC 6.x) of the Instance whose Nova
    primitive the command carries, to ``host``, in the request ``request_id`` (whose
    ``create`` action the instance has, as the API and the conductor leave it).
"""
import json
import sys
import traceback


def _setup(conf_file):
    from nova import config
    from nova import objects
    objects.register_all()
    config.parse_args(['nova-rpc-client', '--config-file', conf_file], configure_db=False)


def _context(request_id=None):
    """An admin request of project ``admin``; ``request_id``: the request an API began (a
    build's events are recorded under the instance action of that request)."""
    from nova import context
    return context.RequestContext(user_id='admin', project_id='admin', is_admin=True,
                                  roles=['admin'], request_id=request_id)


def _flavor(values):
    from nova import objects
    values = dict(values)
    values.setdefault('extra_specs', {})
    for name, default in (('ephemeral_gb', 0), ('swap', 0), ('rxtx_factor', 1.0),
                          ('vcpu_weight', 0), ('disabled', False), ('is_public', True),
                          ('description', None)):
        values.setdefault(name, default)
    return objects.Flavor(**values)


def _spec(ctxt, request):
    """Nova's RequestSpec for ``request``: ``instance_uuid``, ``flavor`` (Flavor fields),
    ``image`` (an image dict with ``properties``), ``pci`` (InstancePCIRequest specs),
    ``group`` (``uuid``, ``policy``, ``hosts``), ``hints`` (scheduler hints),
    ``availability_zone``. The NUMA topology is what Nova's ``numa_get_constraints`` makes
    of the flavor and image, as the API does."""
    from nova import objects
    from nova.virt import hardware
    flavor = _flavor(request['flavor'])
    image = dict(request.get('image') or {'properties': {}})
    image_meta = objects.ImageMeta.from_dict(image)
    numa = hardware.numa_get_constraints(flavor, image_meta)
    pci = objects.InstancePCIRequests(
        instance_uuid=request['instance_uuid'],
        requests=[objects.InstancePCIRequest(count=each.get('count', 1), spec=each['spec'],
                                             alias_name=each.get('alias_name'))
                  for each in request.get('pci', ())])
    group = None
    if request.get('group'):
        g = request['group']
        group = objects.InstanceGroup(uuid=g['uuid'], name=g.get('name', 'group'),
                                      policy=g['policy'], rules={}, members=[],
                                      hosts=list(g.get('hosts', ())),
                                      project_id='admin', user_id='admin')
    filter_properties = {'scheduler_hints': request.get('hints') or {}}
    return objects.RequestSpec.from_components(
        ctxt, request['instance_uuid'], image, flavor, numa, pci, filter_properties,
        group, request.get('availability_zone'), project_id='admin', user_id='admin')


def _selection(selection):
    fields = {name: getattr(selection, name) for name in selection.fields
              if selection.obj_attr_is_set(name) and name != 'limits'}
    if selection.obj_attr_is_set('limits') and selection.limits is not None:
        fields['limits'] = selection.limits.to_dict()
    fields['_class'] = '%s.%s' % (type(selection).__module__, type(selection).__name__)
    return fields


def _primitive(ctxt, obj):
    from nova.objects import base
    return base.NovaObjectSerializer().serialize_entity(ctxt, obj)


def _run(command):
    from nova.compute import rpcapi as compute_rpcapi
    from nova import objects
    from nova.objects import base
    from nova.scheduler.client import query
    from nova.scheduler import rpcapi as scheduler_rpcapi
    ctxt = _context(command.get('request_id'))
    op = command['op']
    if op == 'spec':
        return _primitive(ctxt, _spec(ctxt, command['request']))
    if op == 'select':
        spec = _spec(ctxt, command['request'])
        chosen = scheduler_rpcapi.SchedulerAPI().select_destinations(
            ctxt, spec, [command['request']['instance_uuid']], return_objects=True,
            return_alternates=True)
        return [[_selection(s) for s in alternates] for alternates in chosen]
    client = query.SchedulerQueryClient()
    if op == 'update_aggregates':
        aggregates = [objects.Aggregate(id=a['id'], uuid=a['uuid'], name=a['name'],
                                        hosts=a['hosts'], metadata=a['metadata'])
                      for a in command['aggregates']]
        client.update_aggregates(ctxt, aggregates)
        return None
    if op == 'update_instance_info':
        instances = objects.InstanceList(objects=[
            objects.Instance(uuid=uuid, host=command['host'], node=command['host'])
            for uuid in command['instance_uuids']])
        client.update_instance_info(ctxt, command['host'], instances)
        return None
    if op == 'sync_instance_info':
        client.sync_instance_info(ctxt, command['host'], command['instance_uuids'])
        return None
    if op == 'build':
        instance = base.NovaObjectSerializer().deserialize_entity(ctxt, command['instance'])
        spec = _spec(ctxt, command['request'])
        compute_rpcapi.ComputeAPI().build_and_run_instance(
            ctxt, instance, command['host'], image=command['request'].get('image') or {},
            request_spec=spec, filter_properties={}, node=command['host'], limits=None,
            host_list=[], accel_uuids=[])
        return {'instance_class': '%s.%s' % (type(instance).__module__,
                                             type(instance).__name__),
                'instance_version': instance.VERSION}
    raise ValueError('unknown op %r' % op)


def _error(exc):
    cls = type(exc)
    return {'module': cls.__module__, 'class': cls.__name__,
            'bases': ['%s.%s' % (b.__module__, b.__name__) for b in cls.__mro__[1:]],
            'message': str(exc).splitlines()[0] if str(exc) else '',
            'traceback': traceback.format_exc()[-3000:]}


def main(argv):
    _setup(argv[1])
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing but answers on the answer channel
    out.write(json.dumps({'ok': 'ready'}) + '\n')
    out.flush()
    for line in sys.stdin:
        try:
            answer = {'ok': _run(json.loads(line))}
        except Exception as exc:
            answer = {'error': _error(exc)}
        out.write(json.dumps(answer, default=str) + '\n')
        out.flush()


if __name__ == '__main__':
    main(sys.argv)
