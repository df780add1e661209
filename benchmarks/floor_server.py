"""One process of the build floor (``benchmarks.floor_endpoints``), in a service's place.

Started like the service it stands for (``python -m benchmarks.floor_server --config-file
<shared> --config-file <own>``), on the backend a service would run with, the same transport,
RPC server factory and serializer (``minisched.rpc.get_server``), with ``[build_floor] role``
in its own file: ``conductor`` (topic ``conductor``, its object calls and ``compute_task``;
database access), ``scheduler`` (topic ``scheduler``, fanouts included) or ``computes`` (one
RPC server per host of ``[fake_driver] host_sizes`` on topic ``compute``, objects through the
conductor). No service record, no state reports, no periodic tasks. Logs "build floor ready"
once listening.
"""
import sys
import time

from minisched import monkey_patch  # first: the backend a service would run with

monkey_patch.patch(backend='threading')

import oslo_messaging as messaging  # noqa: E402
from oslo_config import cfg  # noqa: E402

from benchmarks import floor_endpoints  # noqa: E402

ROLES = ('conductor', 'scheduler', 'computes')
_OPTS = [cfg.StrOpt('role', choices=ROLES, help='The service this process stands for.'),
         cfg.ListOpt('hosts', default=[], help='The computes (the scheduler picks them).')]


def _servers(conf, role):
    from minisched.cmd import common
    from minisched import rpc
    from minisched.messaging import trace
    if role == 'conductor':
        tables = floor_endpoints.Tables()
        return [rpc.get_server(messaging.Target(topic='conductor', server=conf.host), [
            floor_endpoints.FloorConductor(tables),
            floor_endpoints.FloorComputeTask(conf, tables)])]
    if role == 'scheduler':
        return [rpc.get_server(messaging.Target(topic='scheduler', server=conf.host), [
            floor_endpoints.FloorScheduler(conf, conf.build_floor.hosts)])]
    common.block_db_access('build-floor-compute')
    if trace.ENABLED:
        trace.set_service('multi_compute')
    sizes = conf.fake_driver.host_sizes
    return [rpc.get_server(messaging.Target(topic='compute', server=host), [
        floor_endpoints.FloorCompute(conf, host, [int(n) for n in sizes[host].split('/')],
                                     index + 1)])
        for index, host in enumerate(sorted(sizes))]


def main(argv=None):
    from minisched.cmd import common
    from minisched import config
    from minisched import service
    from minisched.messaging import trace
    config.CONF.register_opts(_OPTS, group='build_floor')
    conf = common.setup_service(argv)
    service.set_switch_interval(conf)  # as a service does
    role = conf.build_floor.role
    if trace.ENABLED and role != 'computes':
        trace.set_service('minisched-' + role)
    servers = _servers(conf, role)
    for server in servers:
        server.start()
    sys.stdout.write('build floor ready\n' * len(servers))
    sys.stdout.flush()
    while True:  # until SIGTERM (the bench stops it)
        time.sleep(3600)


if __name__ == '__main__':
    sys.exit(main())
