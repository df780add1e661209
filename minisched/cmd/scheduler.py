"""minisched-scheduler: answers select_destinations with the configured driver."""
from minisched import monkey_patch  # first: it chooses the concurrency backend
monkey_patch.patch(backend='threading')
import sys

from oslo_concurrency import processutils

from minisched.cmd import common
from minisched import config
from minisched import exception
from minisched.scheduler import manager
from minisched.scheduler import metrics
from minisched.scheduler import plugins
from minisched import service


def _workers(conf):
    workers = conf.scheduler.workers
    if not workers:
        workers = (processutils.get_worker_count()
                   if conf.scheduler.driver == 'filter_scheduler' else 1)
    return workers


def _enabled_filter_choices(conf):
    """What ``[filter_scheduler] enabled_filters`` may name, as weighers and drivers say."""
    names = plugins.classes(plugins.FILTERS, conf.filter_scheduler.available_filters,
                            plugins.ALL_FILTERS)
    return ('[filter_scheduler] enabled_filters may name the filters of [filter_scheduler] '
            'available_filters: %s' % (', '.join(sorted(names)) or 'none'))


def main(argv=None):
    conf = common.setup_service(argv)
    common.check_database('minisched-scheduler')
    try:
        server = service.Service.create(conf, binary='minisched-scheduler', topic='scheduler',
                                        manager_class=manager.SchedulerManager)
    except exception.PluginNotFound as exc:
        config.fail('minisched-scheduler', exc.format_message())
    except exception.SchedulerHostFilterNotFound as exc:
        config.fail('minisched-scheduler', '%s %s' % (exc.format_message(),
                                                      _enabled_filter_choices(conf)))
    # Before the workers fork: they record into the files the parent's endpoint reads.
    try:
        metrics.serve(conf)
    except OSError as exc:
        config.fail('minisched-scheduler', 'cannot serve metrics on [scheduler] '
                    'metrics_listen_port %s: %s' % (conf.scheduler.metrics_listen_port, exc))
    service.serve(conf, server, workers=_workers(conf))
    service.wait()


if __name__ == '__main__':
    sys.exit(main())
