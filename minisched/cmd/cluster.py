"""minisched-cluster: a working local cluster in one command.

``up`` writes a config under the state directory, syncs the databases, maps the cells,
starts the conductor, the scheduler and N fake computes and discovers them; ``demo`` does
that, boots a batch of instances, prints where they landed and each host's usage, and
stops everything; ``status`` lists the services (and the cluster's RabbitMQ nodes); ``down``
stops a detached cluster. With ``--rabbit-nodes N`` the cluster starts N RabbitMQ nodes of its
own, joined into one RabbitMQ cluster, and runs on them with quorum queues.
"""
from minisched import monkey_patch  # first: it chooses the concurrency backend
monkey_patch.patch(backend='threading')
import argparse
import os
import sys
import time

from minisched import localcluster

DEFAULT_URL = 'rabbit://guest:guest@127.0.0.1:5672/'


def _parser():
    parser = argparse.ArgumentParser(
        prog='minisched-cluster', description=__doc__.split('\n\n')[0],
        epilog='The databases are SQLite files under --state-dir. Without a reachable '
               'RabbitMQ the cluster runs in one process on the in-memory fake:// transport.')
    parser.add_argument('--state-dir', default=os.path.join(os.getcwd(), 'minisched-cluster'),
                        help='where config, databases and logs go (default: %(default)s)')
    parser.add_argument('--transport-url', default=os.environ.get('MINISCHED_TRANSPORT_URL',
                                                                  DEFAULT_URL),
                        help='RabbitMQ to use when reachable (default: %(default)s)')
    parser.add_argument('--computes', type=int, default=3,
                        help='number of fake computes, of mixed sizes (default: 3)')
    parser.add_argument('--rabbit-nodes', type=int, default=0, metavar='N',
                        help='start N RabbitMQ nodes of the cluster\'s own (on loopback, data '
                             'under STATE_DIR/rabbit), joined into one RabbitMQ cluster, and '
                             'run the services on all of them with quorum queues, instead of '
                             '--transport-url (3 is the usual size; down removes them)')
    sub = parser.add_subparsers(dest='command', metavar='COMMAND', required=True)
    up = sub.add_parser('up', help='start the cluster (foreground until Ctrl-C, or --detach)')
    up.add_argument('--detach', action='store_true', help='leave it running and return')
    demo = sub.add_parser('demo', help='start, boot instances, show placement, stop')
    demo.add_argument('--instances', type=int, default=12,
                      help='instances to boot (default: 12)')
    sub.add_parser('status', help='list the services of the cluster and their state')
    sub.add_parser('down', help='stop a cluster started with up --detach')
    return parser


def main(argv=None):
    args = _parser().parse_args(argv)
    if args.computes < 1:
        _parser().error('--computes must be at least 1')
    if args.rabbit_nodes < 0:
        _parser().error('--rabbit-nodes must not be negative')
    cluster = localcluster.LocalCluster(args.state_dir, computes=args.computes,
                                        transport_url=args.transport_url,
                                        rabbit_nodes=args.rabbit_nodes)
    detach = args.command == 'up' and args.detach
    if args.command in ('up', 'demo') and cluster.running_services():
        # Starting again here would overwrite its records (and leave it running unseen).
        sys.stderr.write('minisched-cluster: error: a cluster started with "up --detach" is '
                         'running under %s: stop it first (minisched-cluster --state-dir %s '
                         'down)\n' % (cluster.state_dir, cluster.state_dir))
        return 1
    try:
        if args.command == 'down':
            return _down(cluster)
        if args.command == 'status':
            return _status(cluster)
        fake = False
        if args.rabbit_nodes:
            cluster.start_rabbit(detach=detach)
            cluster.say('Using the cluster\'s %d RabbitMQ nodes, with quorum queues.'
                        % args.rabbit_nodes)
        elif localcluster.probe_rabbit(args.transport_url):
            cluster.say('Using RabbitMQ at %s.' % _masked(args.transport_url))
        else:
            fake = True
            cluster.say('No RabbitMQ at %s: running all services in this process on the '
                        'in-memory fake:// transport.' % _masked(args.transport_url))
        if args.command == 'up':
            return _up(cluster, fake, detach=detach)
        return _demo(cluster, fake, args.instances)
    except KeyboardInterrupt:
        cluster.say('Interrupted; stopping.')
        _stop_all(cluster)
        return 130
    except RuntimeError as exc:
        sys.stderr.write('minisched-cluster: error: %s\n' % exc)
        _stop_all(cluster)
        return 1


def _stop_all(cluster):
    cluster.stop_processes()
    if cluster.rabbit is not None:
        cluster.stop_rabbit()


def _masked(url):
    from minisched.objects import cell_mapping
    return cell_mapping.mask_url(url)


def _setup_process_config(cluster):
    """Load the cluster's config into this process (DB access; RPC only when needed)."""
    from minisched import config
    from minisched.db import engines
    from minisched import objects
    from oslo_log import log as logging
    config.parse_args(['minisched-cluster', '--config-file', cluster.config_file],
                      init_rpc=True)
    logging.setup(config.CONF, 'minisched')
    objects.register_all()
    engines.configure(config.CONF)
    return config.CONF


def _start(cluster, fake):
    # In-process (fake) services log to a file, so their lines do not interleave with ours.
    cluster.write_config(fake=fake)
    cluster.prepare_databases()
    conf = _setup_process_config(cluster)
    cluster.say('Starting conductor, scheduler and %d compute(s)...' % cluster.computes)
    if fake:
        launcher = _start_in_process(conf, cluster)
    else:
        launcher = None
        cluster.start_processes()
    cluster.wait_until_up()
    out = cluster.manage('cell', 'discover_hosts', '--verbose')
    mapped = sum(1 for line in out.splitlines() if line.startswith('Creating host mapping'))
    cluster.say('Discovered %d new compute host(s).' % mapped)
    return conf, launcher


def _start_in_process(conf, cluster):
    """All services in this process (fake:// only exists inside one process)."""
    from minisched.compute import manager as compute_manager
    from minisched.conductor import manager as conductor_manager
    from minisched.scheduler import manager as scheduler_manager
    from minisched import service
    services = [
        service.Service.create(conf, 'minisched-conductor', 'conductor',
                               conductor_manager.ConductorManager),
        service.Service.create(conf, 'minisched-scheduler', 'scheduler',
                               scheduler_manager.SchedulerManager)]
    services.extend(service.Service.create(conf, 'minisched-compute', 'compute',
                                           compute_manager.ComputeManager, host=name)
                    for name in cluster.compute_names())
    return service.in_process_launcher(conf, services)


def _stop(cluster, launcher):
    cluster.say('Stopping the cluster...')
    if launcher is not None:
        launcher.stop()
    else:
        cluster.stop_processes()
    if cluster.rabbit is not None:
        cluster.stop_rabbit()
    cluster.say('Stopped.')


def _up(cluster, fake, detach):
    conf, launcher = _start(cluster, fake)
    if detach and launcher is None:
        cluster.say('Cluster running; config %s. Stop it with: minisched-cluster --state-dir '
                    '%s down' % (cluster.config_file, cluster.state_dir))
        return 0
    if detach:
        cluster.say('--detach needs RabbitMQ (fake:// lives in this process); running in '
                    'the foreground.')
    cluster.say('Cluster running; config %s. Ctrl-C stops it.' % cluster.config_file)
    try:
        while True:
            time.sleep(1)
            if launcher is None:
                cluster._check_alive()
    finally:
        _stop(cluster, launcher)


def _demo(cluster, fake, count):
    conf, launcher = _start(cluster, fake)
    try:
        from minisched.cmd import demo
        ok = demo.run(conf, cluster.say, count)
    finally:
        _stop(cluster, launcher)
    return 0 if ok else 1


def _status(cluster):
    if not os.path.exists(cluster.config_file):
        sys.stderr.write('minisched-cluster: no cluster under %s\n' % cluster.state_dir)
        return 1
    sys.stdout.write(cluster.manage('service', 'list'))
    for line in cluster.rabbit_status():
        cluster.say(line)
    return 0


def _down(cluster):
    pids = cluster.saved_pids()
    if pids:
        cluster.stop_processes(pids)
        cluster.say('Stopped %d service(s).' % len(pids))
    had_nodes = cluster.has_rabbit()
    if had_nodes:
        count = cluster.stop_rabbit()
        cluster.say('Stopped %d RabbitMQ node(s) and removed their data.' % count)
    if not pids and not had_nodes:
        cluster.say('No detached cluster is running under %s.' % cluster.state_dir)
    return 0


if __name__ == '__main__':
    sys.exit(main())
