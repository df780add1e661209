"""minisched-manage: the operator's tool (schemas, services, cells, flavors, groups,
aggregates, servers, scheduling, RPC checks).

Categories and actions are oslo.config sub-commands, as in nova-manage:
``minisched-manage [--config-file F] CATEGORY ACTION [args]``. Each action returns its exit
code; errors print one line on stderr.
"""
from minisched import monkey_patch  # first: it chooses the concurrency backend
monkey_patch.patch()
import difflib
import importlib
import logging
import os
import sys

import sqlalchemy as sa
from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_utils import timeutils

from minisched.cmd import manage_display
from minisched import config
from minisched.conf import database as db_conf
from minisched import context
from minisched.db import engines
from minisched.db import migration
from minisched import exception
from minisched import objects
from minisched.objects import service as service_obj
from minisched import servicegroup

CONF = config.CONF


def print_table(headers, rows, out=None):
    """Print ``rows`` under ``headers`` as an aligned text table."""
    out = out or sys.stdout
    cells = [[str(h) for h in headers]] + [['' if v is None else str(v) for v in row]
                                           for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    border = '+' + '+'.join('-' * (w + 2) for w in widths) + '+'
    lines = [border]
    for index, row in enumerate(cells):
        lines.append('| ' + ' | '.join(v.ljust(w) for v, w in zip(row, widths)) + ' |')
        if index == 0:
            lines.append(border)
    lines.append(border)
    out.write('\n'.join(lines) + '\n')


def _error(message):
    sys.stderr.write('%s\n' % message)


#: What a database without a table says, by backend: SQLite's message, PostgreSQL's SQLSTATE
#: (undefined_table) and MySQL/MariaDB's error number (ER_NO_SUCH_TABLE).
_NO_SUCH_TABLE = {'sqlite': 'no such table', 'postgresql': '42P01', 'mysql': 1146}


def _missing_table(exc):
    if isinstance(exc, db_exc.DBNonExistentTable):
        return True
    # oslo.db wraps what it does not recognise (PostgreSQL's 'relation "x" does not exist')
    # in a DBError around SQLAlchemy's exception, which carries the driver's.
    orig = getattr(getattr(exc, 'inner_exception', None) or exc, 'orig', None)
    if orig is None:
        return False
    code = getattr(orig, 'pgcode', None) or getattr(orig, 'sqlstate', None)
    return (code == _NO_SUCH_TABLE['postgresql'] or
            (orig.args[:1] == (_NO_SUCH_TABLE['mysql'],)) or
            _NO_SUCH_TABLE['sqlite'] in str(orig))


def db_error_line(exc):
    """One line for an operator about a database error ``exc``: the driver's first line, and
    what to run when the schema is not there."""
    line = 'Database error: %s' % exception.first_line(exc)
    if _missing_table(exc):
        line += (" (no minisched schema there yet? 'minisched-manage api_db sync' creates the "
                 "API database's, 'minisched-manage db sync' a cell database's)")
    return line


class DbCommands:
    """Cell database schema."""

    database = 'main'

    def sync(self, version=None):
        """Upgrade the schema to ``version`` (default: the newest); idempotent."""
        migration.db_sync(database=self.database, version=version)
        return 0

    def version(self):
        print(migration.db_version(database=self.database))
        return 0


class ApiDbCommands(DbCommands):
    """API database schema."""

    database = 'api'


class ServiceCommands:
    """Services and their state."""

    def list(self, host=None):
        ctxt = context.get_admin_context()
        group = servicegroup.API(CONF)
        services = objects.ServiceList.get_all(ctxt)
        rows = [(svc.id, svc.binary, svc.host, 'disabled' if svc.disabled else 'enabled',
                 'up' if group.service_is_up(svc) else 'down', _time(svc.updated_at),
                 svc.report_count, svc.forced_down, svc.disabled_reason)
                for svc in sorted(services, key=lambda s: (s.host, s.binary))
                if not host or svc.host == host]
        return ('ID', 'Binary', 'Host', 'Status', 'State', 'Updated At', 'Reports',
                'Forced Down', 'Disabled Reason'), rows

    def _get(self, host, binary):
        ctxt = context.get_admin_context()
        svc = service_obj.Service.get_by_host_and_binary(ctxt, host, binary)
        if svc is None:
            raise exception.HostBinaryNotFound(host=host, binary=binary)
        return svc

    def enable(self, host, binary):
        svc = self._get(host, binary)
        svc.disabled = False
        svc.disabled_reason = None
        _service_update(svc)
        print('Service %s on host %s enabled.' % (binary, host))
        return 0

    def disable(self, host, binary, reason=None):
        svc = self._get(host, binary)
        svc.disabled = True
        svc.disabled_reason = reason
        _service_update(svc)
        print('Service %s on host %s disabled.' % (binary, host))
        return 0

    def force_down(self, host, binary, unset=False):
        svc = self._get(host, binary)
        svc.forced_down = not unset
        svc.save()
        print('Service %s on host %s forced %s.' % (binary, host, 'up' if unset else 'down'))
        return 0


#: Nova's first compute service version that syncs COMPUTE_STATUS_DISABLED when told.
MIN_COMPUTE_SYNC_COMPUTE_STATUS_DISABLED = 38


def _service_update(svc):
    """Save the service; when a compute's ``disabled`` changed, have the compute add or
    remove ``COMPUTE_STATUS_DISABLED`` on its providers now, as Nova's ``HostAPI.
    service_update`` does (the compute's periodic resource update would, later)."""
    update_placement = 'disabled' in svc.obj_what_changed()
    svc.save()
    if update_placement and svc.binary == service_obj.COMPUTE_BINARY:
        _update_compute_provider_status(svc)


def _update_compute_provider_status(svc):
    """Nova's ``HostAPI._update_compute_provider_status``: skipped (a warning) when the
    compute is down or too old; a failed call is a warning, never a failed command."""
    if not servicegroup.API(CONF).service_is_up(svc):
        _error('Compute service on host %s is down. The COMPUTE_STATUS_DISABLED trait will '
               'be synchronized when the service is restarted.' % svc.host)
        return
    if svc.version < MIN_COMPUTE_SYNC_COMPUTE_STATUS_DISABLED:
        _error('Compute service on host %s is too old to sync the COMPUTE_STATUS_DISABLED '
               'trait in Placement. The trait will be synchronized when the service is '
               'upgraded and restarted.' % svc.host)
        return
    from minisched.cmd import manage_flavor
    from minisched.compute import rpcapi as compute_rpcapi
    try:
        with manage_flavor.broker_errors():
            manage_flavor.init_rpc(CONF)
            api = compute_rpcapi.ComputeAPI(CONF)
            manage_flavor.bounded(api.router.default_client)
            # On the bus of the host's cell, as Nova's @target_host_cell.
            with context.target_cell(context.get_admin_context(),
                                     _host_cell(svc.host)) as cctxt:
                api.set_host_enabled(cctxt, svc.host, not svc.disabled)
    except Exception as exc:
        _error('An error occurred while updating the COMPUTE_STATUS_DISABLED trait on compute '
               'node resource providers managed by host %s (%s). The trait will be '
               'synchronized automatically by the compute service when the '
               'update_available_resource periodic task runs.'
               % (svc.host, exception.first_line(exc)))


def _host_cell(host):
    """The cell mapping of ``host``; None (the configured bus) when it has no host mapping
    or the API database cannot say."""
    from minisched.objects import host_mapping as host_mapping_obj
    try:
        return host_mapping_obj.HostMapping.get_by_host(context.get_admin_context(),
                                                        host).cell_mapping
    except (exception.HostMappingNotFound, db_exc.DBError, sa.exc.SQLAlchemyError):
        return None


def _time(value):
    return timeutils.normalize_time(value).isoformat(sep=' ', timespec='seconds') \
        if value else None


def _add_db_parsers(subparsers, commands):
    sync = subparsers.add_parser('sync', help='Upgrade the schema to the latest version.')
    sync.add_argument('--version', dest='action_kwarg_version', metavar='REVISION',
                      help='Upgrade only to this revision.')
    sync.set_defaults(action_fn=commands.sync, action_kwargs=['version'])
    version = subparsers.add_parser('version', help='Print the current schema revision.')
    version.set_defaults(action_fn=commands.version, action_kwargs=[])


def _add_service_parsers(subparsers, commands):
    def arguments(parser):
        parser.add_argument('--host', metavar='HOST', help='Only services of this host.')
    manage_display.add_command(subparsers, 'list', manage_display.Lister(
        commands.list, ['host'], arguments), help_text='List services, with their up/down state.')
    for action, fn, extra in (('enable', commands.enable, None),
                              ('disable', commands.disable, 'reason'),
                              ('force-down', commands.force_down, 'unset')):
        help_text = '%s a service.' % action.capitalize()
        if action != 'force-down':
            help_text += (' A compute that is up is told at once (set_host_enabled), which '
                          'adds or removes the COMPUTE_STATUS_DISABLED trait of its resource '
                          'providers in Placement; one that is down is warned about.')
        parser = subparsers.add_parser(action, help=help_text)
        parser.add_argument('action_kwarg_host', metavar='host',
                            help='Host name of the service.')
        parser.add_argument('action_kwarg_binary', metavar='binary',
                            help='Binary, e.g. minisched-compute.')
        kwargs = ['host', 'binary']
        if extra == 'reason':
            parser.add_argument('--reason', dest='action_kwarg_reason', metavar='REASON',
                                help='Why the service is disabled.')
            kwargs.append('reason')
        elif extra == 'unset':
            parser.add_argument('--unset', action='store_true', dest='action_kwarg_unset',
                                help='Clear forced_down instead of setting it.')
            kwargs.append('unset')
        parser.set_defaults(action_fn=fn, action_kwargs=kwargs)


def _category_builders(only=None):
    """``(name, help, builder)`` per category (or of category ``only``); a builder adds the
    category's actions.

    Categories living in their own modules (``manage_<name>.py``) expose
    ``add_parsers(actions)``; each action sets ``action_fn`` and ``action_kwargs``, and names its
    arguments' dests ``action_kwarg_<name>`` (with a ``metavar``: ``--help`` shows it), or is
    a cliff command added with ``manage_display.add_command``.
    """
    builders = [
        ('db', DbCommands.__doc__, lambda a: _add_db_parsers(a, DbCommands())),
        ('api_db', ApiDbCommands.__doc__, lambda a: _add_db_parsers(a, ApiDbCommands())),
        ('service', ServiceCommands.__doc__,
         lambda a: _add_service_parsers(a, ServiceCommands())),
    ]
    builders = [builder for builder in builders if only in (None, builder[0])]
    for name in EXTRA_CATEGORIES:
        if only in (None, name):
            module = importlib.import_module('minisched.cmd.manage_%s' % name)
            builders.append((name, module.__doc__.splitlines()[0], module.add_parsers))
    return builders


#: Categories implemented in this module.
BUILTIN_CATEGORIES = ('db', 'api_db', 'service')
#: Categories implemented in ``minisched/cmd/manage_<name>.py``.
EXTRA_CATEGORIES = ('aggregate', 'cell', 'flavor', 'group', 'placement', 'rpc', 'scheduler',
                    'server')


#: Other names of categories: nova-manage's, so that its commands work as written.
CATEGORY_ALIASES = {'cell': ['cell_v2']}

#: The one category whose parsers the command line needs (set by ``_main``); None: all of
#: them, for ``--help`` without a category. Building every category imports every
#: ``manage_<name>`` module (the scheduler's replay, the filters...) and makes each cliff
#: command load its formatters: about 0.4 s of CPU per command for parsers it never uses.
_requested = {'category': None}


def add_command_parsers(subparsers):
    for name, help_text, builder in _category_builders(only=_requested['category']):
        parser = subparsers.add_parser(name, help=help_text,
                                       aliases=CATEGORY_ALIASES.get(name, []))
        builder(manage_display.add_actions(parser))


#: The general options that take a value, besides the CLI options registered on CONF.
_VALUE_OPTIONS = ('--config-file', '--config-dir')


def named_category(argv):
    """The first word of ``argv`` that is no option nor an option's value: the category it
    names (known or not), or None."""
    takes_value = set(_VALUE_OPTIONS)
    for opt, _group in CONF._all_cli_opts():
        if not isinstance(opt, (cfg.BoolOpt, cfg.SubCommandOpt)):
            takes_value.update('-' + name if len(name) == 1 else '--' + name
                               for name in (opt.dest.replace('_', '-'), opt.short) if name)
    skip = False
    for arg in argv[1:]:
        if skip:
            skip = False
        elif arg.startswith('-'):
            skip = '=' not in arg and arg in takes_value
        else:
            return arg
    return None


def unknown_category(argv):
    """The category ``argv`` names when it is none of minisched-manage's, else None."""
    name = named_category(argv)
    return None if name is None or name in category_names() else name


def category_names():
    """Every category's name, and the other names they are known by."""
    names = list(BUILTIN_CATEGORIES + EXTRA_CATEGORIES)
    return names + [alias for aliases in CATEGORY_ALIASES.values() for alias in aliases]


def canonical_category(name):
    """A category's own name for ``name`` (itself, or the category it is an alias of)."""
    return next((category for category, aliases in CATEGORY_ALIASES.items()
                 if name in aliases), name)


def did_you_mean(word, choices):
    """``'; did you mean X?'`` for the choice closest to ``word``, or ``''``."""
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return '; did you mean %r?' % close[0] if close else ''


CATEGORY_OPT = cfg.SubCommandOpt('category', title='Command categories',
                                 help='Available categories', handler=add_command_parsers)


#: The databases each category (or ``category action``) opens (both unless listed); ``rpc``
#: and ``scheduler replay`` (offline) open none.
_DATABASES = {'db': (engines.MAIN,), 'api_db': (engines.API,), 'service': (engines.MAIN,),
              'rpc': (), 'scheduler replay': ()}
_CONNECTION = {engines.MAIN: ('database', db_conf.MAIN_SQLITE),
               engines.API: ('api_database', db_conf.API_SQLITE)}


def unconfigured_database(category, action=None):
    """Without any configuration file, the first embedded SQLite database ``category``
    would open that does not exist, else None.

    Opening it would create an empty database under ``state_path`` that no service uses
    (they run with a configuration file): ``minisched-manage`` stops instead. A connection
    given another way (``OS_DATABASE__CONNECTION``...) counts as configured.
    """
    if config.config_sources(CONF):
        return None
    databases = _DATABASES.get('%s %s' % (category, action),
                               _DATABASES.get(category, (engines.MAIN, engines.API)))
    for database in databases:
        group, filename = _CONNECTION[database]
        path = os.path.join(CONF.state_path, filename)
        if not CONF[group].connection and not os.path.exists(path):
            return path
    return None


class _WatchedStdout:
    """``sys.stdout``, remembering the last error a write or flush met (other than a reader
    that went away): argparse's help swallows it and a command may catch it, so
    :func:`main` looks here before it calls a run a success."""

    def __init__(self, stream):
        self.stream = stream
        self.lost = None

    def write(self, text):
        return self._watch(self.stream.write, text)

    def writelines(self, lines):
        return self._watch(self.stream.writelines, lines)

    def flush(self):
        return self._watch(self.stream.flush)

    def _watch(self, call, *args):
        try:
            return call(*args)
        except BrokenPipeError:
            raise
        except OSError as exc:
            self.lost = exc
            raise

    def __getattr__(self, name):
        return getattr(self.stream, name)


def main(argv=None):
    """Run one action; its exit status. Output cut short by a reader that stopped
    (``minisched-manage server list | head -1``) ends the command quietly with status 1;
    output that cannot be written (``> /dev/full``) ends it with one line on stderr and
    status 1, never with a traceback or a silent 0."""
    watched = sys.stdout = _WatchedStdout(sys.stdout)
    try:
        return _run_watched(watched, argv)
    finally:
        sys.stdout = watched.stream


def _run_watched(watched, argv):
    status, exiting = 0, None
    try:
        try:
            status = _main(argv)
        except SystemExit as done:  # --help, argparse's usage errors, config.fail
            status, exiting = done.code, done
        finally:
            sys.stdout.flush()
    except BrokenPipeError:
        discard_stdout()
        return 1
    except OSError as exc:
        if exc is not watched.lost:
            raise
    if watched.lost is not None:
        discard_stdout()
        if status in (0, None):  # else the command has said why it failed
            _error('Cannot write to standard output: %s'
                   % (watched.lost.strerror or watched.lost))
            status = 1
            exiting = exiting and SystemExit(status)
    if exiting is not None:
        raise exiting
    return status


def discard_stdout():
    """Send what is left for stdout nowhere: Python would flush it again at exit and report
    that it cannot. A stdout without a file descriptor (captured) is left as it is."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)


def _main(argv=None):
    argv = list(sys.argv if argv is None else argv)
    prog = argv[0].rsplit('/', 1)[-1]
    CONF.register_cli_opt(CATEGORY_OPT)
    unknown = unknown_category(argv)
    if unknown is not None:
        # argparse would print its usage (every category) above the one line that matters
        config.fail(prog, 'unknown category %r%s (categories: %s; %s --help)' % (
            unknown, did_you_mean(unknown, category_names()),
            ', '.join(sorted(category_names())), prog), status=2)
    named = named_category(argv)
    _requested['category'] = canonical_category(named) if named else None
    config.parse_args(argv, init_rpc=False)
    missing = unconfigured_database(CONF.category.name, CONF.category.action)
    if missing:
        config.fail(prog, 'no configuration file (none given with --config-file or '
                          '--config-dir, no minisched.conf in %s) and no database at %s: give '
                          '--config-file with the [database] connection and [api_database] '
                          'connection of the deployment'
                    % (', '.join(config.SEARCHED_DIRS), missing))
    if not CONF.debug:
        # oslo.db logs each DB error it wraps with a traceback (no logging is set up here, so
        # Python prints it on stderr); main() reports the error in one line instead.
        logging.getLogger('oslo_db.sqlalchemy.exc_filters').setLevel(logging.ERROR)
    objects.register_all()
    engines.configure(CONF)
    for problem in engines.configured_url_problems():
        config.fail(prog, problem)
    fn = CONF.category.action_fn
    kwargs = {name: getattr(CONF.category, 'action_kwarg_' + name)
              for name in CONF.category.action_kwargs}
    try:
        return fn(**kwargs) or 0
    except exception.MinischedException as exc:
        _error(exc.format_message())
        return 1
    except (db_exc.DBError, sa.exc.SQLAlchemyError) as exc:
        # A database that cannot be reached or has no schema is an operator error: one line.
        _error(db_error_line(exc))
        return 1


if __name__ == '__main__':
    sys.exit(main())
