"""[conductor] options."""
from oslo_config import cfg

GROUP = cfg.OptGroup('conductor', title='Conductor', help="""
The conductor executes the database work of services that have no database
access (compute) and drives the build flow.""")

#: Default of ``stuck_build_timeout_seconds``: four times the default
#: ``long_rpc_timeout`` (see the option's help for why).
STUCK_BUILD_TIMEOUT = 7200
#: Defaults of ``db_retry_timeout_seconds`` and ``cell_unreachable_wait_seconds``.
DB_RETRY_TIMEOUT = 600
CELL_UNREACHABLE_WAIT = 120

OPTS = [
    cfg.IntOpt('workers', min=1, help="""
Number of conductor worker processes. Default: the number of CPUs."""),
    cfg.IntOpt('max_concurrent_schedule_and_build', default=8, min=0, help="""
How many ``schedule_and_build_instances`` casts (the API's requests to start
builds) each conductor worker runs at once. minisched's own option.

The other messages of the conductor's queue run as they arrive: the calls of
builds already under way (a compute's instance saves, action events and
resource updates) and the state reports. The casts beyond this number wait
in arrival order, held by the worker, so a burst of creates no longer delays
every build in flight: each build's calls are answered as they come, and
builds finish about in the order they were requested. The same work is done.
While the scheduler does not answer, this many builds wait for it and the
others wait behind them, rather than all failing after the same timeouts.

With the rabbit driver these casts are acknowledged once they have run, not
on receipt as oslo.messaging does: a held or running cast stays in RabbitMQ
until then, runs before the worker stops, and is delivered again (to another
worker, or this one restarted) if the worker is killed. A held cast must run
within RabbitMQ's ``consumer_timeout`` (30 minutes by default), or the broker
delivers it again (the conductor skips what it already built). Each worker
logs on stop how many casts waited and for how long.

0: no limit, every message in arrival order, acknowledged on receipt (Nova's
behaviour: a worker killed loses the casts it received). Measured
(1,000-instance burst, 200 computes, 2 CPUs): request -> ACTIVE p50 17-21 s
with 8, 22 s with 12 to 32, 31-33 s with 0 or 64; a 16-client soak ran as
many builds a minute with 8 as with 0 (6 casts in 1,284 waited)."""),
    cfg.IntOpt('stuck_build_timeout_seconds', default=STUCK_BUILD_TIMEOUT, min=0, help="""
Seconds without progress after which a build is considered abandoned and is
ended by the conductor. 0 disables the check.

A build normally ends ACTIVE or ERROR through its compute. It cannot when
that compute is killed during the build and does not come back, when the
compute gave up writing the result after retrying for ``[DEFAULT]
long_rpc_timeout`` (the database or the message bus was away longer than
that), or when a conductor stopped while it handled the build request. Such
an instance would stay BUILDING for ever (Nova's ``instance_build_timeout``
is off by default and runs on the compute that may be gone).

A conductor periodic task (every 60 seconds, or every quarter of this bound
if that is shorter) looks at every cell for instances in BUILDING whose
record has not been written for this many seconds, and build requests this
old that no conductor has turned into an instance. It sets each to ERROR
with an instance fault giving the reason, finishes the open events of its
instance action with the result Error, clears its host and node as a failed
build does (so that its compute's next resource refresh drops its usage) and
tells the schedulers to forget it. With several conductors the update is
conditional: one of them does it.

A build on a host whose compute service is down (silent for ``[DEFAULT]
service_down_time``, not counting the time the conductor was itself cut off
from the database or the message bus) is ended after five times
``service_down_time`` instead, when that is shorter: a dead compute's builds
are found in minutes, a slow one's are left to finish.

Every step of a legitimate build writes the instance (scheduling, claim,
spawning, reschedule), so the bound must exceed the longest single step: the
longest spawn of your driver plus twice ``[DEFAULT] long_rpc_timeout`` (a
compute may retry its last write for that long, then its error report as
long again), plus how long a build message may wait in a queue (for a
compute's ``max_concurrent_builds`` slot, or for a conductor that is down).
The default is four times the default ``long_rpc_timeout``. A bound that is
too short ends builds that would have finished: their compute then finds the
instance in ERROR, removes the guest and leaves the record alone.

Related options: ``[DEFAULT] long_rpc_timeout``, ``[DEFAULT]
instance_build_timeout``, ``[DEFAULT] max_concurrent_builds``, ``[DEFAULT]
service_down_time``"""),
    cfg.IntOpt('db_retry_timeout_seconds', default=DB_RETRY_TIMEOUT, min=0, help="""
Seconds a build task keeps trying while a database it needs is unavailable.
minisched's own option.

A build task (``schedule_and_build_instances``, ``build_instances``) that
meets a database error which passes by itself (connection refused or lost,
deadlock, the server out of connections) runs again from the arguments it
was given, with a backoff of 1, 2, 4... up to 60 seconds between tries.
Every step of the task is treated alike, whether it is the first delivery
of the message, a delivery repeated by RabbitMQ, the rebuild of instances an
interrupted delivery placed, or a run again inside a run again: one bound
covers them all, counted from the start of the task. A second outage during
the retries of the first is retried the same way.

When the bound is reached the builds still under way end in ERROR with a
fault naming the database that stayed away ("The API database was
unavailable for 600 seconds: ..."), where that fault can be written; where
it cannot (the database holding the record is the one away) the stuck-build
check (``stuck_build_timeout_seconds``) ends them later. 0: no retry, a
database error ends the build at once.

Related options: ``stuck_build_timeout_seconds``, ``[DEFAULT]
long_rpc_timeout`` (the same bound for a compute's writes)"""),
    cfg.IntOpt('cell_unreachable_wait_seconds', default=CELL_UNREACHABLE_WAIT, min=0,
               help="""
Seconds a build that found no host waits for cells whose database does not
answer. minisched's own option.

The scheduler leaves out the hosts of a cell whose database does not answer
(they cannot be read). When no host fits a request while a cell is so
unreachable, the scheduler says so and the conductor asks again every few
seconds, up to this bound counted from the first answer: the build goes to
the cell when its database is back, or anywhere that fits meanwhile. Past
the bound the build ends in ERROR in cell0 with the fault "No valid host was
found. Cell NAME unreachable since TIME", not "not enough hosts". While it
waits, the build holds one of the conductor's
``max_concurrent_schedule_and_build`` places. 0: no wait, NoValidHost at
once (Nova's behaviour, with the cell named in the fault).

Related options: ``max_concurrent_schedule_and_build``"""),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return {GROUP: OPTS}
