"""The echo server's endpoints (``benchmarks.echo_server``), importable without eventlet.

``echo`` returns what it is sent. ``select_destinations`` (API 4.5) answers without
scheduling: the request is decoded as the scheduler decodes it, and the answer is one list of
Selections per instance (the chosen host and ``[scheduler] max_attempts - 1`` alternates when
asked), built once. That call is the wire floor of a select_destinations: the same messages
both ways, no decision.
"""
import oslo_messaging as messaging

TOPIC = 'bench_echo'


class EchoEndpoint:
    target = messaging.Target(version='1.0')

    def echo(self, ctxt, payload=None):
        """Return ``payload`` as received (deserialized, then serialized again)."""
        return payload


class WireFloorEndpoint:
    """``select_destinations`` with the scheduler's arguments and answer, but no scheduling."""

    target = messaging.Target(version='4.5')

    def __init__(self, conf):
        from minisched.objects import request_spec
        from minisched.objects import selection
        limits = request_spec.SchedulerLimits(memory_mb=98304, disk_gb=2048, vcpu=None,
                                              numa_topology=None)
        self._selections = [
            selection.Selection(compute_node_uuid='00000000-0000-4000-8000-%012x' % n,
                                service_host='floor%d' % n, nodename='floor%d' % n,
                                cell_uuid='11111111-0000-4000-8000-000000000000',
                                limits=limits, allocation_request='null',
                                allocation_request_version=None, availability_zone=None)
            for n in range(conf.scheduler.max_attempts)]

    def select_destinations(self, ctxt, request_spec=None, filter_properties=None,
                            spec_obj=None, instance_uuids=None, return_objects=False,
                            return_alternates=False):
        count = len(instance_uuids) if instance_uuids else spec_obj.num_instances
        chosen = self._selections if return_alternates else self._selections[:1]
        return [list(chosen) for _ in range(count)]
