"""minisched-cluster: a working local cluster in one command.

``up`` writes a config under the state directory, syncs the databases, maps the cells,
starts the conductor, the scheduler and N fake computes and discovers them; ``demo`` does
that in a state directory of its own, boots a batch of instances, prints where they landed
and why, each host's usage, and stops everything; ``status`` lists the services, whether
their processes run (and the cluster's RabbitMQ nodes); ``down`` stops a detached cluster.
Each cluster runs on a RabbitMQ vhost of its own. With ``--rabbit-nodes N`` the cluster
starts N RabbitMQ nodes of its own, joined into one RabbitMQ cluster, and runs on them with
quorum queues. It runs the real Placement service too (its own SQLite database and loopback
port under the state directory) and the services use it, as Nova 34's do;
``--no-placement`` runs the path without Placement instead.
"""
import os

from minisched import monkey_patch  # first: it chooses the concurrency backend
# The cluster writes its own config and names it to every command it runs: the file a shell
# that sourced a minisched.env names (perhaps of a cluster since purged) is not its own.
os.environ.pop(monkey_patch.CONFIG_FILE_ENV, None)
monkey_patch.patch(backend='threading')
import argparse
import shutil
import sys
import tempfile
import time

from minisched import localcluster
from minisched.localcluster import broker

DEFAULT_URL = 'rabbit://guest:guest@127.0.0.1:5672/'
#: The broker a cluster makes its vhost on when no --transport-url is given.
BROKER_ENV = 'MINISCHED_TRANSPORT_URL'
DEFAULT_STATE_DIR = 'minisched-cluster'
#: This command's own log, in the state directory (in-process services log to theirs).
TOOL_LOG = 'minisched-cluster.log'


def _add_common(parser, suppress):
    """The options every subcommand takes, before or after its name. ``suppress``: no
    defaults (a subcommand's parser must not overwrite what was given before its name)."""
    default = (lambda value: argparse.SUPPRESS) if suppress else (lambda value: value)
    parser.add_argument(
        '--state-dir', default=default(None), metavar='DIR',
        help='where config, databases and logs go (default: ./%s; for demo, a new temporary '
             'directory removed after a successful run)' % DEFAULT_STATE_DIR)
    parser.add_argument(
        '--transport-url', default=default(None), metavar='URL',
        help='RabbitMQ to run on, used as given (vhost included); the cluster refuses to '
             'start while its topic queues there have consumers. Default: a new vhost, '
             'made with rabbitmqctl and deleted when the cluster stops, on the broker of '
             '$%s (else %s); where rabbitmqctl cannot make one, that URL as given, with the '
             'same check. No broker answering: all services in this process on fake://'
             % (BROKER_ENV, DEFAULT_URL))
    parser.add_argument('--computes', type=int, default=default(3), metavar='N',
                        help='number of fake computes, of mixed sizes (default: 3)')
    parser.add_argument('--rabbit-nodes', type=int, default=default(0), metavar='N',
                        help='start N RabbitMQ nodes of the cluster\'s own (on loopback, data '
                             'under STATE_DIR/rabbit), joined into one RabbitMQ cluster, and '
                             'run the services on all of them with quorum queues, instead of '
                             '--transport-url (3 is the usual size; down removes them)')
    parser.add_argument('--placement', action=argparse.BooleanOptionalAction,
                        default=default(True),
                        help='run the real Placement service (openstack-placement under '
                             'uWSGI, its SQLite database under STATE_DIR, a free loopback '
                             'port) and use it, as Nova 34 does: computes report to it, the '
                             'scheduler asks it and claims ([placement] enabled; the '
                             'default). --no-placement: the path without Placement, whose '
                             'RamFilter and DiskFilter gate resources')


def _parser():
    parser = argparse.ArgumentParser(
        prog='minisched-cluster', description=__doc__.split('\n\n')[0],
        epilog='The databases are SQLite files under --state-dir. Without a reachable '
               'RabbitMQ the cluster runs in one process on the in-memory fake:// transport. '
               'The options above are accepted after the command name too.')
    _add_common(parser, suppress=False)
    from minisched import version
    parser.add_argument('--version', action='version',
                        version='%(prog)s ' + version.version_string)
    sub = parser.add_subparsers(dest='command', metavar='COMMAND', required=True)
    common = argparse.ArgumentParser(add_help=False)
    _add_common(common, suppress=True)
    up = sub.add_parser('up', parents=[common],
                        help='start the cluster (foreground until Ctrl-C, or --detach)')
    up.add_argument('--detach', action='store_true', help='leave it running and return')
    up.add_argument('--fresh', action='store_true',
                    help='wipe the state directory first (databases, logs, config); without '
                         'it an existing one is reused, and said so')
    demo = sub.add_parser('demo', parents=[common],
                          help='start on a clean state, boot instances, show where they '
                               'landed and why, stop')
    demo.add_argument('--instances', type=int, default=12,
                      help='instances to boot (default: 12)')
    sub.add_parser('status', parents=[common],
                   help='list the services, their state in the database and whether their '
                        'processes run')
    down = sub.add_parser('down', parents=[common], help='stop a cluster started with up '
                                                         '--detach')
    down.add_argument('--purge', action='store_true',
                      help='also remove the state directory (databases, logs, config)')
    return parser


def parse_args(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    if args.computes < 1:
        parser.error('--computes must be at least 1')
    if args.rabbit_nodes < 0:
        parser.error('--rabbit-nodes must not be negative')
    if getattr(args, 'instances', 1) < 1:
        parser.error('--instances must be at least 1')
    if args.rabbit_nodes and args.transport_url:
        parser.error('--rabbit-nodes and --transport-url exclude each other')
    return args


def main(argv=None):
    args = parse_args(argv)
    temporary = args.command == 'demo' and args.state_dir is None
    if temporary:
        state_dir = tempfile.mkdtemp(prefix='minisched-demo-')
    else:
        state_dir = args.state_dir or os.path.join(os.getcwd(), DEFAULT_STATE_DIR)
    cluster = localcluster.LocalCluster(state_dir, computes=args.computes,
                                        transport_url=args.transport_url,
                                        rabbit_nodes=args.rabbit_nodes,
                                        placement=args.placement)
    detach = args.command == 'up' and args.detach
    if args.command in ('up', 'demo') and cluster.running_services():
        # Starting again here would overwrite its records (and leave it running unseen).
        sys.stderr.write('minisched-cluster: error: a cluster started with "up --detach" is '
                         'running under %s: stop it first (minisched-cluster --state-dir %s '
                         'down)\n' % (cluster.state_dir, cluster.state_dir))
        return 1
    try:
        if args.command == 'down':
            return _down(cluster, args.purge)
        if args.command == 'status':
            return _status(cluster)
        _prepare_state(cluster, args, temporary)
        fake = _choose_broker(cluster, args, detach)
        if args.command == 'up':
            return _up(cluster, fake, detach=detach)
        ok = _demo(cluster, fake, args.instances)
        _after_demo(cluster, temporary, ok)
        return 0 if ok else 1
    except KeyboardInterrupt:
        cluster.say('Interrupted; stopping.')
        _stop_all(cluster)
        return 130
    except (RuntimeError, localcluster.StateDirError) as exc:
        sys.stderr.write('minisched-cluster: error: %s\n' % exc)
        _stop_all(cluster)
        if temporary:
            cluster.say('Config, databases and logs are in %s.' % cluster.state_dir)
        return 1
    except Exception as exc:
        # A bug, not the operator's doing: say so here too (the traceback goes to the log).
        sys.stderr.write('minisched-cluster: unexpected error: %s: %s (traceback in %s)\n' % (
            type(exc).__name__, exc, os.path.join(cluster.state_dir, TOOL_LOG)))
        raise


def _prepare_state(cluster, args, temporary):
    """A demo starts clean; ``up`` wipes with --fresh and otherwise says what it reuses."""
    if temporary:
        cluster.say('State directory (temporary): %s' % cluster.state_dir)
    elif args.command == 'demo' or args.fresh:
        if cluster.purge():
            cluster.say('Removed the earlier cluster state in %s.' % cluster.state_dir)
    elif cluster.has_state():
        cluster.say('Reusing the state directory %s (its databases, instances included; '
                    '"up --fresh" starts empty).' % cluster.state_dir)


def _after_demo(cluster, temporary, ok):
    if temporary and ok:
        shutil.rmtree(cluster.state_dir, ignore_errors=True)
        cluster.say('Removed the temporary state directory.')
    else:
        cluster.say('Config, databases and logs are in %s.' % cluster.state_dir)


def _choose_broker(cluster, args, detach):
    """Set the cluster's transport URL; True when it falls back to fake:// (no broker)."""
    if args.rabbit_nodes:
        cluster.start_rabbit(detach=detach)
        cluster.say('Using the cluster\'s %d RabbitMQ nodes, with quorum queues.'
                    % args.rabbit_nodes)
        return False
    stale = cluster.delete_vhost()  # left by a run that ended without stopping (killed)
    if stale:
        cluster.say('Deleted the vhost %s an earlier run of this state directory left.'
                    % stale)
    explicit = args.transport_url is not None
    url = args.transport_url or os.environ.get(BROKER_ENV) or DEFAULT_URL
    if not localcluster.probe_rabbit(url):
        cluster.say('No RabbitMQ at %s: running all services in this process on the '
                    'in-memory fake:// transport.' % _masked(url))
        return True
    if not explicit:
        command = broker.rabbitmqctl_for(url)
        if command is not None:
            try:
                vhost = broker.add_vhost(command, broker.user_of(url))
            except broker.VhostError as exc:
                cluster.say('Could not make a vhost of its own (%s); checking that %s is '
                            'not in use.' % (exc, _masked(url)))
            else:
                cluster.transport_url = broker.with_vhost(url, vhost)
                cluster.record_vhost(vhost)
                cluster.say('Using RabbitMQ at %s, on vhost %s of its own (deleted when the '
                            'cluster stops).' % (_masked(url), vhost))
                return False
    cluster.transport_url = url
    _refuse_busy_queues(cluster, url, explicit)
    cluster.say('Using RabbitMQ at %s.' % _masked(url))
    return False


def _refuse_busy_queues(cluster, url, explicit):
    busy = broker.busy_queues(url, broker.topic_queues(cluster.compute_names()))
    if not busy:
        return
    where = 'vhost %s of %s' % (broker.vhost_of(url), _masked(url))
    raise RuntimeError(
        'the queues this cluster would consume from already have consumers on %s: %s. '
        'Another cluster (or service) runs there, and the two would take each other\'s '
        'messages. Stop it, or give this cluster a vhost of its own: %s' % (
            where, ', '.join('%s (%d)' % item for item in sorted(busy.items())),
            'rabbitmqctl add_vhost NAME; rabbitmqctl set_permissions -p NAME %s ".*" ".*" '
            '".*"; then --transport-url %s' % (broker.user_of(url),
                                               _masked(broker.with_vhost(url, 'NAME')))
            if explicit else 'run it where rabbitmqctl can reach the broker, or pass '
                             '--transport-url with a vhost nobody else uses'))


def _stop_all(cluster):
    cluster.stop_processes()
    cluster.stop_placement()
    if cluster.rabbit is not None:
        cluster.stop_rabbit()
    cluster.delete_vhost()


def _masked(url):
    from minisched.objects import cell_mapping
    return cell_mapping.mask_url(url)


def _setup_process_config(cluster, init_rpc=True):
    """Load the cluster's config into this process (DB access; RPC only when needed)."""
    from minisched import config
    from minisched.db import engines
    from minisched import objects
    from oslo_log import log as logging
    config.parse_args(['minisched-cluster'] + cluster.config_args(),
                      init_rpc=init_rpc)
    if not config.CONF.log_file:
        # Its log records (the demo's filters warn that they are deprecated, say) go to a
        # file too: the console is for what this command says.
        config.CONF.set_override('log_file', os.path.join(cluster.state_dir, TOOL_LOG))
    logging.setup(config.CONF, 'minisched')
    objects.register_all()
    engines.configure(config.CONF)
    return config.CONF


def _start(cluster, fake):
    if cluster.placement:
        cluster.start_placement()
    # In-process (fake) services log to a file, so their lines do not interleave with ours.
    cluster.write_config(fake=fake)
    cluster.sync_databases()
    conf = _setup_process_config(cluster)
    from minisched.localcluster import records
    for line in records.align_cells(conf.transport_url):
        cluster.say(line)
    cluster.map_cells()
    lost = cluster.retire_lost_instances()
    if lost:
        cluster.say('%d instance(s) of an earlier run are set to ERROR and count on no host%s: '
                    'fake computes keep no instance across a restart.' % (
                        lost, ' (their Placement allocations removed)'
                        if cluster.placement_server is not None else ''))
    cluster.say('Starting conductor, scheduler and %d compute(s)...' % cluster.computes)
    if fake:
        launcher = _start_in_process(conf, cluster)
        cluster.record_in_process()
    else:
        launcher = None
        cluster.start_processes()
    cluster.wait_until_up()
    out = cluster.manage('cell', 'discover_hosts', '--verbose')
    mapped = sum(1 for line in out.splitlines() if line.startswith('Creating host mapping'))
    cluster.say('Discovered %d new compute host(s).' % mapped)
    if not fake:
        _check_cell_buses(cluster)
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
        cluster.forget_pids()
    else:
        cluster.stop_processes()
    cluster.stop_placement()
    if cluster.rabbit is not None:
        cluster.stop_rabbit()
    cluster.delete_vhost()
    cluster.say('Stopped.')


def _up(cluster, fake, detach):
    conf, launcher = _start(cluster, fake)
    env_file = cluster.write_env_file()
    manage = 'minisched-manage %s' % ' '.join(cluster.config_args())
    if detach and launcher is None:
        cluster.say('Cluster running; config %s.' % cluster.config_file)
        cluster.say('Operate it with: %s service list' % manage)
        cluster.say('  (or: source %s; then minisched-manage service list)' % env_file)
        cluster.say('Stop it with: minisched-cluster --state-dir %s down' % cluster.state_dir)
        return 0
    if detach:
        cluster.say('--detach needs RabbitMQ (fake:// lives in this process); running in '
                    'the foreground.')
    cluster.say('Cluster running; config %s. Ctrl-C stops it.' % cluster.config_file)
    if launcher is None:
        cluster.say('Operate it with: %s service list' % manage)
        cluster.say('  (or: source %s; then minisched-manage service list)' % env_file)
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
    return ok


def _status(cluster):
    if not cluster.has_state():
        sys.stderr.write('minisched-cluster: no cluster under %s\n' % cluster.state_dir)
        return 1
    _setup_process_config(cluster, init_rpc=False)
    from minisched.cmd import manage
    rows = cluster.service_rows()
    manage.print_table(['Binary', 'Host', 'Status', 'State', 'Last report', 'Process'], rows,
                       out=sys.stdout)
    if any(row[3] == 'up' and row[5].startswith('stopped') for row in rows):
        cluster.say('State "up" (from the database) lasts until service_down_time passes '
                    'without a report; the Process column is what runs now.')
    for line in cluster.rabbit_status():
        cluster.say(line)
    if not cluster.running_services():
        return 0  # a stopped cluster's vhost is gone: its cells name it, as expected
    return _check_cell_buses(cluster)


def _check_cell_buses(cluster):
    """1, after one line per cell whose message bus lets no connection in; else 0."""
    from minisched.cmd import manage_cell
    from minisched import context
    from minisched.messaging import bus_check
    found = bus_check.unreachable_cells(context.get_admin_context(),
                                        manage_cell._conf_transport_url())
    for cell, url, reason in found:
        sys.stderr.write(
            'minisched-cluster: error: cell %s sends its builds to %s, which lets no '
            'connection in (%s): builds will stay in BUILD/scheduling. Restart the cluster '
            '(minisched-cluster --state-dir %s down, then up): up points the cluster\'s cell '
            'at the vhost it makes.\n' % (cell.name, url, reason, cluster.state_dir))
    return 1 if found else 0


def _down(cluster, purge):
    pids = cluster.running_services()
    if pids:
        cluster.stop_processes(pids)
        cluster.say('Stopped %d service(s).' % len(pids))
    cluster.forget_pids()
    had_nodes = cluster.has_rabbit()
    if had_nodes:
        count = cluster.stop_rabbit()
        cluster.say('Stopped %d RabbitMQ node(s) and removed their data.' % count)
    vhost = cluster.delete_vhost()
    if vhost:
        cluster.say('Deleted its RabbitMQ vhost %s.' % vhost)
    if not pids and not had_nodes:
        cluster.say('No detached cluster is running under %s.' % cluster.state_dir)
    if purge and cluster.purge():
        cluster.say('Removed the state directory %s.' % cluster.state_dir)
    return 0


if __name__ == '__main__':
    sys.exit(main())
