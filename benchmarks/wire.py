"""What the message bus alone costs: the CPU of one RPC call and of one cast, at both ends and
in the broker, on this machine.

The build bench measures it on its own deployment before the computes start (nothing else
then talks on the bus): a client process of its own calls the echo server of
``benchmarks.echo_server`` ``CALLS`` times in a row, then casts to it ``CALLS`` times, each
message carrying an Instance as ``Instance.save`` sends one (the echo sends it back, as the
conductor sends back the fields it changed). The CPU of the client (its own clock), of the
echo server and of RabbitMQ (from /proc) over each run, divided by the count, are the costs.
Multiplied by the messages a boot sends (the build trace counts them), they give what the
messages of a build cost before any of its work: a floor under the build's CPU with Nova's
message flow on this machine. The client is not eventlet-patched, unlike the services: the
floor is a low one.
"""
import time

from benchmarks import cluster

CALLS = 300
WARMUP = 20


def _instance():
    """An Instance with what a build's saves carry: its flavor, states and names."""
    from oslo_utils import timeutils
    from oslo_utils import uuidutils

    from minisched.objects import flavor as flavor_obj
    from minisched.objects import instance as instance_obj
    flavor = flavor_obj.Flavor(id=1, name='bench.small', flavorid='b1', memory_mb=2048,
                               vcpus=1, root_gb=20, ephemeral_gb=0, swap=0, extra_specs={},
                               rxtx_factor=1.0, vcpu_weight=0, disabled=False, is_public=True)
    return instance_obj.Instance(
        uuid=uuidutils.generate_uuid(), project_id='bench', user_id='bench',
        display_name='bench-instance', host='bench-c001', node='bench-c001',
        vm_state='building', task_state='spawning', power_state=0, memory_mb=2048, vcpus=1,
        root_gb=20, ephemeral_gb=0, flavor=flavor, image_ref=uuidutils.generate_uuid(),
        launched_on='bench-c001', availability_zone='nova', created_at=timeutils.utcnow())


def _work(conf_file, how, count, ready):
    import oslo_messaging as messaging

    from minisched import context as ms_context
    from minisched import rpc
    from benchmarks import echo_endpoints
    cluster.client_setup(conf_file)
    echo = rpc.get_client(messaging.Target(topic=echo_endpoints.TOPIC, version='1.0')).prepare(
        timeout=60)
    ctxt = ms_context.RequestContext(user_id='bench', project_id='bench', is_admin=True)
    payload = _instance()
    for _ in range(WARMUP):
        echo.call(ctxt, 'echo', payload=payload)
    ready()
    start = time.process_time()
    for _ in range(count):
        if how == 'call':
            echo.call(ctxt, 'echo', payload=payload)
        else:
            echo.cast(ctxt, 'echo', payload=payload)
    return time.process_time() - start


def _run(conf_file, how, count, queue, start):
    cluster.child_main(queue, start, _work, conf_file, how, count)


def _broker_cpu():
    return cluster.server_cpu_seconds({'rabbitmq': cluster.SERVERS['rabbitmq']})['rabbitmq']


def _settled(pid, seconds=0.5, timeout=30.0):
    """Wait until ``pid`` used no CPU for ``seconds`` (the casts sent are all handled)."""
    deadline = time.monotonic() + timeout
    last = cluster.process_cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(seconds)
        now = cluster.process_cpu_seconds(pid)
        if now == last:
            return
        last = now


def measure(bench, count=CALLS):
    """``{'call': {...}, 'cast': {...}}``: CPU seconds per message of the client, the echo
    server and the broker, and their total, measured on ``bench`` (a
    :class:`benchmarks.cluster.Cluster` whose echo server this starts and stops)."""
    from minisched.messaging import trace
    traced = bench.env.pop(trace.ENV_VAR, None)  # the echo server is no part of the build
    try:
        bench.start('echo', 'benchmarks.echo_server', ready='bench echo server ready')
    finally:
        if traced is not None:
            bench.env[trace.ENV_VAR] = traced
    try:
        server = bench.pid('echo')
        costs = {}
        for how in ('call', 'cast'):
            before = {}
            client, = cluster.run_children(
                _run, [(bench.conf_file, how, count)], timeout=600,
                on_ready=lambda: before.update(server=cluster.process_cpu_seconds(server),
                                               broker=_broker_cpu()))
            _settled(server)
            parts = {'client': client,
                     'server': cluster.process_cpu_seconds(server) - before['server'],
                     'broker': _broker_cpu() - before['broker']}
            costs[how] = {name: value / count for name, value in parts.items()}
            costs[how]['total'] = sum(costs[how].values())
        return costs
    finally:
        bench.stop('echo')
