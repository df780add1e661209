"""Messages delivered twice build once: the idempotency half of minisched's delivery contract.

RabbitMQ gives at-least-once delivery to minisched's durable queues
(doc/source/admin/delivery.rst): a publish whose confirm was lost is repeated, a delivery whose
ack was lost comes again. The handlers of the build messages must then do their work once.
These tests send the same message twice on purpose, through the real conductor and computes:

* ``schedule_and_build_instances`` twice: one instance, created once, built once;
* ``build_and_run_instance`` again for an instance that is already ACTIVE (a late duplicate,
  as after a compute restart) and again for the same attempt (an early duplicate): the
  instance is not spawned again and keeps its host.
"""

import pytest

from minisched.conductor import rpcapi as conductor_rpcapi
from tests.functional import base
from tests.functional import build_helpers

pytestmark = [pytest.mark.functional, pytest.mark.both_backends, pytest.mark.timeout(180)]

UNIT = {'vcpus': 1, 'memory_mb': 512, 'root_gb': 1}
COMPUTES = {'c1': {'vcpus': 8, 'memory_mb': 8192, 'local_gb': 100},
            'c2': {'vcpus': 8, 'memory_mb': 8192, 'local_gb': 100}}


class _TwiceComputeTaskAPI(conductor_rpcapi.ComputeTaskAPI):
    """Publishes every build request twice, as a publisher retrying a lost confirm does."""

    def schedule_and_build_instances(self, context, **kwargs):
        super().schedule_and_build_instances(context, **kwargs)
        super().schedule_and_build_instances(context, **kwargs)


@pytest.fixture
def client(request, cluster):
    client = build_helpers.Client(cluster)
    request.addfinalizer(client.close)
    build_helpers.start(cluster, COMPUTES)
    return client


def rows(cluster, sql, uuid):
    return cluster.query(sql, uuid=uuid)


def test_a_build_request_published_twice_is_built_once(cluster, client):
    client.api.compute_task_api = _TwiceComputeTaskAPI(client.conf)
    flavor = client.flavor('unit', **UNIT)
    uuids = client.boot(flavor, num_instances=2)
    built = client.wait_built(uuids)
    for uuid in uuids:
        assert built[uuid].vm_state == 'active'
        assert len(rows(cluster, 'SELECT id FROM instances WHERE uuid = :uuid', uuid)) == 1
        assert len(rows(cluster, "SELECT id FROM instance_actions WHERE instance_uuid = :uuid "
                                 "AND action = 'create'", uuid)) == 1
    base.wait_for(lambda: 'taken by another delivery' in cluster.log('conductor')
                  or 'already exists in its cell' in cluster.log('conductor'),
                  message='the conductor to log the second delivery')
    assert build_helpers.wait_spawns(cluster, COMPUTES, uuids) == dict.fromkeys(uuids, 1)
    # Only the builds of one delivery reached the computes.
    nodes = client.nodes()
    assert sum(node['vcpus_used'] for node in nodes.values()) == 2


def test_a_repeated_compute_build_message_does_not_spawn_again(cluster, client):
    flavor = client.flavor('unit', **UNIT)
    uuid, = client.boot(flavor)
    instance = client.wait_built([uuid])[uuid]
    assert instance.vm_state == 'active'
    host = instance.host
    # The repeated message carries the original request's context (its action's request id).
    ctxt = client.context()
    ctxt.request_id, = [row['request_id'] for row in rows(
        cluster, 'SELECT request_id FROM instance_actions WHERE instance_uuid = :uuid', uuid)]
    for attempt, expected in ((1, 'Ignoring a second delivery of build attempt 1 of '
                                  'instance %s' % uuid),
                              (7, 'Not building instance %s' % uuid)):
        client.api.compute_rpcapi.build_and_run_instance(
            ctxt, instance=instance, host=host, image={}, request_spec=None,
            filter_properties={'retry': {'num_attempts': attempt, 'hosts': []}},
            admin_password=None, injected_files=[], requested_networks=None,
            security_groups=[], block_device_mapping=[], node=instance.node, limits=None,
            host_list=[])
        base.wait_for(lambda: expected in cluster.log(host),
                      message='compute %s to refuse the repeated build' % host)
    after = client.get(uuid)
    assert (after.vm_state, after.task_state, after.host) == ('active', None, host)
    assert build_helpers.wait_spawns(cluster, COMPUTES, [uuid]) == {uuid: 1}
    assert client.nodes()[host]['vcpus_used'] == 1
