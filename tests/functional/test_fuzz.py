"""Bad input on the wire: every RPC endpoint of running services fuzzed with garbage.

One cluster per module (conductor, a scheduler with two workers, a compute), on a vhost of its
own, gets Hypothesis-generated garbage through an oslo.messaging client whose serializer sends
it untouched (``resilience.RawSerializer``), plus fixed extra cases (1 MB payloads, deep
nesting, huge ``num_instances``) and malformed envelopes published with pika. Each test proves:

* no service process dies: the same main PIDs and scheduler worker PIDs before and after;
* every call gets an error back (a minisched exception, or RemoteError naming the remote
  class), never a MessagingTimeout;
* every cast is dropped with a log line carrying its request id, or handled;
* valid calls still work afterwards (select_destinations picks the compute, a remoted
  Service lookup answers).

The number of cases tried per endpoint is printed (``pytest -s``) and recorded as the test's
``fuzz_cases`` property.
"""
import collections
import json
import time
import uuid

import oslo_messaging as messaging
import pika
import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from minisched import context as ms_context
from minisched import exception
from minisched import objects
from minisched.objects import base as objects_base
from tests.functional import base
from tests.functional import db_fixtures
from tests.functional import fixtures
from tests.functional import fuzz_strategies as fs
from tests.functional import resilience

pytestmark = [pytest.mark.functional, pytest.mark.timeout(300)]

#: Hypothesis examples per endpoint (bounded, derandomized: CI stays fast and repeatable).
EXAMPLES = 80
#: Seconds a call may take before the fuzz counts it as a hang (the client's own timeout).
CALL_TIMEOUT = 20
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))
LOG_MARKERS = ('Exception during message handling', 'Failed to process message',
               'Dropped a message of')
ORPHAN_REPLY_TIMEOUT = 5


# -- the cluster ------------------------------------------------------------------------------

class Fuzz:
    """The module's cluster, its raw clients and the PIDs it started with."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.clients = resilience.RawClients(cluster, timeout=CALL_TIMEOUT)
        self.pids = resilience.process_tree(cluster)
        self.counts = collections.OrderedDict()
        self.outcomes = collections.defaultdict(collections.Counter)
        self.cast_args = {}   # request id -> (method, kwargs)

    def client(self, topic, version, **kwargs):
        return self.clients.client(topic, version, **kwargs)

    # -- running cases ------------------------------------------------------------------

    def call(self, endpoint, client, method, kwargs, ctxt=None):
        """One call: anything but a reply (a value or an error) fails the test."""
        started = time.monotonic()
        try:
            client.call(ctxt if ctxt is not None else resilience.admin_context(), method,
                        **kwargs)
            outcome = 'answered'
        except messaging.MessagingTimeout:
            pytest.fail('%s: no reply within %ss (a hang) for %s' % (
                endpoint, CALL_TIMEOUT, _short(kwargs)))
        except messaging.RemoteError as exc:
            # a remote class outside oslo.messaging's allowed modules: named, with its message
            assert exc.exc_type, (endpoint, exc)
            outcome = 'RemoteError(%s)' % exc.exc_type
        except Exception as exc:
            # minisched.exception classes are rebuilt as "<class>_Remote", builtins as
            # themselves with the remote traceback in their message; any other exception
            # was raised here, in the client, and is a bug of the test.
            name = type(exc).__name__
            if not name.endswith('_Remote') and 'rpc/server.py' not in str(exc) and \
                    'minisched/messaging/monitored_dispatcher.py' not in str(exc):
                raise
            assert str(exc).strip(), (endpoint, name)
            outcome = name.replace('_Remote', '')
        assert time.monotonic() - started < CALL_TIMEOUT
        self._count(endpoint, outcome)

    def cast(self, endpoint, client, method, kwargs):
        """One cast, with a fresh request id; returns it (``casts_logged`` looks for it)."""
        ctxt = resilience.admin_context()
        self.cast_args[ctxt['request_id']] = (method, kwargs)
        client.cast(ctxt, method, **kwargs)
        self._count(endpoint, 'cast')
        return ctxt['request_id']

    def _count(self, endpoint, outcome):
        self.counts[endpoint] = self.counts.get(endpoint, 0) + 1
        self.outcomes[endpoint][outcome] += 1

    def fuzz_calls(self, endpoint, client, method, strategy, extra=()):
        """``EXAMPLES`` Hypothesis cases of kwargs for ``method``, then the ``extra`` ones."""
        @SETTINGS
        @given(strategy)
        def run(kwargs):
            self.call(endpoint, client, method, kwargs)
        run()
        for kwargs in extra:
            self.call(endpoint, client, method, kwargs)

    def fuzz_casts(self, endpoint, client, method, strategy, extra=()):
        request_ids = []

        @SETTINGS
        @given(strategy)
        def run(kwargs):
            request_ids.append(self.cast(endpoint, client, method, kwargs))
        run()
        for kwargs in extra:
            request_ids.append(self.cast(endpoint, client, method, kwargs))
        return request_ids

    # -- checks -------------------------------------------------------------------------

    def assert_alive_and_serving(self):
        """Same PIDs (workers included) as at the start, and valid calls still answer."""
        for name, process in self.cluster.processes.items():
            assert process.popen.poll() is None, '%s died:\n%s' % (name, process.tail())
        assert resilience.process_tree(self.cluster) == self.pids
        valid_calls_work(self)

    def casts_logged(self, names, request_ids, timeout=30, quiet=2):
        """{request id: logged?} once every id is logged, or the logs of ``names`` have
        said nothing more of the casts for ``quiet`` seconds (they were consumed), or after
        ``timeout``. What they say of the casts: their request ids and the markers of a
        dropped message; the services' periodic debug lines (every second) do not count."""
        def logged():
            text = ''.join(self.cluster.log(name) for name in names)
            said = (sum(text.count(rid) for rid in request_ids) +
                    sum(text.count(marker) for marker in LOG_MARKERS))
            return said, {rid: rid in text for rid in request_ids}
        deadline = time.monotonic() + timeout
        size, seen = logged()
        quiet_since = time.monotonic()
        while not all(seen.values()) and time.monotonic() < deadline:
            time.sleep(0.5)
            new_size, seen = logged()
            if new_size != size:
                size, quiet_since = new_size, time.monotonic()
            elif time.monotonic() - quiet_since >= quiet:
                break
        return seen

    def report(self, record_property, *endpoints):
        lines = ['%-45s %5d cases  %s' % (endpoint, self.counts[endpoint],
                                          dict(self.outcomes[endpoint].most_common()))
                 for endpoint in endpoints]
        print('\nfuzz cases tried per endpoint:\n  ' + '\n  '.join(lines))
        record_property('fuzz_cases', {e: self.counts[e] for e in endpoints})


@pytest.fixture(scope='module')
def fuzz_module(request, tmp_path_factory):
    monkeypatch = pytest.MonkeyPatch()
    request.addfinalizer(monkeypatch.undo)
    url = resilience.own_vhost(request)
    db_url, drop = db_fixtures.make_db(fixtures.default_backend(monkeypatch))
    request.addfinalizer(drop)
    cluster = base.Cluster(tmp_path_factory.mktemp('fuzz'), url, db_url, own_vhost=True,
                           conf={'DEFAULT': {'debug': 'true'},
                                 # replies to a gone caller: given up after 5 s, not 60 s
                                 'oslo_messaging_rabbit': {
                                     'kombu_missing_consumer_retry_timeout':
                                     ORPHAN_REPLY_TIMEOUT}})
    request.addfinalizer(cluster.kill_all)
    cluster.sync_db()
    cluster.start_conductor()
    cluster.start_scheduler(workers=2)
    cluster.start_compute(fs.HOST, vcpus=64, memory_mb=65536)
    base.wait_for(lambda: cluster.query('SELECT id FROM compute_nodes'), 30,
                  message='the compute node record of %s' % fs.HOST)
    fuzz = Fuzz(cluster)
    request.addfinalizer(fuzz.clients.close)
    assert len(fuzz.pids['scheduler'][1]) == 2, fuzz.pids
    # The scheduler has seen the compute up (its first report comes after 5 s).
    base.wait_for(lambda: _select(fuzz), 30, message='a first valid select_destinations')
    return fuzz


@pytest.fixture
def fuzz(request, fuzz_module):
    # conftest's hook shows the service logs of a failed test.
    request.node.minisched_clusters = [fuzz_module.cluster]
    return fuzz_module


def _select(fuzz):
    try:
        return valid_select(fuzz)
    except messaging.RemoteError:
        return None
    except exception.NoValidHost:
        return None


def valid_select(fuzz):
    client = fuzz.client('scheduler', '4.5')
    spec = fs.request_spec()
    hosts = client.call(resilience.admin_context(), 'select_destinations',
                        spec_obj=spec.obj_to_primitive(), instance_uuids=[spec.instance_uuid],
                        return_objects=False, return_alternates=False)
    return hosts


def valid_calls_work(fuzz):
    # Both scheduler workers: calls are spread over the consumers of the topic queue.
    for _ in range(4):
        hosts = valid_select(fuzz)
        assert [h['host'] for h in hosts] == [fs.HOST], hosts
    client = fuzz.clients.object_client('conductor', '3.0')
    service = client.call(ms_context.get_admin_context(), 'object_class_action_versions',
                          objname='Service', objmethod='get_by_host_and_binary',
                          object_versions=objects_base.obj_tree_get_versions('Service'),
                          args=(fs.HOST, 'minisched-compute'), kwargs={})
    assert isinstance(service, objects.Service) and service.host == fs.HOST


def _short(value, limit=300):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + '... (%d chars)' % len(text)


# -- strategies of each endpoint's kwargs ---------------------------------------------------

methods = st.sampled_from(['save', 'create', 'destroy', 'refresh', 'get_by_id', 'get_by_uuid',
                           'get_by_host_and_binary', 'get_all', 'obj_reset_changes',
                           'obj_clone', '__init__', '__class__', '_from_db_object',
                           'obj_from_primitive', 'obj_class_from_name']) | st.text(max_size=20)
object_names = st.sampled_from(sorted(fs.TEMPLATES) + fs.FOREIGN_NAMES) | fs.json_values
versions = st.sampled_from(fs.BAD_VERSIONS + ['1.0', '1.4']) | fs.json_values
version_maps = (st.dictionaries(object_names.filter(lambda n: isinstance(n, str)), versions,
                                max_size=4) |
                st.builds(lambda n, v: dict(objects_base.obj_tree_get_versions('Service'),
                                            **{n: v}),
                          st.sampled_from(sorted(fs.TEMPLATES)), versions) |
                fs.garbage)
arg_lists = st.lists(fs.bad_object, max_size=3) | fs.garbage
kwarg_dicts = st.dictionaries(fs.keys, fs.bad_object, max_size=3) | fs.garbage

object_action = st.fixed_dictionaries({
    'objinst': fs.bad_object, 'objmethod': methods, 'args': arg_lists, 'kwargs': kwarg_dicts})
object_class_action = st.fixed_dictionaries({
    'objname': object_names, 'objmethod': methods, 'object_versions': version_maps,
    'args': arg_lists, 'kwargs': kwarg_dicts})
object_backport = st.fixed_dictionaries({
    'objinst': fs.bad_object, 'object_versions': version_maps})



def _huge_spec(num_instances):
    prim = fs.request_spec().obj_to_primitive()
    prim['minisched_object.data']['num_instances'] = num_instances
    return prim


HUGE_COUNTS = [0, -1, 10001, 10 ** 6, 2 ** 31, 2 ** 63, 2 ** 70]
legacy_spec = st.fixed_dictionaries({}, optional={
    'instance_type': fs.json_dicts | fs.broken_primitive('Flavor') |
    st.just(fs.flavor().obj_to_primitive()),
    'num_instances': st.sampled_from(HUGE_COUNTS) | fs.json_values,
    'image': fs.json_values,
    'instance_properties': fs.json_dicts,
}) | fs.garbage
legacy_filter_props = st.fixed_dictionaries({}, optional={
    key: fs.json_values for key in ('ignore_hosts', 'force_hosts', 'force_nodes', 'retry',
                                    'limits', 'scheduler_hints', 'requested_destination',
                                    'group_policies', 'group_updated', 'group_hosts',
                                    'instance_type')}) | fs.garbage
spec_objs = fs.broken_primitive('RequestSpec') | fs.garbage | st.sampled_from(HUGE_COUNTS).map(
    _huge_spec)
uuid_lists = st.lists(st.uuids().map(str), max_size=3) | fs.garbage
flags = st.booleans() | fs.json_values

select_by_version = {
    '4.0': st.fixed_dictionaries({'request_spec': legacy_spec,
                                  'filter_properties': legacy_filter_props}),
    '4.3': st.fixed_dictionaries({'spec_obj': spec_objs}),
    '4.4': st.fixed_dictionaries({'spec_obj': spec_objs, 'instance_uuids': uuid_lists}),
    '4.5': st.fixed_dictionaries({'spec_obj': spec_objs, 'instance_uuids': uuid_lists,
                                  'return_objects': flags, 'return_alternates': flags}),
}
host_names = st.sampled_from([fs.HOST, 'no-such-host', '']) | fs.json_values
instance_lists = (st.lists(fs.bad_object | st.builds(lambda: fs.instance().obj_to_primitive()),
                           max_size=3) | fs.garbage)
scheduler_casts = {
    'update_instance_info': ('4.2', st.fixed_dictionaries({'host_name': host_names,
                                                           'instance_info': instance_lists})),
    'sync_instance_info': ('4.2', st.fixed_dictionaries({'host_name': host_names,
                                                         'instance_uuids': uuid_lists})),
    'delete_instance_info': ('4.2', st.fixed_dictionaries({'host_name': host_names,
                                                           'instance_uuid': fs.json_values})),
    'update_aggregates': ('4.1', st.fixed_dictionaries({
        'aggregates': st.lists(fs.broken_primitive('Aggregate') | fs.bad_object,
                               max_size=3) | fs.garbage})),
    'delete_aggregate': ('4.1', st.fixed_dictionaries({'aggregate': fs.bad_object})),
}
build_kwargs = st.fixed_dictionaries({
    'instance': fs.broken_primitive('Instance') | fs.garbage,
    'image': fs.json_values, 'request_spec': spec_objs, 'filter_properties': fs.json_values,
}, optional={name: fs.json_values for name in (
    'admin_password', 'injected_files', 'requested_networks', 'security_groups',
    'block_device_mapping', 'node', 'limits', 'host_list')})
terminate_kwargs = st.fixed_dictionaries({
    'instance': fs.broken_primitive('Instance') | fs.garbage}, optional={'bdms': fs.json_values})
schedule_and_build = st.fixed_dictionaries({
    'build_requests': st.lists(fs.bad_object, max_size=2) | fs.garbage,
    'request_specs': st.lists(spec_objs, max_size=2) | fs.garbage,
    'image': fs.json_values, 'admin_password': fs.json_values,
    'injected_files': fs.json_values, 'requested_networks': fs.json_values,
    'block_device_mapping': fs.json_values}, optional={'tags': fs.json_values})
build_instances = st.fixed_dictionaries({
    'instances': st.lists(fs.broken_primitive('Instance') | fs.bad_object, max_size=2) |
    fs.garbage,
    'image': fs.json_values, 'filter_properties': fs.json_values,
    'admin_password': fs.json_values, 'injected_files': fs.json_values,
    'requested_networks': fs.json_values, 'security_groups': fs.json_values,
    'block_device_mapping': fs.json_values},
    optional={'legacy_bdm': fs.json_values, 'request_spec': spec_objs,
              'host_lists': fs.json_values})
unknown_methods = st.sampled_from(['_private', '__init__', '__class__', '_report_state',
                                   'no_such_method', '', ' ', 'select_destinations ',
                                   'object_action.save']) | st.text(max_size=16).map(
    lambda t: 'fuzz_' + t)
contexts = st.dictionaries(
    st.sampled_from(['user_id', 'project_id', 'is_admin', 'read_deleted', 'timestamp',
                     'roles', 'request_id', 'global_request_id', 'service_catalog',
                     'remote_address', 'user', 'tenant', 'auth_token', 'read_only']) | fs.keys,
    fs.json_values, max_size=6)


def oversized_kwargs(*names):
    """The fixed extra cases: ~1 MB in each named argument, and deep nesting."""
    return [{name: payload for name in names}
            for payload in fs.oversized() + [fs.nested(400)]]


# -- the tests ----------------------------------------------------------------------------

def test_conductor_object_endpoints_reject_garbage_and_keep_serving(fuzz, record_property):
    client = fuzz.client('conductor', '3.0')
    fuzz.fuzz_calls('conductor.object_action', client, 'object_action', object_action,
                    extra=[dict(objinst=fs.service().obj_to_primitive(), objmethod='save',
                                args=[], kwargs=k) for k in oversized_kwargs('x')])
    fuzz.fuzz_calls('conductor.object_class_action_versions', client,
                    'object_class_action_versions', object_class_action,
                    extra=[dict(objname='Service', objmethod='get_by_id',
                                object_versions={'Service': '1.0'}, args=[a], kwargs={})
                           for a in fs.oversized()])
    fuzz.fuzz_calls('conductor.object_backport_versions', client, 'object_backport_versions',
                    object_backport, extra=[dict(objinst=p, object_versions={})
                                            for p in fs.oversized()])
    fuzz.assert_alive_and_serving()
    fuzz.report(record_property, 'conductor.object_action',
                'conductor.object_class_action_versions', 'conductor.object_backport_versions')


def test_conductor_compute_task_casts_of_garbage_are_logged_and_dropped(fuzz,
                                                                        record_property):
    client = fuzz.client('conductor', '1.20', namespace='compute_task')
    ids = fuzz.fuzz_casts('conductor.compute_task.schedule_and_build_instances', client,
                          'schedule_and_build_instances', schedule_and_build,
                          extra=[dict(build_requests=[], request_specs=[_huge_spec(2 ** 62)],
                                      image={}, admin_password=None, injected_files=[],
                                      requested_networks=None, block_device_mapping=[])])
    ids += fuzz.fuzz_casts('conductor.compute_task.build_instances', client, 'build_instances',
                           build_instances)
    _assert_casts_logged(fuzz, ['conductor'], ids, client)
    fuzz.assert_alive_and_serving()
    fuzz.report(record_property, 'conductor.compute_task.schedule_and_build_instances',
                'conductor.compute_task.build_instances')


@pytest.mark.parametrize('version', sorted(select_by_version))
def test_select_destinations_rejects_garbage_at_each_version(fuzz, record_property, version):
    endpoint = 'scheduler.select_destinations@%s' % version
    client = fuzz.client('scheduler', version)
    names = ('request_spec',) if version == '4.0' else ('spec_obj',)
    extra = oversized_kwargs(*names)
    if version >= '4.4':
        # ~800 KB of instance uuids for one small spec: rejected by the instance bound.
        many = [str(uuid.UUID(int=i)) for i in range(20001)]
        extra.append(dict(spec_obj=fs.request_spec().obj_to_primitive(), instance_uuids=many))
    fuzz.fuzz_calls(endpoint, client, 'select_destinations', select_by_version[version],
                    extra=extra)
    fuzz.assert_alive_and_serving()
    fuzz.report(record_property, endpoint)


def test_scheduler_casts_of_garbage_keep_workers_alive_and_state_sane(fuzz, record_property):
    ids = []
    for method, (version, strategy) in scheduler_casts.items():
        client = fuzz.client('scheduler', version, fanout=True)
        ids += fuzz.fuzz_casts('scheduler.%s (fanout)' % method, client, method, strategy)
    _assert_casts_logged(fuzz, ['scheduler'], ids, fuzz.client('scheduler', '4.2'))
    fuzz.assert_alive_and_serving()
    fuzz.report(record_property, *['scheduler.%s (fanout)' % m for m in scheduler_casts])


def test_compute_casts_of_garbage_are_logged_and_dropped(fuzz, record_property):
    client = fuzz.client('compute', '5.0', server=fs.HOST)
    ids = fuzz.fuzz_casts('compute.build_and_run_instance', client, 'build_and_run_instance',
                          build_kwargs)
    ids += fuzz.fuzz_casts('compute.terminate_instance', client, 'terminate_instance',
                           terminate_kwargs)
    _assert_casts_logged(fuzz, [fs.HOST], ids, client)
    fuzz.assert_alive_and_serving()
    fuzz.report(record_property, 'compute.build_and_run_instance',
                'compute.terminate_instance')


@pytest.mark.parametrize('topic, version, namespace', [
    ('conductor', '3.0', None), ('conductor', '1.20', 'compute_task'),
    ('scheduler', '4.5', None), ('compute', '5.0', None)])
def test_unknown_methods_versions_and_contexts_get_precise_errors(fuzz, record_property,
                                                                   topic, version, namespace):
    server = fs.HOST if topic == 'compute' else None
    endpoint = '%s%s: unknown methods/versions/contexts' % (
        topic, '.%s' % namespace if namespace else '')

    @SETTINGS
    @given(unknown_methods, st.sampled_from(['9.9', '99.0', version.split('.')[0] + '.999',
                                             '0.1', version]))
    def run(method, wanted):
        client = fuzz.client(topic, wanted, namespace=namespace, server=server)
        fuzz.call(endpoint, client, method, {'x': 1})
    run()

    # A known method at an unknown version, and garbage contexts on a known method.
    known = {'conductor': 'object_backport_versions', 'scheduler': 'select_destinations',
             'compute': 'build_and_run_instance'}[topic] if namespace is None else 'build_instances'
    for wanted in ('9.9', version.split('.')[0] + '.999', 'x'):
        with pytest.raises(Exception) as caught:
            fuzz.client(topic, wanted, namespace=namespace, server=server).call(
                resilience.admin_context(), known)
        # UnsupportedVersion (an oslo.messaging class: RemoteError) or, for a version that
        # is not a number, the builtin ValueError rebuilt from the reply
        name = getattr(caught.value, 'exc_type', None) or type(caught.value).__name__
        assert name in ('UnsupportedVersion', 'ValueError'), caught.value
        fuzz._count(endpoint, name)

    @SETTINGS
    @given(contexts)
    def bad_context(ctxt):
        client = fuzz.client(topic, version, namespace=namespace, server=server)
        # a known method, so that the garbage context is deserialized before any reply
        fuzz.call(endpoint, client, known, {}, ctxt=ctxt)
    bad_context()
    fuzz.assert_alive_and_serving()
    fuzz.report(record_property, endpoint)


def test_object_primitives_of_foreign_or_unregistered_classes_never_load(fuzz,
                                                                        record_property):
    """Every broken primitive of every class through object_action: a precise error each."""
    client = fuzz.client('conductor', '3.0')
    endpoint = 'conductor.object_action (primitives)'

    @SETTINGS
    @given(st.sampled_from(sorted(fs.TEMPLATES)).flatmap(fs.broken_primitive))
    def run(primitive):
        fuzz.call(endpoint, client, 'object_action',
                  dict(objinst=primitive, objmethod='save', args=[], kwargs={}))
    run()
    for name in fs.FOREIGN_NAMES:
        for namespace in fs.FOREIGN_NAMESPACES + ['minisched']:
            primitive = dict(fs.service().obj_to_primitive(), **{
                'minisched_object.name': name, 'minisched_object.namespace': namespace})
            with pytest.raises((exception.UnsupportedObjectError,
                                exception.InvalidObjectRequest)):
                client.call(resilience.admin_context(), 'object_action', objinst=primitive,
                            objmethod='save', args=[], kwargs={})
            fuzz._count(endpoint, 'rejected')
    fuzz.assert_alive_and_serving()
    fuzz.report(record_property, endpoint)


MALFORMED_BODIES = [
    b'\x00\xffnot json at all',
    b'',
    b'[1, 2, 3]',
    b'"a string"',
    b'null',
    b'{"oslo.version": "2.0", "oslo.message": "not json"}',
    b'{"oslo.version": "9.0", "oslo.message": "{}"}',
    b'{"oslo.version": "2.0"}',
    json.dumps({'oslo.version': '2.0', 'oslo.message': json.dumps({'args': {}})}).encode(),
    json.dumps({'oslo.version': '2.0', 'oslo.message': json.dumps(
        {'method': 'select_destinations', 'args': [1, 2], 'version': '4.5'})}).encode(),
    json.dumps({'oslo.version': '2.0', 'oslo.message': json.dumps(
        {'method': 'select_destinations', 'args': {}, 'version': 4.5})}).encode(),
    json.dumps({'oslo.version': '2.0', 'oslo.message': json.dumps(
        {'method': ['x'], 'args': {}, 'version': '4.5'})}).encode(),
    b'[' * 200000 + b']' * 200000,                     # deeper than any JSON decoder recurses
    b'{"oslo.version": "2.0", "oslo.message": "' + b'9' * 5000 + b'"}',  # int too long to parse
    b'{"a": ' + b'9' * 5000 + b'}',
    b'{' * 10 + b'truncated',
]
#: A call whose reply queue does not exist (its caller is gone). The server answers it, and
#: oslo.messaging retries that reply for ``kombu_missing_consumer_retry_timeout`` (60 s by
#: default, ORPHAN_REPLY_TIMEOUT here), then abandons it with an ERROR line; a service stopping
#: meanwhile waits for it.
ORPHAN_CALL = json.dumps({'oslo.version': '2.0', 'oslo.message': json.dumps(
    {'method': 'select_destinations', 'args': {}, 'version': '4.5',
     '_msg_id': uuid.uuid4().hex, '_reply_q': 'reply_' + uuid.uuid4().hex,
     '_unique_id': uuid.uuid4().hex})}).encode()


def test_malformed_envelopes_are_skipped_with_a_log_line(fuzz, record_property):
    """Raw AMQP messages no client would send: each is rejected, logged, and nothing dies."""
    connection = pika.BlockingConnection(base.pika_parameters(fuzz.cluster.transport_url))
    endpoint = 'raw envelopes (pika)'
    markers_before = {name: _markers(fuzz.cluster.log(name))
                      for name in ('conductor', 'scheduler', fs.HOST)}
    try:
        channel = connection.channel()
        for routing_key in ('conductor', 'scheduler', 'compute.%s' % fs.HOST):
            for body in MALFORMED_BODIES + [ORPHAN_CALL]:
                channel.basic_publish(fuzz.cluster.control_exchange, routing_key, body,
                                      pika.BasicProperties(content_type='application/json'))
                fuzz._count(endpoint, 'published')
    finally:
        connection.close()
    for name in ('conductor', 'scheduler', fs.HOST):
        # At least the undecodable bodies are logged as skipped by each service.
        base.wait_for(lambda: _markers(fuzz.cluster.log(name)) >= markers_before[name] + 3,
                      30, message='%s to log the malformed messages' % name)
        # The orphan call was answered, and its reply abandoned with a log line.
        resilience.wait_log(fuzz.cluster, name, 'due to a missing queue',
                            timeout=ORPHAN_REPLY_TIMEOUT + 20)
    fuzz.assert_alive_and_serving()
    fuzz.report(record_property, endpoint)


def _markers(text):
    return sum(text.count(marker) for marker in LOG_MARKERS)


def _assert_casts_logged(fuzz, names, request_ids, client):
    """Each garbage cast was consumed, and dropped with a log line naming its request id,
    unless it was harmless: the same message sent as a call (on ``client``) is accepted
    without an error (e.g. forgetting an instance the scheduler does not track)."""
    # A valid call behind the casts: once it answers, most of the queue was consumed.
    valid_calls_work(fuzz)
    seen = fuzz.casts_logged(names, request_ids)
    silent = [rid for rid, logged in seen.items() if not logged]
    rejected = []
    for rid in silent:
        method, kwargs = fuzz.cast_args[rid]
        try:
            client.call(resilience.admin_context(), method, **kwargs)
        except Exception as exc:
            rejected.append('%s -> %s: %s' % (_short((method, kwargs)), type(exc).__name__,
                                               str(exc).splitlines()[0][:200]))
    print('\n%d garbage casts to %s: %d dropped with a log line, %d accepted as harmless '
          '(the same message as a call answers without error)' % (
              len(seen), ', '.join(names), len(seen) - len(silent), len(silent)))
    assert not rejected, '%d casts were rejected without a log line, e.g.\n%s' % (
        len(rejected), '\n'.join(rejected[:5]))
