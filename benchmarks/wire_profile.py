"""What the Nova wire profile costs per message: the serializers alone, in this process.

``[DEFAULT] wire_profile = nova`` renames the keys of every object primitive, both ways
(:class:`minisched.messaging.wire.NamespaceSerializer`) around minisched's own serializer.
This bench times, with each profile, what both ends of a ``select_destinations`` serialize:
the client's RequestSpec out and in at the scheduler (a NUMA/PCI request of the pipeline
bench, with its image properties), then the answer, three Selections per instance for three
instances, out and in at the client; and a compute's instance list (the ``update_instance_info``
fanout of a host with :data:`INSTANCES` instances). The difference of the two profiles is the
profile's cost per message. No broker: the bus and the JSON encoding cost the same under both.
"""
import time

from benchmarks import common

#: Messages timed per figure (after WARMUP).
ROUNDS = 500
WARMUP = 50
#: Instances of the compute's list.
INSTANCES = 50


def _messages():
    """``[(name, client-to-server value, server-to-client value)]``."""
    from benchmarks import pipeline
    from minisched import objects
    from minisched.objects import instance as instance_obj
    from benchmarks import wire
    objects.register_all()
    conf = pipeline.numa_conf()
    spec, uuids = pipeline.make_numa_spec(4, conf)  # three instances
    selections = [[objects.Selection(
        service_host='host%d' % n, nodename='host%d' % n,
        compute_node_uuid='00000000-0000-4000-8000-%012x' % n,
        cell_uuid='00000000-0000-4000-8000-000000000000',
        limits=objects.SchedulerLimits(vcpu=16, memory_mb=32768, disk_gb=1000,
                                       numa_topology=None),
        allocation_request=None, allocation_request_version=None) for n in range(3)]
        for _ in uuids]
    instances = instance_obj.InstanceList(objects=[wire._instance()
                                                   for _ in range(INSTANCES)])
    return [('select_destinations (RequestSpec out, 3x3 Selections back)', spec, selections),
            ('instance list of %d (update_instance_info)' % INSTANCES, instances, None)]


def _time(profile, ctxt, out_value, back_value, rounds):
    """CPU seconds of ``rounds`` round trips through both ends' serializers of ``profile``."""
    from minisched import rpc
    from minisched.objects import base
    client = rpc.RequestContextSerializer(profile.serializer(base.MinischedObjectSerializer()))
    server_base = base.MinischedObjectSerializer()
    server_base.server_side = True
    server = rpc.RequestContextSerializer(profile.serializer(server_base))
    start = time.process_time()
    for _ in range(rounds):
        server.deserialize_entity(ctxt, client.serialize_entity(ctxt, out_value))
        if back_value is not None:
            client.deserialize_entity(ctxt, server.serialize_entity(ctxt, back_value))
    return time.process_time() - start


def run(rounds=ROUNDS, out=None):
    from minisched import context
    from minisched.messaging import wire
    ctxt = context.get_admin_context()
    figures = []
    for name, out_value, back_value in _messages():
        costs = {}
        for profile_name in (wire.MINISCHED, wire.NOVA):
            profile = wire.PROFILES[profile_name]
            _time(profile, ctxt, out_value, back_value, WARMUP)
            costs[profile_name] = _time(profile, ctxt, out_value, back_value,
                                        rounds) / rounds * 1e6
        added = costs[wire.NOVA] - costs[wire.MINISCHED]
        figures += [
            common.info('serializers, minisched profile: %s' % name,
                        costs[wire.MINISCHED], 'us'),
            common.info('serializers, nova profile: %s' % name, costs[wire.NOVA], 'us'),
            common.info('nova profile adds: %s' % name, added, 'us',
                        '%+.0f%% of the serializers\' CPU, %d rounds'
                        % (100.0 * added / costs[wire.MINISCHED], rounds)),
        ]
        if out:
            out('   %s: %.0f us minisched, %.0f us nova' % (name, costs[wire.MINISCHED],
                                                          costs[wire.NOVA]))
    return figures
