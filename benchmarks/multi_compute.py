"""Many fake computes in one process: one ComputeManager service per host of ``host_sizes``.

200 compute processes would take ~20 GB; the build bench runs, say, 8 of these launchers with
25 computes each. Each host of ``[fake_driver] host_sizes`` (``host:vcpus/memory_mb/local_gb``)
becomes a ``minisched-compute`` service of that name and size, each on a thread of this
process (``minisched.service.in_process_launcher``), with no database access (objects go
through the conductor), as ``minisched-compute`` itself runs::

    python -m benchmarks.multi_compute --config-file minisched.conf --config-file computes.conf
"""
import sys

from minisched import monkey_patch  # first: the backend minisched-compute would run with

monkey_patch.patch(backend='threading')


def main(argv=None):
    from minisched.cmd import common
    from minisched.compute import manager
    from minisched import service
    from minisched import thread_pool_factory
    conf = common.setup_service(argv)
    common.block_db_access('minisched-compute')
    hosts = sorted(conf.fake_driver.host_sizes)
    if not hosts:
        sys.stderr.write('multi_compute: no hosts: set [fake_driver] host_sizes\n')
        return 1
    # The computes share this process's build pool: as many builds at once as they would
    # run in processes of their own.
    thread_pool_factory.set_pool_size(thread_pool_factory.ExecutorType.LONG_TASK,
                              thread_pool_factory.max_concurrent_builds(conf) * len(hosts))
    launcher = service.in_process_launcher(conf, [
        service.Service.create(conf, 'minisched-compute', 'compute', manager.ComputeManager,
                               host=host)
        for host in hosts])
    launcher.wait()
    return 0


if __name__ == '__main__':
    sys.exit(main())
