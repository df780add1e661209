"""[api] options: what the compute API (``minisched-manage server create`` and its Python
API) accepts in one request."""
from oslo_config import cfg

GROUP = cfg.OptGroup('api', title='API', help="""
Options of the compute API, which writes build requests and hands them to
the conductor.""")

#: The scheduler's own bound of instances per ``select_destinations``
#: (``minisched.scheduler.manager.MAX_INSTANCES_PER_REQUEST``).
SCHEDULER_MAX_INSTANCES = 10000

OPTS = [
    cfg.IntOpt('max_instances_per_request', default=1000, min=1,
               max=SCHEDULER_MAX_INSTANCES, help="""
Most instances one create request may ask for (its ``max_count``).
minisched's own option: Nova bounds a request by the project's instance
quota (``[quota] instances``), which minisched does not have.

A request for more is refused before anything is written, with
TooManyInstances, unless its ``min_count`` fits: then this many are created,
as Nova creates as many as the quota allows when that is at least
``min_count``. The whole request travels to the conductor as one message of
about 4 to 5 KiB per instance, which must also fit ``[DEFAULT]
rpc_max_message_size_mb`` (checked too, before anything is written).

Valid values: 1 to 10000 (the scheduler refuses a request for more than
10000 instances).

Related options: ``[DEFAULT] rpc_max_message_size_mb``"""),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return {GROUP: OPTS}
