"""The RPC tap without a broker (``minisched.messaging.tap_events``, and ``tap``'s URL handling
and CLI): decoding envelopes, summaries, call/reply pairing, CLI."""
import argparse
import io
import json
import zlib

import pytest
from oslo_config import cfg

from minisched import context, objects
from minisched.messaging import tap
from minisched.messaging import tap_events
from minisched.objects import base as obj_base
from tests.unit import base

objects.register_all()


manage_rpc = base.import_without_eventlet('minisched.cmd.manage_rpc')

MSG_ID = '0f1e2d3c4b5a69788796a5b4c3d2e1f0'
REPLY_Q = 'reply_4a1b6e3c9d2f48a7b5c0e1d2f3a4b5c6'
REQUEST_ID = 'req-5b0e7c1a-2d3f-4e5a-9b8c-7d6e5f4a3b2c'
INSTANCE_UUID = '6f1c2b3a-4d5e-4f60-8a9b-0c1d2e3f4a5b'


def context_keys(**extra):
    keys = {'_context_user': None, '_context_tenant': None, '_context_project': None,
            '_context_domain': None, '_context_user_domain': None,
            '_context_project_domain': None, '_context_is_admin': True,
            '_context_read_only': False, '_context_show_deleted': False,
            '_context_auth_token': None, '_context_request_id': REQUEST_ID,
            '_context_global_request_id': None, '_context_resource_uuid': None,
            '_context_roles': ['admin'], '_context_user_identity': '- - - - -',
            '_context_is_admin_project': True, '_context_system_scope': None,
            '_context_user_id': None, '_context_project_id': None,
            '_context_read_deleted': 'no', '_context_remote_address': None,
            '_context_timestamp': '2024-05-02T10:11:12.123456', '_context_quota_class': None,
            '_context_user_name': None, '_context_service_catalog': [],
            '_context_project_name': None}
    keys.update(extra)
    return keys


def envelope(message):
    """The AMQP body oslo.messaging's rabbit driver publishes for ``message``."""
    return json.dumps({'oslo.version': '2.0',
                       'oslo.message': json.dumps(message)}).encode('utf-8')


def primitive(name, version, data, changes=None, ns='minisched_object'):
    prim = {ns + '.name': name, ns + '.namespace': ns.split('_')[0], ns + '.version': version,
            ns + '.data': data}
    if changes:
        prim[ns + '.changes'] = changes
    return prim


def flavor_prim():
    return primitive('Flavor', '1.2', {'id': 1, 'name': 'm1.tiny', 'memory_mb': 512,
                                       'vcpus': 1, 'root_gb': 1, 'ephemeral_gb': 0,
                                       'flavorid': '1', 'swap': 0, 'extra_specs': {}})


def request_spec_prim():
    image = primitive('ImageMeta', '1.8', {'name': 'cirros', 'properties': primitive(
        'ImageMetaProps', '1.20', {'hw_architecture': 'x86_64'})})
    return primitive('RequestSpec', '1.11', {
        'flavor': flavor_prim(), 'image': image, 'num_instances': 1, 'project_id': 'p1',
        'instance_uuid': INSTANCE_UUID, 'ignore_hosts': None, 'force_hosts': None,
        'scheduler_hints': {'group': ['g1']}, 'is_bfv': False})


def selection_prim(host):
    return primitive('Selection', '1.1', {
        'compute_node_uuid': INSTANCE_UUID, 'service_host': host, 'nodename': host,
        'cell_uuid': '00000000-0000-0000-0000-000000000000',
        'limits': primitive('SchedulerLimits', '1.0', {'vcpu': None, 'memory_mb': 1024}),
        'allocation_request': 'null', 'allocation_request_version': None})


def select_destinations_call():
    message = {'method': 'select_destinations', 'version': '4.5',
               'args': {'spec_obj': request_spec_prim(), 'instance_uuids': [INSTANCE_UUID],
                        'return_objects': True, 'return_alternates': True},
               '_msg_id': MSG_ID, '_reply_q': REPLY_Q, '_timeout': None,
               '_unique_id': 'a' * 32}
    message.update(context_keys())
    return envelope(message)


def reply(result=None, failure=None, ending=True, msg_id=MSG_ID):
    return envelope({'result': result, 'failure': failure, 'ending': ending,
                     '_msg_id': msg_id, '_unique_id': 'b' * 32})


def decoder():
    return tap_events.Decoder('minisched', tap_events.DEFAULT_TOPICS)


# -- envelopes


def test_decode_body_unwraps_the_2_0_envelope():
    body = envelope({'method': 'ping', 'args': {'arg': 1}, 'version': '1.0'})
    assert tap_events.decode_body(body) == {'method': 'ping', 'args': {'arg': 1}, 'version': '1.0'}


def test_decode_body_takes_a_dict_without_envelope_keys_as_the_message():
    assert tap_events.decode_body(b'{"method": "ping", "args": {}}') == {'method': 'ping',
                                                                      'args': {}}


def test_decode_body_rejects_other_envelope_versions_and_garbage():
    with pytest.raises(tap_events.UndecodableMessage, match='envelope version 3.0'):
        tap_events.decode_body(json.dumps({'oslo.version': '3.0', 'oslo.message': '{}'}))
    with pytest.raises(tap_events.UndecodableMessage, match='envelope version 2.1'):
        tap_events.decode_body(json.dumps({'oslo.version': '2.1', 'oslo.message': '{}'}))
    for body in (b'\xff\xfe', b'not json', b'[1, 2]',
                 json.dumps({'oslo.version': '2.0', 'oslo.message': '[1]'})):
        with pytest.raises(tap_events.UndecodableMessage):
            tap_events.decode_body(body)


def test_decode_body_undoes_kombu_compression():
    body = zlib.compress(envelope({'method': 'ping', 'args': {}}))
    message = tap_events.decode_body(body, {'compression': 'application/x-gzip'})
    assert message['method'] == 'ping'
    with pytest.raises(tap_events.UndecodableMessage, match='unknown compression'):
        tap_events.decode_body(body, {'compression': 'application/x-snappy'})


# -- summaries


def test_summarize_request_spec_shows_flavor_and_num_instances():
    assert tap_events.summarize(request_spec_prim()) == \
        'RequestSpec 1.11 flavor=512MB/1vcpu num_instances=1'


def test_summarize_object_with_changes():
    service = primitive('Service', '1.22', {'id': 3, 'host': 'cmp1',
                                            'binary': 'minisched-compute', 'report_count': 7},
                        changes=['report_count'])
    assert tap_events.summarize(service) == \
        'Service 1.22 host=cmp1 binary=minisched-compute changes=[report_count]'
    many = primitive('Service', '1.22', {}, changes=['a', 'b', 'c', 'd', 'e', 'f'])
    assert tap_events.summarize(many) == 'Service 1.22 changes=[a,b,c,d,+2]'


def test_summarize_other_namespaces_and_unknown_objects():
    nova = primitive('Instance', '2.4', {'uuid': INSTANCE_UUID, 'host': 'cmp1'},
                     ns='nova_object')
    assert tap_events.summarize(nova) == 'Instance 2.4 uuid=6f1c2b3a... host=cmp1'
    odd = primitive('Gadget', '1.0', {'name': 'x', 'size': 3})
    assert tap_events.summarize(odd) == 'Gadget 1.0 name=x'
    assert tap_events.summarize(flavor_prim()) == 'Flavor 1.2 name=m1.tiny size=512MB/1vcpu'


def test_summarize_lists_by_length_and_uniform_elements():
    assert tap_events.summarize([]) == '[]'
    assert tap_events.summarize([1, 2, 3]) == 'list(3)'
    assert tap_events.summarize([[selection_prim('a'), selection_prim('b')]]) == \
        'list(1 x list(2 x Selection 1.1))'
    assert tap_events.summarize([selection_prim('a'), flavor_prim()]) == 'list(2)'
    assert tap_events.summarize([{'a': 1}, {'b': 2}]) == 'list(2 x dict)'
    object_list = primitive('ServiceList', '1.19', {'objects': [
        primitive('Service', '1.22', {'host': 'h%d' % i}) for i in range(3)]})
    assert tap_events.summarize(object_list) == 'ServiceList 1.19 objects=list(3 x Service 1.22)'


def test_summarize_scalars_and_dicts():
    assert tap_events.summarize('save') == 'save'
    assert tap_events.summarize('') == "''"
    assert tap_events.summarize(INSTANCE_UUID) == '6f1c2b3a...'
    assert tap_events.summarize('x' * 40) == 'x' * 29 + '...'
    assert tap_events.summarize('two\nlines') == 'two lines'
    assert tap_events.summarize(None) == 'None'
    assert tap_events.summarize(True) == 'True'
    assert tap_events.summarize(2.5) == '2.5'
    assert tap_events.summarize({}) == '{}'
    assert tap_events.summarize({'a': 1, 'b': [1]}) == '{a,b}'
    assert tap_events.summarize({str(i): i for i in range(9)}) == 'dict(9)'


def test_split_routing_key():
    assert tap_events.split_routing_key('compute', tap_events.DEFAULT_TOPICS) == ('compute', None)
    assert tap_events.split_routing_key('compute.cmp1.example.org', tap_events.DEFAULT_TOPICS) == \
        ('compute', 'cmp1.example.org')
    assert tap_events.split_routing_key('my.topic.host1', ('my.topic',)) == ('my.topic', 'host1')
    assert tap_events.split_routing_key('other.host1', ('#',)) == ('other', 'host1')


# -- events


def test_call_event_and_its_reply():
    dec = decoder()
    call = dec.handle('minisched', 'scheduler', select_destinations_call(), now=100.0)
    assert call['kind'] == 'call'
    assert (call['topic'], call['server']) == ('scheduler', None)
    assert (call['method'], call['version'], call['namespace']) == \
        ('select_destinations', '4.5', None)
    assert call['args'] == {'spec_obj': 'RequestSpec 1.11 flavor=512MB/1vcpu num_instances=1',
                            'instance_uuids': 'list(1)', 'return_objects': 'True',
                            'return_alternates': 'True'}
    assert (call['msg_id'], call['reply_q'], call['request_id']) == (MSG_ID, REPLY_Q,
                                                                      REQUEST_ID)
    assert call['time'] == '1970-01-01T00:01:40.000000Z'
    assert MSG_ID in dec.pending

    result = [[selection_prim('cmp1'), selection_prim('cmp2')]]
    answer = dec.handle('', REPLY_Q, reply(result=result), now=100.0032)
    assert answer['kind'] == 'reply'
    assert answer['status'] == 'ok'
    assert answer['elapsed_ms'] == pytest.approx(3.2)
    assert answer['method'] == 'select_destinations'
    assert answer['result'] == 'list(1 x list(2 x Selection 1.1))'
    assert MSG_ID not in dec.pending
    assert dec.replies_seen == 1
    # A second reply with the same id (a redelivery) has no call left to pair with.
    assert dec.handle('', REPLY_Q, reply(result=None), now=101.0) is None


def test_reply_with_failure():
    dec = decoder()
    dec.handle('minisched', 'scheduler', select_destinations_call(), now=10.0)
    failure = json.dumps({'class': 'NoValidHost', 'module': 'minisched.exception',
                          'message': 'No valid host was found. There are not enough hosts.',
                          'tb': ['Traceback...'], 'args': [], 'kwargs': {'code': 500}})
    answer = dec.handle('', REPLY_Q, reply(failure=failure), now=10.5)
    assert answer['status'] == 'failure'
    assert answer['failure'] == {'class': 'NoValidHost', 'module': 'minisched.exception',
                                 'message': 'No valid host was found. There are not '
                                            'enough hosts.'}
    assert answer['elapsed_ms'] == pytest.approx(500.0)
    line = tap_events.format_text(answer)
    assert 'reply to 0f1e2d3c in 500.0 ms failure NoValidHost: No valid host' in line


def test_call_monitor_heartbeat_keeps_the_call_pending():
    dec = decoder()
    dec.handle('minisched', 'scheduler', select_destinations_call(), now=0.0)
    beat = dec.handle('', REPLY_Q, reply(ending=False), now=30.0)
    assert (beat['status'], beat['ending']) == ('heartbeat', False)
    assert MSG_ID in dec.pending
    assert 'heartbeat' in tap_events.format_text(beat)
    final = dec.handle('', REPLY_Q, reply(result=[]), now=31.0)
    assert (final['status'], final['elapsed_ms']) == ('ok', 31000.0)


def test_replies_to_unseen_calls_are_ignored():
    assert decoder().handle('', REPLY_Q, reply(result=1)) is None


def test_firehose_copies():
    dec = decoder()
    dec.handle('minisched', 'scheduler', select_destinations_call(), now=1.0)
    headers = {'exchange_name': '', 'routing_keys': [REPLY_Q],
               'properties': {'content_type': 'application/json'}, 'node': 'rabbit@h',
               'routed_queues': [REPLY_Q]}
    answer = dec.handle(tap_events.TRACE_EXCHANGE, 'publish.', reply(result=None), headers,
                        now=1.002)
    assert (answer['kind'], answer['exchange'], answer['routing_key']) == ('reply', '',
                                                                           REPLY_Q)
    assert answer['elapsed_ms'] == pytest.approx(2.0)
    # Other default-exchange traffic is none of the tap's business.
    other = envelope({'method': 'ping', 'args': {}})
    assert dec.handle(tap_events.TRACE_EXCHANGE, 'publish.', other, headers) is None
    assert dec.handle(tap_events.TRACE_EXCHANGE, 'publish.', b'garbage', headers) is None


def test_cast_to_a_server_with_a_namespace():
    message = {'method': 'object_action', 'namespace': 'baseapi', 'version': '3.0',
               'args': {'objinst': primitive('Service', '1.22', {'host': 'cmp1'},
                                             changes=['report_count']),
                        'objmethod': 'save', 'args': [], 'kwargs': {}},
               '_unique_id': 'c' * 32}
    message.update(context_keys())
    event = decoder().handle('minisched', 'compute.cmp1.example.org', envelope(message))
    assert (event['kind'], event['topic'], event['server']) == ('cast', 'compute',
                                                                'cmp1.example.org')
    assert event['msg_id'] is None
    line = tap_events.format_text(event)
    assert ' cast   minisched/compute.cmp1.example.org baseapi.object_action v3.0 ' \
           'objinst=Service 1.22 host=cmp1 changes=[report_count] objmethod=save ' \
           'args=[] kwargs={} [req-5b0e7c1a]' in line


def test_fanout_cast():
    message = {'method': 'update_instance_info', 'version': '4.2',
               'args': {'host_name': 'cmp1', 'instance_info': primitive(
                   'InstanceList', '2.4', {'objects': []})},
               '_unique_id': 'd' * 32}
    event = decoder().handle('scheduler_fanout', '', envelope(message))
    assert (event['kind'], event['topic'], event['exchange']) == ('fanout', 'scheduler',
                                                                  'scheduler_fanout')
    assert event['args']['instance_info'] == 'InstanceList 2.4 objects=[]'
    assert ' fanout scheduler_fanout         update_instance_info v4.2 host_name=cmp1 ' \
        in tap_events.format_text(event)


def test_notifications_and_undecodable_messages():
    dec = decoder()
    note = dec.handle('minisched', 'versioned_notifications.info', json.dumps({
        'oslo.version': '2.0', 'oslo.message': json.dumps({
            'message_id': 'e' * 32, 'publisher_id': 'minisched-compute:cmp1',
            'event_type': 'instance.create.end', 'priority': 'INFO', 'payload': {'a': 1},
            'timestamp': '2024-05-02 10:11:12.123456'})}).encode())
    assert (note['kind'], note['method'], note['publisher_id']) == (
        'notify', 'instance.create.end', 'minisched-compute:cmp1')
    assert 'instance.create.end from minisched-compute:cmp1 payload={a}' in \
        tap_events.format_text(note)
    bad = dec.handle('minisched', 'compute', b'\x00garbage')
    assert bad['kind'] == 'other' and 'undecodable' in tap_events.format_text(bad)
    no_method = dec.handle('minisched', 'compute', b'{"x": 1}')
    assert no_method['kind'] == 'other'


def test_format_text_and_json_of_a_call():
    event = decoder().handle('minisched', 'scheduler', select_destinations_call())
    line = tap_events.format_text(event)
    assert ' call   minisched/scheduler      select_destinations v4.5 ' \
           'spec_obj=RequestSpec 1.11 flavor=512MB/1vcpu num_instances=1 ' \
           'instance_uuids=list(1) return_objects=True return_alternates=True ' \
           '#0f1e2d3c [req-5b0e7c1a]' in line
    assert len(line.split(' ', 1)[0]) == len('12:34:56.789')
    assert json.loads(tap_events.format_json(event)) == event


def test_real_objects_through_the_minisched_serializer():
    """The summaries read what MinischedObjectSerializer really produces."""
    serializer = obj_base.MinischedObjectSerializer()
    ctxt = context.get_admin_context()
    service = objects.Service(host='cmp1', binary='minisched-compute', report_count=3)
    service.obj_reset_changes()
    service.report_count = 4
    assert tap_events.summarize(serializer.serialize_entity(ctxt, service)) == \
        'Service 1.22 host=cmp1 binary=minisched-compute changes=[report_count]'
    flavor = objects.Flavor(memory_mb=2048, vcpus=2, name='m1.small')
    spec = objects.RequestSpec(flavor=flavor, num_instances=3)
    spec.obj_reset_changes(recursive=True)
    text = tap_events.summarize(serializer.serialize_entity(ctxt, spec))
    assert text == 'RequestSpec %s flavor=2048MB/2vcpu num_instances=3' % spec.VERSION


# -- broker-side pieces that need no broker


def test_connection_parameters_from_transport_urls():
    params = tap.connection_parameters('rabbit://u:p%40ss@h1:5673,u:p%40ss@h2/vh')
    assert [(p.host, p.port, p.virtual_host) for p in params] == [('h1', 5673, 'vh'),
                                                                   ('h2', 5672, 'vh')]
    assert params[0].credentials.username == 'u'
    assert params[0].credentials.password == 'p@ss'
    default = tap.connection_parameters('rabbit://')
    assert [(p.host, p.port, p.virtual_host) for p in default] == [('localhost', 5672, '/')]
    assert tap.describe_url('rabbit://u:secret@h1:5673/') == 'h1:5673 vhost /'
    with pytest.raises(tap.TapError, match='rabbit://'):
        tap.connection_parameters('kafka://h1')


def test_tap_bindings():
    default = tap.Tap('rabbit://', 'minisched')
    assert default.wanted == [
        ('minisched', 'scheduler.#'), ('scheduler_fanout', 'scheduler'),
        ('minisched', 'conductor.#'), ('conductor_fanout', 'conductor'),
        ('minisched', 'compute.#'), ('compute_fanout', 'compute'),
        (tap_events.TRACE_EXCHANGE, 'publish.')]
    everything = tap.Tap('rabbit://', 'ex', ['#'], firehose=False)
    assert everything.wanted == [('ex', '#')]
    assert everything.queue.startswith('minisched-tap-')


# -- the command


def test_add_parsers():
    parser = argparse.ArgumentParser()
    manage_rpc.add_parsers(parser.add_subparsers(dest='action'))
    args = parser.parse_args(['tap', '--topic', 'compute', '--topic', 'a,b', '--json',
                              '--count', '3', '--timeout', '1.5'])
    assert args.action_fn.__name__ == 'tap'
    assert args.action_kwargs == ['topics', 'json', 'count', 'timeout']
    assert (args.action_kwarg_topics, args.action_kwarg_json, args.action_kwarg_count,
            args.action_kwarg_timeout) == (['compute', 'a,b'], True, 3, 1.5)
    defaults = parser.parse_args(['tap'])
    assert (defaults.action_kwarg_topics, defaults.action_kwarg_json,
            defaults.action_kwarg_count, defaults.action_kwarg_timeout) == (None, False, None,
                                                                          None)
    for bad in (['tap', '--count', '0'], ['tap', '--timeout', 'x']):
        with pytest.raises(SystemExit):
            parser.parse_args(bad)
    assert manage_rpc.__doc__.splitlines()[0] == 'Watch RPC traffic.'


def test_transport_settings_register_and_read_the_oslo_messaging_options(tmp_path):
    conf_file = tmp_path / 'm.conf'
    conf_file.write_text('[DEFAULT]\ntransport_url = rabbit://u:p@h9:5679/v\n'
                         'control_exchange = ex9\n')
    conf = cfg.ConfigOpts()
    conf(['--config-file', str(conf_file)])
    assert manage_rpc.transport_settings(conf) == ('rabbit://u:p@h9:5679/v', 'ex9')


class FakeTap:
    """Stands in for tap.Tap: emits canned events."""

    events = []

    def __init__(self, url, exchange, topics=None, note=None, **kwargs):
        self.url, self.exchange = url, exchange
        self.topics = tuple(topics or tap_events.DEFAULT_TOPICS)
        self.queue = 'minisched-tap-fake'
        self.retry_interval = 2.0
        self.bound = set()
        self.decoder = tap_events.Decoder(exchange, self.topics)
        FakeTap.instance = self

    def open(self):
        return self

    def missing(self):
        return [('ex', 'compute.#')]

    def run(self, emit, count=None, timeout=None):
        self.run_args = (count, timeout)
        for event in self.events:
            emit(event)

    def close(self):
        self.closed = True


@pytest.mark.parametrize('as_json', [False, True])
def test_tap_command_prints_one_line_per_event(monkeypatch, capsys, as_json):
    event = decoder().handle('minisched', 'scheduler', select_destinations_call())
    monkeypatch.setattr(FakeTap, 'events', [event])
    monkeypatch.setattr(manage_rpc.tap_lib, 'Tap', FakeTap)
    monkeypatch.setattr(manage_rpc, 'transport_settings', lambda conf: ('rabbit://h/', 'ex'))
    # as if a configuration file had named that bus: tap refuses to guess without one
    monkeypatch.setattr(manage_rpc.config, 'config_sources', lambda conf: ['t.conf'])
    code = manage_rpc.RpcCommands().tap(topics=['compute,scheduler'], json=as_json, count=5,
                                        timeout=2.0)
    assert code == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == 1
    if as_json:
        assert json.loads(lines[0])['method'] == 'select_destinations'
    else:
        assert 'select_destinations v4.5' in lines[0]
    assert FakeTap.instance.topics == ('compute', 'scheduler')
    assert FakeTap.instance.run_args == (5, 2.0)
    assert FakeTap.instance.closed
    assert 'not there yet' in err and 'ready' in err


def test_tap_command_reports_an_unreachable_broker(monkeypatch, capsys):
    class Unreachable(FakeTap):
        def open(self):
            raise tap.TapError('cannot reach RabbitMQ at h:1 vhost /: AMQPConnectionError: -')

    monkeypatch.setattr(manage_rpc.tap_lib, 'Tap', Unreachable)
    monkeypatch.setattr(manage_rpc, 'transport_settings', lambda conf: ('rabbit://h/', 'ex'))
    # as if a configuration file had named that bus: tap refuses to guess without one
    monkeypatch.setattr(manage_rpc.config, 'config_sources', lambda conf: ['t.conf'])
    assert manage_rpc.RpcCommands().tap() == 1
    assert 'cannot reach RabbitMQ' in capsys.readouterr().err


def test_tap_command_stops_quietly_on_a_closed_pipe(monkeypatch):
    event = decoder().handle('minisched', 'scheduler', select_destinations_call())
    stopped = []

    class Stoppable(FakeTap):
        def stop(self):
            stopped.append(True)

    class ClosedPipe(io.StringIO):
        def write(self, text):
            raise BrokenPipeError()

        def fileno(self):
            raise ValueError('no file')

    monkeypatch.setattr(Stoppable, 'events', [event])
    monkeypatch.setattr(manage_rpc.tap_lib, 'Tap', Stoppable)
    monkeypatch.setattr(manage_rpc, 'transport_settings', lambda conf: ('rabbit://h/', 'ex'))
    # as if a configuration file had named that bus: tap refuses to guess without one
    monkeypatch.setattr(manage_rpc.config, 'config_sources', lambda conf: ['t.conf'])
    monkeypatch.setattr(manage_rpc.sys, 'stdout', ClosedPipe())
    assert manage_rpc.RpcCommands().tap() == 0
    assert stopped == [True]
