"""[DEFAULT] options of every minisched service: identity, paths, reporting and periodic tasks."""
import os
import socket

from oslo_config import cfg

GROUP = 'DEFAULT'


def _default_state_path():
    return os.path.join(os.path.expanduser('~'), '.local', 'state', 'minisched')


def _default_my_ip():
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.connect(('192.0.2.1', 9))  # no packet is sent for UDP connect
            return sock.getsockname()[0]
    except OSError:
        return '127.0.0.1'


OPTS = [
    cfg.HostDomainOpt('host', default=socket.gethostname(),
                      sample_default='<current_hostname>', help="""
Name of this node, used as the service's host, its RPC server name and the
key of its records in the database. Several services on one machine need
distinct values.

Possible values: a valid hostname, FQDN or IP address."""),
    cfg.StrOpt('my_ip', default=_default_my_ip(), sample_default='<host_ipv4>',
               help='IP address of this host, written to the compute node record (host_ip).'),
    cfg.StrOpt('state_path', default=_default_state_path(),
               sample_default='$HOME/.local/state/minisched', help="""
Top-level directory for the state minisched keeps on disk: the embedded
SQLite databases live here unless ``[database] connection`` /
``[api_database] connection`` say otherwise."""),
    cfg.IntOpt('report_interval', default=10, min=1, help="""
Seconds between a service's state reports to the database (``report_count``
and ``last_seen_up``). Keep it below ``service_down_time``.

Related options: ``service_down_time``"""),
    cfg.IntOpt('service_down_time', default=60, min=1, help="""
Maximum seconds since a service's last state report for it to count as up.
Raised to 2.5 x ``report_interval`` when it is not larger than that option.

Related options: ``report_interval``"""),
    cfg.BoolOpt('periodic_enable', default=True,
                help='Run the manager periodic tasks of this service.'),
    cfg.IntOpt('periodic_fuzzy_delay', default=60, min=0, help="""
Upper bound, in seconds, of the random delay before the first periodic task
run, so that services started together do not hit the database at once. 0
disables the delay."""),
    cfg.StrOpt('servicegroup_driver', default='db', choices=[('db', 'database driver')],
               help='Driver that reports service liveness and answers "is it up?".'),
    cfg.BoolOpt('enable_new_services', default=True, help="""
Whether new compute services start enabled. When False a new compute service
is created disabled with a reason, and an operator enables it with
``minisched-manage service enable``."""),
    cfg.StrOpt('default_availability_zone', default='nova', help="""
Availability zone of compute hosts that are in no aggregate with an
``availability_zone`` key. AvailabilityZoneFilter uses it for such hosts."""),
    cfg.StrOpt('internal_service_availability_zone', default='internal',
               help='Availability zone reported for non-compute services.'),
    cfg.IntOpt('long_rpc_timeout', default=1800, min=1, help="""
Timeout in seconds of long-running RPC calls, ``select_destinations`` among
them. The call-monitor heartbeat (``rpc_response_timeout``) still detects a
dead server early.

Related options: ``rpc_response_timeout``"""),
    cfg.IntOpt('rpc_max_message_size_mb', default=16, min=0, help="""
Largest RPC message, in MiB, that a service accepts from the message bus.

A request or cast larger than this, measured as it arrives from the broker
and before it is decoded, is dropped: the service logs a WARNING with its
size and this limit, and acknowledges it so that the broker does not
deliver it again. Decoding a message of tens of MiB costs a worker several
times that in memory. Replies to the service's own calls are not limited.
minisched's largest messages (a compute's list of its instances, about 1
to 8 KiB per instance) stay far below the default.

Possible values:

* 0: no limit
* A positive integer: the limit in MiB (1 MiB = 1,048,576 bytes). The
  sender of a larger call gets no reply and times out.

Related options: ``rpc_response_timeout``"""),
    cfg.IntOpt('rpc_poll_floor_ms', default=50, min=1, max=5000, help="""
Shortest wait, in milliseconds, of a service's listeners on the message bus
before they look up from an empty queue.

A listener waits for the next message with a timeout that starts at this
value after each message and doubles up to 1 second while none comes;
each timeout wakes it, for nothing, through the AMQP client's retry and
read machinery. A message that arrives wakes it at once whatever this is,
so calls are not slowed; what waits up to this long is what the listener
does between messages: acknowledging the notifications it consumed, and
seeing that it must stop. oslo.messaging's own value is 1 ms (its
``ACK_REQUEUE_EVERY_SECONDS_MIN``, which this sets); with 50, a deployment
of 100 fake computes, a conductor and a scheduler used a third less CPU
while idle (state reports and periodic tasks only). The 1 second ceiling
is minisched's (oslo.messaging's is 5 seconds): a service on SIGTERM waits
out each listener's current timeout, so it stops in about a second rather
than in up to 5 seconds per RPC server.

Possible values:

* 1: oslo.messaging's own behaviour
* Up to 5000; above 1000 the wait is the ceiling's, 1 second"""),
    cfg.StrOpt('wire_profile', default='minisched', choices=[
        ('minisched', "minisched's own: exchange ``minisched``, durable topic queues and "
                      "exchanges, ``minisched_object.*`` primitives, errors from "
                      "``minisched.exception``"),
        ('nova', "Nova's: exchange ``nova``, transient topic queues and exchanges (Nova's "
                 "default), ``nova_object.*`` primitives, errors under the names of "
                 "``nova.exception``, so that unmodified Nova code (SchedulerAPI, "
                 "ComputeAPI, ComputeTaskAPI) can call minisched's services"),
    ], help="""
The dialect minisched's services and clients speak on the message bus.

Every service and client of one deployment must use the same profile. The
profile gives the defaults of ``[DEFAULT] control_exchange`` and
``[oslo_messaging_rabbit] amqp_durable_queues``; a value set in a
configuration file wins.

Under ``nova`` the topic queues are transient, as Nova declares them: a
RabbitMQ restart loses the casts they held (builds, instance updates), which
minisched's profile keeps. Setting ``amqp_durable_queues = True`` both here
and in every Nova client's ``nova.conf`` restores that, on a vhost where the
``nova`` exchange and the topic queues were not yet declared otherwise.

Related options: ``control_exchange``,
``[oslo_messaging_rabbit] amqp_durable_queues``"""),
    cfg.StrOpt('concurrency_backend', default='auto', choices=[
        ('auto', "the command's own default: native threads for minisched-scheduler, "
                 "minisched-compute, minisched-conductor and minisched-cluster; eventlet "
                 "for minisched-manage, as Nova 34 keeps it for nova-manage"),
        ('threading', 'native threads; nothing is monkey-patched and eventlet cannot be '
                      'imported'),
        ('eventlet', 'eventlet green threads: the standard library (psycopg2 included) is '
                     'monkey-patched before anything else is imported. Deprecated, as in '
                     'Nova.'),
    ], help="""
Concurrency model a minisched process runs with: native threads, the default
of every service since Nova 34 (2026.2), or eventlet, kept as a deprecated
choice.

Read at the very start of a command, from the files given with
``--config-file``/``--config-dir`` (or found by the default search), before
anything else is imported: eventlet must patch the standard library before
any library uses it. The environment variable
``OS_MINISCHED_DISABLE_EVENTLET_PATCHING`` wins over this option: ``1``,
``true`` or ``yes`` choose native threads, any other non-empty value
eventlet.

With native threads a service runs oslo.service's threading backend and
oslo.messaging's threading executor (``executor_thread_pool_size`` threads
per RPC server), and each thread has its own database connection from the
engine's pool. Under eventlet every green thread of a process shares one OS
thread: a query blocks only its green thread (psycopg2 and PyMySQL wait
cooperatively once patched), but any CPU work blocks them all.

Related options:

* ``[DEFAULT] default_thread_pool_size``, ``cell_worker_thread_pool_size``
  (native threads only)
* ``[DEFAULT] default_green_pool_size`` (eventlet only)"""),
    cfg.IntOpt('default_thread_pool_size', default=10, min=1, help="""
Threads of a service's default pool, which runs its background work. Only
used with native threads.

Related options: ``concurrency_backend``, ``default_green_pool_size``"""),
    cfg.IntOpt('default_green_pool_size', default=1000, min=100,
               deprecated_for_removal=True, deprecated_since='34.0.0',
               deprecated_reason='Only used with the eventlet backend, which is '
                                 'deprecated.',
               help="""
Green threads of a service's default pool. Only used with eventlet.

Related options: ``concurrency_backend``, ``default_thread_pool_size``"""),
    cfg.FloatOpt('thread_switch_interval', default=0.0005, min=0.00005, max=0.1, help="""
Seconds a native thread may hold Python's interpreter lock while another
thread waits for it (``sys.setswitchinterval``). minisched's own option,
applied at the start of every service that runs native threads; ignored
under eventlet.

Python's default, 0.005, makes the thread that reads the message bus wait up
to 5 ms behind one doing CPU work (deciding a request, decoding a large
message) before it can take the next message or send a reply: under load,
replies leave in bursts and clients wait. 0.0005 cuts that wait tenfold for
a little more switching (the admin guide's "Concurrency backends" gives
figures).

Related options: ``concurrency_backend``,
``[scheduler] max_concurrent_decisions``"""),
    cfg.IntOpt('cell_worker_thread_pool_size', default=5, min=1, help="""
Threads that read the cells at once, one task per cell, when a service
gathers rows from every cell (the scheduler's refresh of its host states).
Cells beyond this number wait for a free thread. Only used with native
threads; under eventlet every cell gets a green thread.

Related options: ``concurrency_backend``"""),
]


def register_opts(conf):
    conf.register_opts(OPTS)


def list_opts():
    return {GROUP: OPTS}
