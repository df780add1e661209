"""The conductor API on the wire: a raw state report, and malformed calls from a real client."""
import json
import time

import oslo_messaging as messaging
import pika
import pytest
from oslo_config import cfg
from oslo_messaging._metrics import client as metrics
from oslo_messaging._tracing import client as tracing

from minisched import context
from minisched import exception
from minisched import objects
from minisched import rpc
from minisched.objects import base as objects_base
from tests.functional import base

pytestmark = [pytest.mark.functional, pytest.mark.timeout(90)]

objects.register_all()


def _is_state_report(message):
    """A remoted call on a Service whose report_count moved past 0: only reports do that."""
    objinst = message.get('args', {}).get('objinst')
    return (message.get('method') == 'object_action' and isinstance(objinst, dict) and
            objinst.get('minisched_object.name') == 'Service' and
            objinst.get('minisched_object.data', {}).get('report_count', 0) >= 1)


def test_state_report_is_an_object_action_save_of_a_service(cluster):
    cluster.start_conductor()
    connection = pika.BlockingConnection(base.pika_parameters(cluster.transport_url))
    try:
        channel = connection.channel()
        # The conductor declared the control exchange; a copy of each message for it lands in
        # our queue too, without taking anything from the conductor's own queue.
        channel.exchange_declare(cluster.control_exchange, passive=True)
        queue = channel.queue_declare('', exclusive=True).method.queue
        channel.queue_bind(queue, cluster.control_exchange, routing_key='conductor')
        cluster.start_compute('c1')

        deadline = time.monotonic() + 15
        for method, properties, body in channel.consume(queue, inactivity_timeout=1):
            assert time.monotonic() < deadline, 'no state report of c1 reached the exchange'
            if body is None:
                continue
            envelope = json.loads(body)
            message = json.loads(envelope['oslo.message'])
            if _is_state_report(message):
                break
        channel.cancel()
    finally:
        connection.close()

    assert properties.content_type == 'application/json'
    assert envelope['oslo.version'] == '2.0'
    assert message['version'] == '3.0'
    assert {'_msg_id', '_reply_q', '_unique_id', '_context_request_id'} <= set(message)
    args = message['args']
    assert args['objmethod'] == 'save'
    assert args['args'] == [] and args['kwargs'] == {}
    objinst = args['objinst']
    assert objinst['minisched_object.name'] == 'Service'
    assert objinst['minisched_object.namespace'] == 'minisched'
    assert objinst['minisched_object.version'] == objects.Service.VERSION
    assert objinst['minisched_object.data']['host'] == 'c1'
    assert objinst['minisched_object.data']['binary'] == 'minisched-compute'
    assert objinst['minisched_object.data']['report_count'] >= 1


@pytest.fixture
def conductor_client(cluster):
    """An RPC client of the ``conductor`` topic in this process, as a compute would build it."""
    conf = cfg.ConfigOpts()
    conf(['--config-file', cluster.conf_file], project='minisched-test',
         default_config_files=[], default_config_dirs=[])
    # oslo.messaging registers these on the global CONF only, and its client reads them.
    conf.register_opts(tracing.oslo_messaging_tracing, group='oslo_messaging_tracing')
    conf.register_opts(metrics.oslo_messaging_metrics, group='oslo_messaging_metrics')
    transport = messaging.get_rpc_transport(conf, allowed_remote_exmods=rpc.ALLOWED_EXMODS)
    client = messaging.get_rpc_client(transport, messaging.Target(topic='conductor',
                                                                  version='3.0'),
                                      serializer=rpc.get_serializer()).prepare(timeout=15)
    yield client
    transport.cleanup()


def _service(**changes):
    """A Service primitive as a compute sends it, with ``changes`` applied to the envelope."""
    primitive = objects.Service(host='c1', binary='minisched-compute').obj_to_primitive()
    primitive.update(changes)
    return primitive


def _versions(**overrides):
    return dict(objects_base.obj_tree_get_versions('Service'), **overrides)


def _action(objinst, objmethod='save', args=(), kwargs=None):
    return 'object_action', dict(objinst=objinst, objmethod=objmethod, args=args,
                                 kwargs={} if kwargs is None else kwargs)


def _class_action(objmethod, args=(), kwargs=None, objname='Service', versions=None):
    return 'object_class_action_versions', dict(
        objname=objname, objmethod=objmethod, object_versions=versions or _versions(),
        args=args, kwargs=kwargs or {})


def malformed_calls():
    """(case, (RPC method, its kwargs), exception the caller gets, part of its message)."""
    inval = exception.InvalidObjectRequest
    return [
        ('unknown object', _action(_service(**{'minisched_object.name': 'Nope'})),
         exception.UnsupportedObjectError, 'Unsupported object type Nope'),
        ('bad version', _action(_service(**{'minisched_object.version': '9.0'})),
         exception.IncompatibleObjectVersion, 'Version 9.0 of Service'),
        ('not remotable', _action(_service(), 'obj_reset_changes'),
         inval, "no remotable method 'obj_reset_changes'"),
        ('garbage objinst', _action('garbage'),
         inval, 'objinst must be a minisched object primitive'),
        ('primitive without data', _action({'minisched_object.name': 'Service',
                                            'minisched_object.version': '1.0'}),
         inval, 'malformed object primitive'),
        ('kwargs not a dict', _action(_service(), kwargs=['report_count']),
         inval, 'kwargs must be a dict'),
        ('unexpected kwarg', _action(_service(), kwargs={'report_count': 'many'}),
         inval, 'unexpected keyword argument'),
        ('class: unknown object', _class_action('get_by_id', (1,), objname='Nope',
                                                versions={'Nope': '1.0'}),
         exception.UnsupportedObjectError, 'Unsupported object type Nope'),
        ('class: bad version', _class_action('get_by_id', (1,), versions=_versions(
            Service='9.0')),
         exception.IncompatibleObjectVersion, 'Version 9.0 of Service'),
        ('class: not remotable', _class_action('obj_class_from_name', ('Service', '1.0')),
         inval, "no remotable method 'obj_class_from_name'"),
        ('class: wrong argument type', _class_action('get_by_id', ('one',)),
         exception.ServiceNotFound, 'one'),
        ('class: missing argument', _class_action('get_by_host_and_binary',
                                                  kwargs={'host': 'c1'}),
         inval, 'get_by_host_and_binary'),
    ]


def test_malformed_object_calls_get_clear_errors_and_the_conductor_keeps_serving(
        cluster, conductor_client):
    conductor = cluster.start_conductor()
    ctxt = context.get_admin_context()
    for case, (method, kwargs), expected, text in malformed_calls():
        with pytest.raises(expected) as caught:
            conductor_client.call(ctxt, method, **kwargs)
        assert text in str(caught.value), (case, str(caught.value))

    # Still serving: a valid remoted call answers.
    conductor_host = [host for binary, host in cluster.services()
                      if binary == 'minisched-conductor'][0]
    service = conductor_client.call(
        ctxt, 'object_class_action_versions', objname='Service',
        objmethod='get_by_host_and_binary', object_versions=_versions(),
        args=(conductor_host, 'minisched-conductor'), kwargs={})
    assert isinstance(service, objects.Service)
    assert service.binary == 'minisched-conductor'
    assert conductor.popen.poll() is None
