"""minisched-compute: runs instances through a virt driver; no database access."""
from minisched import monkey_patch  # first: it chooses the concurrency backend
monkey_patch.patch(backend='threading')
import sys

from minisched.cmd import common
from minisched.compute import manager
from minisched.compute import rpcapi as compute_rpcapi
from minisched import exception
from minisched import service
from minisched.virt import driver


def main(argv=None):
    conf = common.setup_service(argv)
    common.block_db_access('minisched-compute')
    # Before waiting for the conductor: a driver setting it cannot run with stops it now,
    # with one line and exit 1 (not a traceback and a clean exit once the conductor is up).
    try:
        driver.load_compute_driver(conf).check_config(conf.host)
    except (exception.ConfigInvalid, exception.VirtDriverNotFound) as exc:
        sys.stderr.write('minisched-compute: error: %s\n' % exc.format_message())
        return 1
    server = service.Service.create(conf, binary='minisched-compute', topic='compute',
                                    manager_class=manager.ComputeManager,
                                    topic_alt=compute_rpcapi.TOPIC_ALT)
    service.serve(conf, server)
    service.wait()


if __name__ == '__main__':
    sys.exit(main())
