"""minisched-scheduler over RabbitMQ: a real client asks real scheduler workers for hosts.

One deployment per module (a conductor and three computes of different shapes over one
database) and a fresh scheduler per test. A fresh one because each worker keeps, in memory,
what its earlier answers consumed until the compute writes a newer node record (which only a
real build would make it do), so answers would otherwise depend on the tests run before.
Each scheduler runs in a ``Cluster`` of its own over the module's database: ``Cluster`` names
its scheduler process ``scheduler``, so one Cluster holds one, and a scheduler needs nothing
but the database (the computes' state reaches it through the conductor and the database).
Two schedulers never run at once: topic queues are named after the topic alone, so they would
share ``scheduler``.

The computes (each reserves 512 MB; the scheduler's ratios are ram 1.5 and disk 1.0 by
default, cpu ``CPU_RATIO`` as configured below):

=========  =====  ======  =======  ============================  ===================
host       vcpus  RAM MB  disk GB  RAM a request may still take  shape
=========  =====  ======  =======  ============================  ===================
c-small    2      2048    20       2048 * 1.5 - 512  =  2560      small
c-mid      16     8192    100      8192 * 1.5 - 512  = 11776      CPU-rich
c-big      8      16384   200      16384 * 1.5 - 512 = 24064      memory-rich
=========  =====  ======  =======  ============================  ===================

The weighers (which spread) prefer c-big for a fresh small request, so an answer naming
another host shows that a filter decided; the exact assertions are on requests that the
filters leave exactly one host for, where the weighing cannot matter.
"""
import collections
import contextlib
import datetime
import itertools
import re
import uuid

import oslo_messaging as messaging
import pytest

from minisched import exception
from minisched import objects
from minisched.objects import aggregate as aggregate_obj
from minisched.objects import instance as instance_obj
from minisched.objects import request_spec as request_spec_obj
from minisched.objects import selection as selection_obj
from minisched.objects import service as service_obj
from tests.functional import base
from tests.functional import db_fixtures
from tests.functional import fixtures
from tests.functional import scheduler_helpers as helpers
from tests.unit import fakes

pytestmark = [pytest.mark.functional, pytest.mark.timeout(120)]

objects.register_all()

COMPUTES = {
    'c-small': {'vcpus': 2, 'memory_mb': 2048, 'local_gb': 20},
    'c-mid': {'vcpus': 16, 'memory_mb': 8192, 'local_gb': 100},
    'c-big': {'vcpus': 8, 'memory_mb': 16384, 'local_gb': 200},
}
HOSTS = set(COMPUTES)
#: Ocata's default filters plus CoreFilter and the two instance-affinity filters.
FILTERS = ('RetryFilter,AvailabilityZoneFilter,RamFilter,DiskFilter,CoreFilter,ComputeFilter,'
           'SameHostFilter,DifferentHostFilter')
CPU_RATIO = 1.0
MAX_ATTEMPTS = 2  # one alternate each: fewer than the other hosts, so the cap shows
FILTER_SCHEDULER = {
    'DEFAULT': {'cpu_allocation_ratio': CPU_RATIO, 'debug': True},
    'scheduler': {'max_attempts': MAX_ATTEMPTS},
    'filter_scheduler': {'enabled_filters': FILTERS},
}
#: A worker logs this (debug, with its PID) for each request it answers with hosts.
SCHEDULED = re.compile(r'^\S+ \S+ (\d+) DEBUG minisched\.scheduler\.filter_scheduler '
                       r'.*Scheduled \d+ instance', re.MULTILINE)
INSTANCE_INFO_UPDATED = 'Successfully updated the cached instance information for host c-mid'


class Deployment:
    """The module's conductor and computes, and the scheduler of the current test."""

    def __init__(self, workdir, transport_url, db_url):
        self.workdir = workdir
        self.transport_url = transport_url
        self.db_url = db_url
        self.computes = self._cluster('computes')
        self.clusters = [self.computes]  # every cluster, for the logs of a failure report
        self.scheduler = None            # (Cluster, SchedulerClient) of the current test
        self._count = itertools.count()

    def _cluster(self, name):
        (self.workdir / name).mkdir()
        return base.Cluster(self.workdir / name, self.transport_url, self.db_url,
                            own_vhost=self.transport_url != base.TRANSPORT_URL)

    def start(self):
        self.computes.sync_db()
        self.computes.start_conductor()
        for host, sizes in COMPUTES.items():
            # No periodic instance sync: it would undo a test's own update_instance_info.
            self.computes.start_compute(host, wait=False, conf={
                'DEFAULT': {'scheduler_instance_sync_interval': -1}}, **sizes)
        self.computes.wait_ready(*COMPUTES)
        # A node is schedulable once the resource tracker has written its usage.
        base.wait_for(lambda: len(self.nodes()) == len(COMPUTES), 30,
                      message='every compute node to have its usage written')

    def nodes(self):
        """``{host: compute node row}`` of the nodes whose usage has been written."""
        return {row['host']: row for row in self.computes.query(
            'SELECT host, hypervisor_hostname, uuid FROM compute_nodes '
            'WHERE deleted = 0 AND free_disk_gb IS NOT NULL')}

    def reported_since_nodes_written(self, seconds):
        """Whether every compute reported its state ``seconds`` after any node record."""
        reports = [row['updated_at'] for row in self.computes.query(
            "SELECT updated_at FROM services WHERE topic = 'compute'")]
        nodes = [row['updated_at'] or row['created_at'] for row in self.computes.query(
            'SELECT created_at, updated_at FROM compute_nodes')]
        if None in reports:
            return False
        return (min(map(_timestamp, reports)) - max(map(_timestamp, nodes)) >
                datetime.timedelta(seconds=seconds))

    def start_scheduler(self, name, workers, conf):
        """Stop the previous test's scheduler, start a new one; returns its client."""
        self.stop_scheduler()
        cluster = self._cluster('%s-%d' % (name, next(self._count)))
        self.clusters.append(cluster)
        cluster.start_scheduler(workers=workers, conf=conf)
        self.scheduler = (cluster, helpers.SchedulerClient(cluster))
        return self.scheduler[1]

    @property
    def scheduler_cluster(self):
        return self.scheduler[0]

    @property
    def scheduler_process(self):
        return self.scheduler_cluster.processes['scheduler']

    def scheduler_log(self):
        return self.scheduler_cluster.log('scheduler')

    def stop_scheduler(self):
        if self.scheduler is not None:
            cluster, client = self.scheduler
            self.scheduler = None
            client.close()
            cluster.kill_all()  # its queues go with it: nothing of it reaches the next test
            cluster.cleanup_broker()

    def stop(self):
        self.stop_scheduler()
        self.computes.kill_all()
        self.computes.cleanup_broker()


def _timestamp(value):
    """A datetime from a column value (SQLite's come back as strings)."""
    return datetime.datetime.fromisoformat(str(value)).replace(tzinfo=None)


@pytest.fixture(scope='module')
def deployment(tmp_path_factory, transport_url):
    with pytest.MonkeyPatch.context() as monkeypatch:
        db_url, drop_db = db_fixtures.make_db(fixtures.default_backend(monkeypatch))
    deployment = Deployment(tmp_path_factory.mktemp('scheduler'), transport_url, db_url)
    try:
        try:
            deployment.start()
        except Exception as exc:  # no test item holds the logs yet: show them here
            raise AssertionError('%s\n%s' % (exc, deployment.computes.log_tails())) from exc
        yield deployment
    finally:
        deployment.stop()
        drop_db()


@pytest.fixture(autouse=True)
def service_logs(request, deployment):
    """A failed test's report shows the logs of the deployment (conftest's hook)."""
    request.node.minisched_clusters = deployment.clusters


@pytest.fixture
def filter_scheduler(deployment):
    """A client of a fresh two-worker filter scheduler."""
    return deployment.start_scheduler('filter', 2, FILTER_SCHEDULER)


def spec(**kw):
    """A one-instance RequestSpec of a small flavor (512 MB, 1 vCPU, 1 GB); see fakes."""
    kw.setdefault('instance_uuid', str(uuid.uuid4()))
    return fakes.fake_spec(**kw)


def hosts_of(answer):
    """The chosen hosts of a legacy answer (``[{'host', 'nodename', 'limits'}]``)."""
    return [item['host'] for item in answer]


# -- filter scheduler ---------------------------------------------------------------------

def test_ram_constrained_request_gets_the_only_host_with_enough_ram_after_overcommit(
        filter_scheduler):
    # More than c-big's free physical RAM (16384 - 512), within its overcommitted 24064;
    # c-mid's 11776 is not enough.
    answer = filter_scheduler.select(spec(memory_mb=16384))

    assert answer == [{'host': 'c-big', 'nodename': 'c-big',
                       'limits': {'memory_mb': 16384 * 1.5, 'disk_gb': 200.0,
                                  'vcpu': 8 * CPU_RATIO}}]


def test_cpu_constrained_request_gets_the_only_host_with_enough_vcpus(filter_scheduler):
    # Without CoreFilter the weighers would pick memory-rich c-big.
    assert filter_scheduler.select(spec(vcpus=12)) == [
        {'host': 'c-mid', 'nodename': 'c-mid',
         'limits': {'memory_mb': 8192 * 1.5, 'disk_gb': 100.0, 'vcpu': 16 * CPU_RATIO}}]


def test_cpu_allocation_ratio_of_the_scheduler_decides(filter_scheduler):
    # 9 of c-mid's 16 vCPUs go to the first instance; at ratio 1.0 the second does not fit
    # (at the default 16.0 it would).
    with pytest.raises(exception.NoValidHost) as caught:
        filter_scheduler.select(spec(vcpus=9, num_instances=2))
    assert 'CoreFilter rejected 1 of 1' in str(caught.value)


def test_az_request_gets_the_zone_s_host_once_the_aggregate_change_is_cast(
        deployment, filter_scheduler):
    with pytest.raises(exception.NoValidHost) as caught:
        filter_scheduler.select(spec(availability_zone='az1'))
    assert 'AvailabilityZoneFilter rejected 3 of 3' in str(caught.value)

    with helpers.cluster_database(deployment.computes) as ctxt:
        aggregate = aggregate_obj.Aggregate(ctxt, name='agg1',
                                            metadata={'availability_zone': 'az1'})
        aggregate.create()
        aggregate.add_host('c-mid')
    # Workers read aggregates at start only; the API casts each change to all of them.
    filter_scheduler.query.update_aggregates(filter_scheduler.ctxt, [aggregate])

    # Two answers in a row come from both workers (round-robin).
    base.wait_for(lambda: all(_answer_or_none(filter_scheduler, spec(availability_zone='az1'))
                              for _ in range(2)), 10, message='both workers to know az1')
    for _ in range(4):  # round-robin: both workers
        assert hosts_of(filter_scheduler.select(spec(availability_zone='az1'))) == ['c-mid']
        # c-mid left the default zone.
        answer = filter_scheduler.select(spec(availability_zone='nova'))
        assert hosts_of(answer)[0] in HOSTS - {'c-mid'}


def _answer_or_none(client, request):
    try:
        return client.select(request)
    except exception.NoValidHost:
        return None


def test_legacy_answer_has_dicts_and_objects_have_alternates(deployment, filter_scheduler):
    nodes = deployment.nodes()

    # A client capped at 4.0 (an old conductor) sends legacy dicts and gets them back.
    old_client = helpers.SchedulerClient(deployment.scheduler_cluster, version_cap='4.0')
    try:
        assert old_client.select(spec(memory_mb=16384)) == [
            {'host': 'c-big', 'nodename': 'c-big',
             'limits': {'memory_mb': 16384 * 1.5, 'disk_gb': 200.0, 'vcpu': 8 * CPU_RATIO}}]
        with pytest.raises(exception.SelectionObjectsWithOldRPCVersionNotSupported):
            old_client.select(spec(), return_objects=True)
    finally:
        old_client.close()

    # Alternates need objects: asked for without them, they are dropped.
    [legacy] = filter_scheduler.select(spec(), return_alternates=True)
    assert set(legacy) == {'host', 'nodename', 'limits'}
    assert legacy['host'] in HOSTS and legacy['nodename'] == legacy['host']

    [[only]] = filter_scheduler.select(spec(), return_objects=True)
    assert isinstance(only, selection_obj.Selection)

    [selections] = filter_scheduler.select(spec(), return_objects=True,
                                           return_alternates=True)
    assert len(selections) == MAX_ATTEMPTS  # the chosen host, then max_attempts - 1
    assert len({s.service_host for s in selections}) == MAX_ATTEMPTS
    for selection in [only] + selections:
        assert selection.compute_node_uuid == nodes[selection.service_host]['uuid']
        assert selection.nodename == selection.service_host

    # Two instances: no alternate is a host chosen for either of them.
    answer = filter_scheduler.select(spec(num_instances=2),
                                     instance_uuids=[str(uuid.uuid4()) for _ in range(2)],
                                     return_objects=True, return_alternates=True)
    chosen = {selections[0].service_host for selections in answer}
    assert len(answer) == 2
    for selections in answer:
        assert len(selections) == MAX_ATTEMPTS
        assert {s.service_host for s in selections[1:]}.isdisjoint(chosen)


def test_no_valid_host_reaches_the_caller_with_each_filter_s_rejections(filter_scheduler):
    with pytest.raises(exception.NoValidHost) as caught:
        filter_scheduler.select(spec(memory_mb=32768))

    # Rebuilt from the reply as a subclass of minisched's own (NoValidHost_Remote).
    assert type(caught.value).__name__.startswith('NoValidHost')
    message = str(caught.value)
    assert message.startswith('No valid host was found. ')
    assert 'RamFilter rejected 3 of 3' in message


def test_instance_info_cast_reaches_every_worker(deployment, filter_scheduler):
    # What a compute casts after a build: its new instance, here U on c-mid.
    instance_uuid = str(uuid.uuid4())
    info = instance_obj.InstanceList(objects=[instance_obj.Instance(uuid=instance_uuid)])
    filter_scheduler.query.update_instance_info(filter_scheduler.ctxt, 'c-mid', info)
    base.wait_for(lambda: deployment.scheduler_log().count(INSTANCE_INFO_UPDATED) == 2, 10,
                  message='both workers to record the instance on c-mid')
    workers = helpers.worker_pids(deployment.scheduler_process)

    # Calls go round-robin to the workers: each of them must know where U is.
    with answered_by(deployment) as pids:
        for _ in range(4):
            same = filter_scheduler.select(spec(scheduler_hints={'same_host': [instance_uuid]}))
            assert hosts_of(same) == ['c-mid']
    assert pids == workers
    with answered_by(deployment) as pids:
        for _ in range(4):
            other = filter_scheduler.select(spec(
                scheduler_hints={'different_host': [instance_uuid]}))
            assert hosts_of(other)[0] in HOSTS - {'c-mid'}
    assert pids == workers
    with pytest.raises(exception.NoValidHost) as caught:  # only c-mid has 12 vCPUs
        filter_scheduler.select(spec(vcpus=12,
                                     scheduler_hints={'different_host': [instance_uuid]}))
    assert 'DifferentHostFilter rejected 1 of 1' in str(caught.value)


@contextlib.contextmanager
def answered_by(deployment):
    """Collect the PIDs of the scheduler workers that answered in the block with hosts."""
    pids = set()
    before = len(SCHEDULED.findall(deployment.scheduler_log()))
    yield pids
    pids.update(int(pid) for pid in SCHEDULED.findall(deployment.scheduler_log())[before:])


def bad_requests():
    """``(case, send(client), exception class, RemoteError exc_type, text of the error)``."""
    no_flavor = request_spec_obj.RequestSpec(num_instances=1, project_id='p', user_id='u')
    invalid = exception.InvalidRequestSpec
    select = 'select_destinations'
    return [
        ('no flavor', lambda c: c.select(no_flavor), invalid, None,
         'Invalid request spec: the request has no flavor'),
        ('no instance', lambda c: c.select(spec(num_instances=0)), invalid, None,
         'num_instances must be between 1 and 10000, got 0'),
        ('a billion instances', lambda c: c.select(spec(num_instances=10 ** 9)), invalid,
         None, 'num_instances must be between 1 and 10000, got 1000000000'),
        ('negative RAM', lambda c: c.select(spec(memory_mb=-4096)), invalid, None,
         "the flavor's memory_mb must be between 1 and 2147483647 (as for a flavor made by "
         "the API), got -4096"),
        ('negative disk', lambda c: c.select(spec(root_gb=-1)), invalid, None,
         "the flavor's root_gb must be between 0 and 2147483647"),
        ('negative swap', lambda c: c.select(spec(swap=-512)), invalid, None,
         "the flavor's swap must be between 0"),
        ('no vCPU', lambda c: c.select(spec(vcpus=0)), invalid, None,
         "the flavor's vcpus must be between 1"),
        ('uuids not a list', lambda c: c.select(spec(), instance_uuids='abc'), invalid, None,
         'instance_uuids must be a list of strings'),
        ('uuids not strings', lambda c: c.select(spec(), instance_uuids=[1, 2]), invalid,
         None, 'instance_uuids must be a list of strings'),
        ('spec not an object', lambda c: c.raw(select, spec_obj='garbage',
                                               instance_uuids=None),
         invalid, None, 'spec_obj must be a RequestSpec, got str'),
        ('legacy garbage dict', lambda c: c.raw(select, version='4.0',
                                                request_spec={'garbage': True},
                                                filter_properties={}),
         invalid, None, 'Invalid request spec: the request has no flavor'),
        ('legacy not a dict', lambda c: c.raw(select, version='4.0', request_spec='garbage',
                                              filter_properties=[]),
         invalid, None, 'request_spec and filter_properties must be dicts'),
        ('unknown method', lambda c: c.raw('no_such_method'),
         messaging.RemoteError, 'NoSuchMethod',
         'Endpoint does not support RPC method no_such_method'),
        ('version 5.0', lambda c: c.raw(select, version='5.0', spec_obj=spec(),
                                        instance_uuids=None),
         messaging.RemoteError, 'UnsupportedVersion',
         'Endpoint does not support RPC version 5.0'),
    ]


def test_bad_requests_get_precise_errors_and_the_workers_keep_serving(deployment,
                                                                      filter_scheduler):
    workers = helpers.worker_pids(deployment.scheduler_process)
    assert len(workers) == 2

    for case, send, expected, exc_type, text in bad_requests():
        with pytest.raises(expected) as caught:
            send(filter_scheduler)
        assert getattr(caught.value, 'exc_type', None) == exc_type, case
        assert text in str(caught.value), (case, str(caught.value))
        assert hosts_of(filter_scheduler.select(spec()))[0] in HOSTS, case

    assert helpers.worker_pids(deployment.scheduler_process) == workers
    assert deployment.scheduler_process.popen.poll() is None


# -- other drivers ------------------------------------------------------------------------

def test_chance_scheduler_returns_random_up_hosts_without_filtering(deployment):
    client = deployment.start_scheduler('chance', 1,
                                        {'scheduler': {'driver': 'chance_scheduler'}})

    # No filter runs: a flavor that no host can hold still gets a host.
    chosen = collections.Counter(hosts_of(client.select(spec(memory_mb=10 ** 6)))[0]
                                 for _ in range(15))
    assert set(chosen) <= HOSTS
    assert len(chosen) >= 2, chosen  # all 15 on one host: p = 3 ** -14

    [[selection]] = client.select(spec(ignore_hosts=['c-small', 'c-mid']),
                                  return_objects=True)
    assert selection.service_host == selection.nodename == 'c-big'
    assert selection.compute_node_uuid == deployment.nodes()['c-big']['uuid']


def test_caching_scheduler_answers_from_its_cache(deployment):
    # The cache is filled at start (the periodic task runs at once) and not again during the
    # test. Cached host states keep the service rows of that moment, so this scheduler gets
    # Nova's default service_down_time: with the suite's 7 s every cached host would look
    # down before the test ends.
    client = deployment.start_scheduler('caching', 1, {
        'DEFAULT': {'service_down_time': 60, 'debug': True},
        'scheduler': {'driver': 'caching_scheduler', 'periodic_task_interval': 600},
    })
    base.wait_for(lambda: 'Host state cache refreshed: 3 host(s)' in deployment.scheduler_log(),
                  10, message='the cache to be filled')
    # Only c-big can take 11800 MB, and it can take two of them.
    assert hosts_of(client.select(spec(memory_mb=11800))) == ['c-big']

    set_disabled(deployment, 'c-big', True)
    try:
        # A scheduler reading the database would now answer NoValidHost (ComputeFilter);
        # the cache still has c-big enabled, less its first instance's memory.
        assert hosts_of(client.select(spec(memory_mb=11800))) == ['c-big']
        with pytest.raises(exception.NoValidHost):
            client.select(spec(memory_mb=11800))
    finally:
        set_disabled(deployment, 'c-big', False)


def set_disabled(deployment, host, disabled):
    """``minisched-manage service disable/enable`` in-process (a manage run takes seconds)."""
    with helpers.cluster_database(deployment.computes) as ctxt:
        service = service_obj.Service.get_by_host_and_binary(ctxt, host, 'minisched-compute')
        service.disabled = disabled
        service.save()


# -- regressions -------------------------------------------------------------------------

def test_failed_multi_instance_request_leaves_no_consumption_behind(deployment):
    # As in any deployment that runs for a while: the computes' state reports are newer
    # than c-mid's node record, so an incremental refresh does not read that record again.
    base.wait_for(lambda: deployment.reported_since_nodes_written(seconds=3), 15,
                  message='compute state reports newer than the node records')
    client = deployment.start_scheduler('filter-one-worker', 1, FILTER_SCHEDULER)
    with pytest.raises(exception.NoValidHost):
        client.select(spec(vcpus=9, num_instances=2))  # c-mid takes one, not two

    # Nothing was placed: c-mid's 16 vCPUs are free again.
    assert hosts_of(client.select(spec(vcpus=12))) == ['c-mid']
