"""minisched-compute: runs instances through a virt driver; no database access."""
import sys

from minisched.cmd import common
from minisched.compute import manager
from minisched import service


def main(argv=None):
    conf = common.setup_service(argv)
    common.block_db_access('minisched-compute')
    server = service.Service.create(conf, binary='minisched-compute', topic='compute',
                                    manager_class=manager.ComputeManager)
    service.serve(conf, server)
    service.wait()


if __name__ == '__main__':
    sys.exit(main())
