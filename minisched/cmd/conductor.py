"""minisched-conductor: executes database work for services without DB access."""
from minisched import monkey_patch  # first: it chooses the concurrency backend
monkey_patch.patch(backend='threading')
import sys

from oslo_concurrency import processutils

from minisched.cmd import common
from minisched.conductor import manager
from minisched import context
from minisched.messaging import bus_check
from minisched import service


def main(argv=None):
    conf = common.setup_service(argv)
    common.check_database('minisched-conductor')
    # A cell whose bus lets nobody in (a deleted vhost, a moved broker) would leave every
    # build sent there in "scheduling" with nothing said: say it now, once.
    bus_check.log_unreachable_cells(context.get_admin_context(), conf.transport_url)
    server = service.Service.create(conf, binary='minisched-conductor', topic='conductor',
                                    manager_class=manager.ConductorManager)
    workers = conf.conductor.workers or processutils.get_worker_count()
    service.serve(conf, server, workers=workers)
    service.wait()


if __name__ == '__main__':
    sys.exit(main())
