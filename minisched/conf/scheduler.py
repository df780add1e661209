"""[scheduler] options: driver, host manager, workers, retries and periodic discovery."""
from oslo_config import cfg

GROUP = cfg.OptGroup('scheduler', title='Scheduler', help='The scheduler service.')

OPTS = [
    cfg.StrOpt('driver', default='filter_scheduler', help="""
Scheduler driver, by its entry point name in ``minisched.scheduler.driver``:
``filter_scheduler`` (default), ``chance_scheduler`` or
``caching_scheduler``; a third-party driver is selected by its own entry
point name. An unknown name stops the scheduler at start-up."""),
    cfg.StrOpt('host_manager', default='host_manager', help="""
Host manager, by its entry point name in
``minisched.scheduler.host_manager``: ``host_manager`` or
``ironic_host_manager`` (whole-node consumption for baremetal nodes)."""),
    cfg.IntOpt('periodic_task_interval', default=60, help="""
Seconds between runs of the driver's periodic tasks (the caching scheduler
refreshes its host states there). 0 means the default spacing (60 s);
negative disables."""),
    cfg.IntOpt('max_attempts', default=3, min=1, help="""
Build attempts per instance: the chosen host plus ``max_attempts - 1``
alternates."""),
    cfg.IntOpt('discover_hosts_in_cells_interval', default=-1, min=-1, help="""
Seconds between automatic host discoveries (``minisched-manage cell
discover_hosts``) run by the scheduler. -1 disables the periodic task."""),
    cfg.PortOpt('metrics_listen_port', default=0, help="""
TCP port of the scheduler's Prometheus endpoint (``GET /metrics``),
served by the parent process with the figures of every worker summed.
0 (default) turns metrics off.

Related options: ``metrics_listen_host``"""),
    cfg.HostAddressOpt('metrics_listen_host', default='0.0.0.0', help="""
Address the Prometheus endpoint listens on when ``metrics_listen_port`` is
set: ``0.0.0.0`` (default) for every IPv4 address, ``127.0.0.1`` to allow
local scrapes only, ``::`` for IPv6.

Related options: ``metrics_listen_port``"""),
    cfg.StrOpt('record_requests_to', help="""
Directory where each scheduler worker appends every request it answers
(its RequestSpec, instance uuids and answer: the host and node of each
instance, or NoValidHost) as JSON lines, for ``minisched-manage scheduler
replay``. One file per worker process (``requests-<pid>.jsonl``), rotated
at 64 MiB with 9 older files kept. Unset (default): nothing is recorded.
Recording never fails a request: a directory that cannot be written logs
one WARNING and the requests go on unrecorded. Dry runs are not recorded.

Related options: ``workers``"""),
    cfg.IntOpt('max_placement_results', default=1000, min=1, help="""
Maximum number of allocation candidates the scheduler asks Placement for
(``GET /allocation_candidates?limit=``); only hosts among them are filtered
and weighed. As Nova's. A small value schedules faster on a large cloud but
may miss the best host (Placement returns them in no weighed order).

Related options: ``[placement] enabled``"""),
    cfg.BoolOpt('limit_tenants_to_placement_aggregate', default=False, help="""
With Placement: a project named in an aggregate's ``filter_tenant_id``
metadata (``filter_tenant_id``, ``filter_tenant_id2`` ...) is placed only on
the hosts of such aggregates, asked of Placement with ``member_of``. As
Nova's prefilter; other projects are not restricted unless
``placement_aggregate_required_for_tenants``.

Related options: ``placement_aggregate_required_for_tenants``"""),
    cfg.BoolOpt('placement_aggregate_required_for_tenants', default=False, help="""
With ``limit_tenants_to_placement_aggregate``: a project in no aggregate's
``filter_tenant_id`` gets no host (NoValidHost) instead of any host.

Related options: ``limit_tenants_to_placement_aggregate``"""),
    cfg.BoolOpt('query_placement_for_image_type_support', default=False, help="""
With Placement: ask only for hosts whose provider has the
``COMPUTE_IMAGE_TYPE_<disk format>`` trait of the request's image (not for
volume-backed requests). As Nova's prefilter."""),
    cfg.BoolOpt('enable_isolated_aggregate_filtering', default=False, help="""
With Placement: hosts of an aggregate whose metadata requires a trait
(``trait:<NAME>=required``) are kept for requests whose flavor or image
requires that trait; the others ask Placement to leave those aggregates out
(``member_of=!in:``). As Nova's prefilter."""),
    cfg.IntOpt('workers', min=0, help="""
Scheduler worker processes. Unset or 0: the number of CPUs with
``filter_scheduler``, otherwise 1."""),
    cfg.IntOpt('max_concurrent_decisions', default=1, min=1, help="""
How many ``select_destinations`` requests one scheduler worker decides at
the same time; the others it has received wait for a turn without using
CPU. minisched's own option (Nova has no such limit).

Deciding is CPU work in Python: with native threads, requests decided at the
same time share one interpreter lock, so each takes as long as all of them
together and switching between them costs CPU of its own. One at a time
answers sooner on average and serves more requests per second (the admin
guide's "Concurrency backends" gives figures). Under eventlet a request runs
until it waits on I/O anyway. Raise it only for filters or weighers of your
own that wait on I/O; add workers (``[scheduler] workers``) for more CPUs.

Related options: ``[scheduler] workers``,
``[DEFAULT] thread_switch_interval``"""),
]

DEFAULT_OPTS = [
    cfg.StrOpt('scheduler_json_config_location', default='', help="""
Absolute path of a JSON file of extra scheduler settings, re-read when it
changes and handed to filters as the request's ``config_options``. Empty:
none."""),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)
    conf.register_opts(DEFAULT_OPTS)


def list_opts():
    return {GROUP: OPTS, 'DEFAULT': DEFAULT_OPTS}
