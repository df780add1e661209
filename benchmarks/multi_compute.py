"""Many fake computes in one process: one ComputeManager service per host of ``host_sizes``.

200 compute processes would take ~20 GB; the build bench runs, say, 8 of these launchers with
25 computes each. Each host of ``[fake_driver] host_sizes`` (``host:vcpus/memory_mb/local_gb``)
becomes a ``minisched-compute`` service of that name and size, all in oslo.service's
ServiceLauncher, with no database access (objects go through the conductor), as
``minisched-compute`` itself runs::

    python -m benchmarks.multi_compute --config-file minisched.conf --config-file computes.conf
"""
import sys

import minisched.cmd  # noqa: F401  (eventlet monkey patching, as every minisched service)


def main(argv=None):
    from oslo_service import service as oslo_service
    from oslo_service import threadgroup

    from minisched.cmd import common
    from minisched.compute import manager
    from minisched import service
    conf = common.setup_service(argv)
    common.block_db_access('minisched-compute')
    hosts = sorted(conf.fake_driver.host_sizes)
    if not hosts:
        sys.stderr.write('multi_compute: no hosts: set [fake_driver] host_sizes\n')
        return 1
    launcher = oslo_service.ServiceLauncher(conf, restart_method='mutate')
    # A launcher runs each service on a green thread of a pool of 10 (oslo.service's
    # default): with more services the rest would never start. One thread per service.
    launcher.services.tg = threadgroup.ThreadGroup(thread_pool_size=len(hosts) + 1)
    for host in hosts:
        launcher.launch_service(service.Service.create(
            conf, 'minisched-compute', 'compute', manager.ComputeManager, host=host))
    launcher.wait()
    return 0


if __name__ == '__main__':
    sys.exit(main())
