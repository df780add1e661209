"""Unmodified Nova 34 clients calling a minisched cluster that runs ``wire_profile = nova``.

One cluster for the module, on a vhost of its own: a conductor, a scheduler with two workers
and three fake computes with two NUMA nodes and three NICs each (``n1`` < ``n2`` < ``n3`` by
memory, so that the RAM weigher orders them), whose configuration sets only
``[DEFAULT] wire_profile = nova``: the exchange (``nova``) and the transient queues are the
profile's defaults. Nova's side is :mod:`tests.nova_compat.nova_rpc_client`, a process of its
own with a ``nova.conf`` naming nothing but the broker; minisched's own side is
``build_helpers.Client`` in this process, which reads the cluster's configuration.

Needs the Nova 34 objects on minisched's side (RequestSpec 1.15, Instance and InstanceList at
Nova's versions, Aggregate with Nova's fields): with older ones, the tests fail on an
IncompatibleObjectVersion, the message each assertion shows.
"""
import json
import os
import select
import subprocess
import sys
import time
import uuid

import pika
import pytest

from minisched import objects
from minisched.scheduler import rpcapi as scheduler_rpcapi
from tests.functional import base
from tests.functional import build_helpers
from tests.functional import db_fixtures
from tests.functional import fixtures as ms_fixtures
from tests.functional import scheduler_helpers
from tests.nova_compat import client as nova_compat

pytestmark = [pytest.mark.functional, pytest.mark.timeout(300)]

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_CI = os.environ.get('CI', '').lower() == 'true'
NIC_SPEC = '{"vendor_id": "8086", "product_id": "1520"}'
NICS = ('[{"vendor_id": "8086", "product_id": "1520", "count": 2, "numa_node": 0}, '
        '{"vendor_id": "8086", "product_id": "1520", "count": 1, "numa_node": 1}]')
FILTERS = ('AvailabilityZoneFilter,ComputeFilter,ComputeCapabilitiesFilter,'
           'ImagePropertiesFilter,ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter,'
           'RamFilter,CoreFilter,DifferentHostFilter,AggregateInstanceExtraSpecsFilter,'
           'PciPassthroughFilter,NUMATopologyFilter')
COMPUTES = {host: {'vcpus': 16, 'memory_mb': memory_mb, 'local_gb': 100,
                   'conf': {'fake_driver': {'numa_nodes': 2, 'cpu_threads': 2,
                                            'pci_devices': NICS},
                            'pci': {'device_spec': NIC_SPEC}}}
            for host, memory_mb in (('n1', 16384), ('n2', 24576), ('n3', 32768))}
#: Seconds a fanout cast gets to reach both scheduler workers.
FANOUT_SECONDS = 20


class NovaProfileCluster(base.Cluster):
    """A Cluster whose shared configuration says ``wire_profile = nova`` and leaves the
    exchange to the profile (``nova``)."""

    def write_conf(self, name, sections):
        if name == 'minisched':
            sections = {section: dict(options) for section, options in sections.items()}
            sections['DEFAULT'].pop('control_exchange', None)
            sections['DEFAULT']['wire_profile'] = 'nova'
            self.control_exchange = 'nova'
        return super().write_conf(name, sections)


class NovaError(Exception):
    """What Nova's client raised: ``error`` has its module, class and base class names."""

    def __init__(self, error):
        super().__init__('%s.%s: %s\n%s' % (error['module'], error['class'], error['message'],
                                            error.get('traceback', '')))
        self.error = error


class NovaClient:
    """The :mod:`tests.nova_compat.nova_rpc_client` process: ``call(op, **args)``."""

    STARTUP_SECONDS = 180
    CALL_SECONDS = 60

    def __init__(self, workdir, transport_url):
        conf_file = os.path.join(workdir, 'nova.conf')
        with open(conf_file, 'w') as f:
            f.write('[DEFAULT]\ntransport_url = %s\nlong_rpc_timeout = 60\n'
                    'rpc_response_timeout = 30\n' % transport_url)
        self._log = open(os.path.join(workdir, 'nova-client.log'), 'w+')
        self._proc = subprocess.Popen(
            [sys.executable, '-m', 'tests.nova_compat.nova_rpc_client', conf_file], cwd=_ROOT,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True)
        self._read(self.STARTUP_SECONDS)

    def call(self, op, **args):
        self._proc.stdin.write(json.dumps(dict(args, op=op)) + '\n')
        self._proc.stdin.flush()
        return self._read(self.CALL_SECONDS)

    def _read(self, seconds):
        ready, _, _ = select.select([self._proc.stdout], [], [], seconds)
        line = self._proc.stdout.readline() if ready else ''
        if not line:
            self._log.seek(0)
            raise AssertionError('the Nova client gave no answer within %d s; its log:\n%s'
                                 % (seconds, self._log.read()[-6000:]))
        answer = json.loads(line)
        if 'error' in answer:
            raise NovaError(answer['error'])
        return answer['ok']

    def close(self):
        self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc.stdout.close()
        self._log.close()


@pytest.fixture(scope='module')
def deployment(tmp_path_factory):
    """``(cluster, minisched's client, Nova's client)``, for the whole module."""
    missing = nova_compat.missing()
    if missing:
        if _CI:
            pytest.fail('CI=true and Nova cannot run: %s' % missing, pytrace=False)
        pytest.skip('Nova 34 clients NOT RUN: %s' % missing)
    base.check_rabbit(base.TRANSPORT_URL)
    finalizers = []
    try:
        url, delete_vhost = base.make_vhost(base.TRANSPORT_URL)
        finalizers.append(delete_vhost)
        with pytest.MonkeyPatch.context() as monkeypatch:
            db_url, drop_db = db_fixtures.make_db(ms_fixtures.default_backend(monkeypatch))
        finalizers.append(drop_db)
        workdir = tmp_path_factory.mktemp('nova-profile')
        cluster = NovaProfileCluster(workdir, url, db_url, own_vhost=url != base.TRANSPORT_URL)
        finalizers += [cluster.cleanup_broker, cluster.kill_all]
        cluster.sync_db()
        build_helpers.start(
            cluster, COMPUTES,
            scheduler_conf={'filter_scheduler': {'enabled_filters': FILTERS}},
            # Only this module's fanouts change what the schedulers know of instances.
            compute_conf={'DEFAULT': {'scheduler_instance_sync_interval': -1,
                                      'ram_allocation_ratio': 1.0,
                                      'cpu_allocation_ratio': 1.0,
                                      'reserved_host_memory_mb': 0}})
        own = build_helpers.Client(cluster)
        finalizers.append(own.close)
        nova = NovaClient(str(workdir), url)
        finalizers.append(nova.close)
        yield cluster, own, nova
    finally:
        for finalize in reversed(finalizers):
            finalize()


@pytest.fixture
def cluster(request, deployment):
    """The module's cluster, whose service logs a failed test's report shows."""
    request.node.minisched_clusters = [deployment[0]]
    return deployment[0]


@pytest.fixture
def own(deployment):
    return deployment[1]


@pytest.fixture
def nova(deployment):
    return deployment[2]


def _request(**overrides):
    """A request as Nova's API would make it (see nova_rpc_client._spec)."""
    request = {
        'instance_uuid': str(uuid.uuid4()),
        'flavor': {'id': 1, 'flavorid': 'numa.pci', 'name': 'numa.pci', 'vcpus': 2,
                   'memory_mb': 1024, 'root_gb': 1,
                   'extra_specs': {'hw:numa_nodes': '1', 'hw:cpu_policy': 'dedicated'}},
        'image': {'id': str(uuid.uuid4()), 'name': 'cirros', 'min_ram': 0, 'min_disk': 0,
                  'disk_format': 'qcow2', 'container_format': 'bare',
                  'properties': {'hw_architecture': 'x86_64', 'img_hv_type': 'fake',
                                 'hw_vm_mode': 'hvm'}},
        'pci': [{'count': 1, 'spec': [{'vendor_id': '8086', 'product_id': '1520'}],
                 'alias_name': 'nic'}],
    }
    request.update(overrides)
    return request


def _own_select(own, nova, request):
    """minisched's own client's answer (a dry run) for the RequestSpec Nova builds."""
    from minisched import rpc
    ctxt = own.context()
    spec = rpc.get_serializer().deserialize_entity(ctxt, nova.call('spec', request=request))
    assert isinstance(spec, objects.RequestSpec)
    api = scheduler_rpcapi.SchedulerAPI(own.conf)
    own.conf.set_override('long_rpc_timeout', scheduler_helpers.CALL_TIMEOUT)
    chosen = api.select_destinations(ctxt, spec, [request['instance_uuid']],
                                     return_objects=True, return_alternates=True,
                                     dry_run=True)
    return [[(s.service_host, s.nodename) for s in alternates] for alternates in chosen]


def _hosts(selections):
    return [[(s['service_host'], s['nodename']) for s in alternates]
            for alternates in selections]


def _first_host(own, nova, request):
    try:
        return _own_select(own, nova, request)[0][0][0]
    except Exception as exc:  # NoValidHost, rebuilt as minisched's own
        return type(exc).__name__


def _until(predicate, describe, seconds=FANOUT_SECONDS):
    deadline = time.monotonic() + seconds
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError('after %d s: %s' % (seconds, describe()))
        time.sleep(0.5)


def test_novas_select_destinations_gets_the_hosts_minischeds_client_gets(own, nova):
    # NUMA (a dedicated CPU policy), a NIC, image properties and an affinity group whose
    # members are on n2, not on n3 which the weighers like best.
    request = _request(group={'uuid': str(uuid.uuid4()), 'policy': 'affinity',
                              'hosts': ['n2']})
    expected = _own_select(own, nova, request)
    selections = nova.call('select', request=request)
    assert _hosts(selections) == expected
    assert expected == [[('n2', 'n2')]]
    chosen = selections[0][0]
    assert chosen['_class'] == 'nova.objects.selection.Selection'
    assert chosen['compute_node_uuid'] and chosen['cell_uuid']
    assert chosen['limits']['numa_topology'] is None or 'numa_topology' in chosen['limits']


def test_no_valid_host_reaches_nova_as_novas_no_valid_host(nova):
    request = _request(flavor=dict(_request()['flavor'], vcpus=64, extra_specs={}))
    with pytest.raises(NovaError) as raised:
        nova.call('select', request=request)
    error = raised.value.error
    # oslo.messaging's rebuild of an allowed remote exception: a subclass of Nova's own.
    assert 'nova.exception.NoValidHost' in error['bases'], error
    assert error['message'].startswith('No valid host was found.'), error


def test_novas_aggregate_fanout_changes_what_the_scheduler_decides(own, nova):
    flavor = dict(_request()['flavor'], extra_specs={
        'aggregate_instance_extra_specs:ssd': 'true'})
    request = _request(flavor=flavor, pci=[])
    assert _first_host(own, nova, request) == 'NoValidHost'
    nova.call('update_aggregates', aggregates=[{
        'id': 4242, 'uuid': str(uuid.uuid4()), 'name': 'ssd', 'hosts': ['n1'],
        'metadata': {'ssd': 'true'}}])
    _until(lambda: _first_host(own, nova, request) == 'n1',
           lambda: 'still %s' % _first_host(own, nova, request))


def test_novas_instance_info_fanouts_change_what_the_scheduler_decides(own, nova):
    neighbour = str(uuid.uuid4())
    request = _request(pci=[], hints={'different_host': [neighbour]})
    assert _first_host(own, nova, request) == 'n3'
    # Nova's compute tells the schedulers that the neighbour runs on n3...
    nova.call('update_instance_info', host='n3', instance_uuids=[neighbour])
    _until(lambda: _first_host(own, nova, request) == 'n2',
           lambda: 'still %s' % _first_host(own, nova, request))
    # ...then that n3 runs nothing: the schedulers read n3's instances again.
    nova.call('sync_instance_info', host='n3', instance_uuids=[])
    _until(lambda: _first_host(own, nova, request) == 'n3',
           lambda: 'still %s' % _first_host(own, nova, request))


def test_novas_build_and_run_instance_at_6_x_goes_active_on_a_minisched_compute(
        cluster, own, nova):
    from minisched import rpc
    request = _request(pci=[], flavor=dict(_request()['flavor'], extra_specs={}))
    ctxt = own.context()
    flavor = own.flavor('nova-built-%s' % request['instance_uuid'][:8], vcpus=2,
                        memory_mb=1024, root_gb=1)
    instance = objects.Instance(
        ctxt, uuid=request['instance_uuid'], project_id=build_helpers.OWNER,
        user_id=build_helpers.OWNER, vm_state='building', task_state='scheduling',
        flavor=flavor, instance_type_id=flavor.id, memory_mb=1024, vcpus=2, root_gb=1,
        ephemeral_gb=0, availability_zone='nova')
    instance.create()
    # The API's record of the request, to which the compute adds its build event.
    objects.InstanceAction.action_start(ctxt, instance.uuid, 'create', want_result=False)
    sent = nova.call('build', host='n1', request=request, request_id=ctxt.request_id,
                     instance=rpc.get_serializer().serialize_entity(ctxt, instance))
    assert sent['instance_class'] == 'nova.objects.instance.Instance'

    def active():
        rows = cluster.query('SELECT vm_state, host FROM instances WHERE uuid = :uuid',
                             uuid=request['instance_uuid'])
        return rows and rows[0]['vm_state'] == 'active' and rows[0]

    built = _until(active, lambda: cluster.query(
        'SELECT vm_state, task_state, host FROM instances WHERE uuid = :uuid',
        uuid=request['instance_uuid']), seconds=60)
    assert built['host'] == 'n1'


def test_computes_listen_on_compute_alt_as_novas_6_5_does(cluster):
    connection = pika.BlockingConnection(base.pika_parameters(cluster.transport_url))
    try:
        channel = connection.channel()
        for queue in ('compute-alt', 'compute-alt.n1', 'compute.n1'):
            declared = channel.queue_declare(queue, passive=True)  # fails if absent
            assert declared.method.consumer_count >= 1, queue
    finally:
        connection.close()


def test_minischeds_own_build_flow_runs_under_the_nova_profile(own):
    flavor = own.flavor('own-flow', vcpus=1, memory_mb=512, root_gb=1)
    uuid_, = own.boot(flavor)
    instance = own.wait_built([uuid_], timeout=90)[uuid_]
    assert instance.vm_state == 'active'
