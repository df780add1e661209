"""RabbitMQ stopped for 20 s and restarted while builds run: nothing accepted is lost or doubled.

The cluster runs on a RabbitMQ node of its own (``private_broker``: the shared broker serves
every other test and cannot be stopped). What is checked, in the terms of
doc/source/admin/delivery.rst:

* builds accepted before the outage (the API's cast returned: the broker confirmed it) all end
  ACTIVE, each instance created and spawned exactly once. Some were mid-spawn when the broker
  went (their computes must finish them once it is back), some still queued for a conductor
  that was paused (they must survive in the durable queue);
* during the outage select_destinations calls fail with MessagingTimeout within the caller's
  rpc_response_timeout, and a new build is refused with BuildNotAccepted (nothing created);
* after it every service is back by itself (same processes): calls are answered and state
  reports resume.
"""
import os
import signal

import oslo_messaging as messaging
import pytest

from minisched import exception
from minisched.scheduler import rpcapi as scheduler_rpcapi
from tests.functional import base
from tests.functional import build_helpers
from tests.functional import fuzz_strategies as fs
from tests.functional.private_broker import private_broker  # noqa: F401
from tests.functional import resilience

pytestmark = [pytest.mark.functional, pytest.mark.both_backends, pytest.mark.timeout(300)]

OUTAGE_SECONDS = 20
#: rpc_response_timeout of every call (the test's and the services'): short, so that a build
#: caught by the outage retries its saves within the test's time.
CALL_TIMEOUT = 10
#: Beyond it: rpc.CALL_GRACE and the probe of the broker's port.
TIMEOUT_SLACK = 4
#: Services reconnect every 1-2 s.
CONF = {'DEFAULT': {'rpc_response_timeout': CALL_TIMEOUT},
        'oslo_messaging_rabbit': {'rabbit_retry_interval': 1, 'rabbit_retry_backoff': 1,
                                  'rabbit_interval_max': 2}}
UNIT = {'vcpus': 1, 'memory_mb': 512, 'root_gb': 1}
SIZES = {'vcpus': 16, 'memory_mb': 16 * 512, 'local_gb': 100}
COMPUTE_CONF = {'fake_driver': {'spawn_delay_seconds': 3}}
#: Builds running when the broker stops, and builds queued for a paused conductor.
IN_FLIGHT, QUEUED = 6, 8


#: Longer than the outage plus the test's pauses, as Nova's default (60 s) is longer than a
#: short broker outage. With the suite's 7 s, every compute looks down once the broker is back
#: until its first report lands, and the queued builds, handled first, find no valid host.
SERVICE_DOWN_TIME = 60


@pytest.fixture
def cluster(request, tmp_path, private_broker, database):  # noqa: F811
    return resilience.make_cluster(request, tmp_path, private_broker.url, database, conf=CONF,
                                   service_down_time=SERVICE_DOWN_TIME)


@pytest.fixture
def client(request, cluster):
    client = build_helpers.Client(cluster)
    request.addfinalizer(client.close)
    return client


def select(scheduler, client):
    return scheduler.select_destinations(client.context(), fs.request_spec(), None)


def signal_service(cluster, name, sig):
    main, workers = resilience.process_tree(cluster)[name]
    for pid in (main, *workers):
        os.kill(pid, sig)


def test_broker_restart_loses_and_duplicates_no_accepted_build(private_broker, cluster,  # noqa: F811
                                                               client):
    build_helpers.start(cluster, {'c1': SIZES, 'c2': SIZES}, compute_conf=COMPUTE_CONF)
    # The product's own client (minisched.scheduler.rpcapi), as an RPC caller would use it.
    scheduler = scheduler_rpcapi.SchedulerAPI(client.conf)
    select(scheduler, client)
    pids = resilience.process_tree(cluster)
    flavor = client.flavor('unit', **UNIT)

    # Accepted before the outage: some spawning when it starts, some queued.
    in_flight = [client.boot(flavor)[0] for _ in range(IN_FLIGHT)]
    base.wait_for(lambda: len(cluster.query(
        "SELECT uuid FROM instances WHERE task_state = 'spawning'")) == IN_FLIGHT,
        message='the first builds to be spawning')
    signal_service(cluster, 'conductor', signal.SIGSTOP)
    try:
        queued = [client.boot(flavor)[0] for _ in range(QUEUED)]
        private_broker.stop_app()
    finally:
        signal_service(cluster, 'conductor', signal.SIGCONT)
    outage = resilience.Stopwatch()

    # During the outage: calls time out promptly, a new build is refused.
    with pytest.raises(exception.BuildNotAccepted):
        client.boot(flavor)
    accepted = in_flight + queued
    for table in ('build_requests', 'instance_mappings', 'request_specs'):
        left = {row['instance_uuid'] for row in cluster.query(
            'SELECT instance_uuid FROM %s' % table)}
        assert left <= set(accepted), 'the refused build left rows in %s' % table
    timed_out = []
    while outage.elapsed < OUTAGE_SECONDS:
        call = resilience.Stopwatch()
        with pytest.raises(messaging.MessagingTimeout):
            select(scheduler, client)
        timed_out.append(call.elapsed)
        assert call.elapsed < CALL_TIMEOUT + TIMEOUT_SLACK, timed_out
    private_broker.start_app()

    # Everything accepted ends ACTIVE, once.
    built = client.wait_built(accepted, timeout=150)
    states = {uuid: (built[uuid].vm_state, built[uuid].host) for uuid in accepted}
    assert all(state == 'active' for state, _host in states.values()), states
    for uuid in accepted:
        assert len(cluster.query('SELECT id FROM instances WHERE uuid = :uuid',
                                 uuid=uuid)) == 1, uuid
    assert build_helpers.wait_spawns(cluster, ('c1', 'c2'), accepted) == \
        dict.fromkeys(accepted, 1)
    assert cluster.query('SELECT id FROM build_requests') == []
    nodes = client.nodes()
    assert sum(node['vcpus_used'] for node in nodes.values()) == len(accepted)

    # Every service came back by itself.
    base.wait_for(lambda: _answers(scheduler, client), 60,
                  message='select_destinations again')
    counts = cluster.report_counts()
    base.wait_for(lambda: all(count >= counts[service] + 2
                              for service, count in cluster.report_counts().items()),
                  60, message='state reports to resume')
    assert resilience.process_tree(cluster) == pids, 'no service restarted'
    print('\nbroker stopped %ds: %d builds accepted before it (%d in flight, %d queued) '
          'all ACTIVE once; %d calls during it timed out after %s s' % (
              OUTAGE_SECONDS, len(accepted), IN_FLIGHT, QUEUED, len(timed_out),
              ', '.join('%.1f' % t for t in timed_out)))


def _answers(scheduler, client):
    try:
        return bool(select(scheduler, client))
    except messaging.MessagingTimeout:
        return False
