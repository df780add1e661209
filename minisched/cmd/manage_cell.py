"""Cells v2: cell mappings, cell0 and host discovery (nova-manage cell_v2).

``minisched-manage cell ACTION`` has Nova's ``cell_v2`` actions with Nova's flags, messages and
exit codes: ``simple_cell_setup``, ``map_cell0``, ``discover_hosts``, ``create_cell``,
``list_cells``, ``delete_cell``, ``update_cell`` and ``list_hosts`` (``create``, ``list`` and
``delete`` are accepted as short names). Errors print one line on stderr; other messages go to
stdout, as Nova prints them.

A cell's URLs may be templates, as in Nova: ``{scheme}``, ``{username}``, ``{password}``,
``{hostname}``, ``{port}``, ``{path}``, ``{query}`` and ``{fragment}`` (and ``{hostname1}``...
for each host of a multi-host URL) are replaced by the parts of the local ``[database]
connection`` (database URLs) or ``[DEFAULT] transport_url`` (transport URLs), so that each host
can use its own credentials. The template is stored; :func:`format_url` formats it where the
URL is used.
"""
import logging
import os
import sys

import oslo_messaging as messaging
import sqlalchemy as sa
from oslo_db import exception as db_exc
from oslo_utils import uuidutils
from sqlalchemy.engine import url as sa_url

from minisched import config, context, exception
from minisched.cmd import manage
from minisched.cmd import manage_display
from minisched.db import engines, migration
from minisched.db.api import api as api_db
from minisched.objects import cell_mapping as cell_mapping_obj
from minisched.objects import compute_node as compute_node_obj
from minisched.objects import host_mapping as host_mapping_obj
from minisched.objects import instance as instance_obj
from minisched.objects import instance_mapping as instance_mapping_obj

CONF = config.CONF
LOG = logging.getLogger(__name__)

CellMapping = cell_mapping_obj.CellMapping

#: Name ``simple_cell_setup`` gives the cell of the local ``[database]`` when it creates it.
SIMPLE_CELL_NAME = 'cell1'


format_url = cell_mapping_obj.format_url


def _local_db_url():
    """The URL of this host's cell database: ``[database] connection`` or its default."""
    return engines.configured_url(engines.MAIN)


def _conf_transport_url():
    # manage parses with init_rpc=False: parsing registers [DEFAULT] transport_url (the same
    # option objects get_transport registers) before it is read.
    try:
        messaging.TransportURL.parse(CONF)
    except (messaging.InvalidTransportURL, ValueError):
        pass
    return CONF.transport_url


def _db_url_of(cell):
    return format_url(cell.database_connection, _local_db_url())


def _mq_url_of(cell):
    return format_url(cell.transport_url, _conf_transport_url())


def _for_db_access(cell):
    """``cell`` with its database URL formatted, for ``context.target_cell``."""
    url = _db_url_of(cell)
    if url == cell.database_connection:
        return cell
    formatted = cell.obj_clone()
    formatted.database_connection = url
    return formatted


def _error(message):
    sys.stderr.write('%s\n' % message)


def _cell0_default_connection():
    """The main URL with ``_cell0`` appended to the database name (Nova's rule).

    For an SQLite file the suffix goes before the extension: ``minisched_cell0.sqlite`` beside
    ``minisched.sqlite``.
    """
    url = sa_url.make_url(_local_db_url())
    database = url.database
    if url.get_backend_name() == 'sqlite':
        if database in (None, '', ':memory:'):
            raise exception.Invalid(reason='cannot derive a cell0 database from an in-memory '
                                           'SQLite [database] connection; pass '
                                           '--database_connection')
        root, ext = os.path.splitext(database)
        database = root + '_cell0' + ext
    else:
        database = (database or '') + '_cell0'
    return url.set(database=database).render_as_string(hide_password=False)


class CellCommands:
    """Cells v2: cell and host mappings."""

    # -- URL validation ---------------------------------------------------------------------------

    def _validate_transport_url(self, transport_url, warn_about_none=True):
        if not transport_url:
            if not _conf_transport_url():
                if warn_about_none:
                    _error('Must specify --transport-url if [DEFAULT]/transport_url is not '
                           'set in the configuration file.')
                return None
            print('--transport-url not provided in the command line, using the value '
                  '[DEFAULT]/transport_url from the configuration file')
            transport_url = _conf_transport_url()
        try:
            messaging.TransportURL.parse(CONF, url=format_url(transport_url,
                                                              _conf_transport_url()))
        except (messaging.InvalidTransportURL, ValueError) as exc:
            _error('Invalid transport URL: %s' % exc)
            return None
        return transport_url

    def _validate_database_connection(self, database_connection, use_default=True):
        """The given URL, else ``[database] connection``, else (``use_default``) its default."""
        if database_connection:
            return database_connection
        if CONF.database.connection:
            print('--database_connection not provided in the command line, using the value '
                  '[database]/connection from the configuration file')
            return CONF.database.connection
        if not use_default:
            return None
        print('--database_connection not provided in the command line, using the default '
              '[database]/connection %s' % cell_mapping_obj.mask_url(_local_db_url()))
        return _local_db_url()

    @staticmethod
    def _unusable_database_connection(database_connection):
        """True (after saying why) when SQLAlchemy could not use the URL once formatted: an
        unknown dialect or driver, a driver not installed, a bad port. Whether the server
        answers is not checked: a cell may be mapped before its database is up."""
        problem = engines.url_problem(format_url(database_connection, _local_db_url()))
        if problem:
            _error('Invalid database connection: %s' % problem)
        return problem is not None

    def _non_unique_transport_url_database_connection_checker(self, ctxt, cell_mapping,
                                                              transport_url,
                                                              database_connection):
        """True (after saying which) if another cell has this transport or database URL."""
        wanted_mq = format_url(transport_url, _conf_transport_url())
        wanted_db = format_url(database_connection, _local_db_url())
        for cell in cell_mapping_obj.CellMappingList.get_all(ctxt):
            if cell_mapping and cell.uuid == cell_mapping.uuid:
                continue  # an update may keep its own URLs
            if _db_url_of(cell) == wanted_db or _mq_url_of(cell) == wanted_mq:
                _error('The specified transport_url and/or database_connection combination '
                       'already exists for another cell with uuid %s.' % cell.uuid)
                return True
        return False

    # -- cell0 and the simple setup ---------------------------------------------------------------

    def _map_cell0(self, database_connection=None):
        ctxt = context.get_admin_context()
        # cell0 gets no message queue: nothing is ever sent to it over RPC.
        cell0 = CellMapping(ctxt, uuid=CellMapping.CELL0_UUID, name='cell0',
                            transport_url='none:///',
                            database_connection=(database_connection
                                                 or _cell0_default_connection()))
        cell0.create()
        return cell0

    def map_cell0(self, database_connection=None):
        """Create the cell0 mapping (idempotent); returns 0 when created or already there, 1
        for a ``--database_connection`` SQLAlchemy cannot use.

        cell0 holds the instances that could not be scheduled to any cell. Without
        ``--database_connection`` its database is the main one's with ``_cell0`` appended to
        the database name.
        """
        if database_connection and self._unusable_database_connection(database_connection):
            return 1
        try:
            self._map_cell0(database_connection)
        except exception.CellMappingExists:
            print('Cell0 is already setup')
        return 0

    def _local_cell(self, ctxt, transport_url):
        """The cell of the local ``[database]``: found through a mapped host or by URL, else
        created (minisched: even before any compute host reported)."""
        local_url = _local_db_url()
        for node in compute_node_obj.ComputeNodeList.get_all(ctxt):
            try:
                mapping = host_mapping_obj.HostMapping.get_by_host(ctxt, node.host)
            except exception.HostMappingNotFound:
                continue
            return mapping.cell_mapping
        for cell in cell_mapping_obj.CellMappingList.get_all(ctxt):
            if not cell.is_cell0() and _db_url_of(cell) == local_url:
                return cell
        cell = CellMapping(ctxt, uuid=uuidutils.generate_uuid(), name=SIMPLE_CELL_NAME,
                           transport_url=transport_url, database_connection=local_url)
        cell.create()
        return cell

    def _map_instances(self, ctxt, cell):
        """Map the instances of ``cell`` that have no instance mapping yet."""
        with context.target_cell(ctxt, _for_db_access(cell)) as cctxt:
            instances = instance_obj.InstanceList.get_by_filters(
                cctxt.elevated(read_deleted='yes'), {}, sort_key='created_at', sort_dir='asc')
        for instance in instances:
            mapping = instance_mapping_obj.InstanceMapping(
                ctxt, instance_uuid=instance.uuid, cell_mapping=cell,
                project_id=instance.project_id or '')
            if instance.user_id is not None:  # as Nova's, a mapping's user is never None
                mapping.user_id = instance.user_id
            try:
                mapping.create()
            except exception.InstanceMappingExists:
                continue

    def simple_cell_setup(self, transport_url=None):
        """Map cell0 (and sync its schema) and the cell of the local ``[database]``, with its
        hosts and instances.

        Returns 0 when the setup is complete or was already done, 1 without a usable transport
        URL. Unlike Nova, which creates no cell and returns 1 while no compute host has
        reported, minisched maps the local cell anyway (hosts join it with ``discover_hosts``).
        """
        transport_url = self._validate_transport_url(transport_url)
        if not transport_url:
            return 1
        ctxt = context.get_admin_context()
        try:
            cell0 = self._map_cell0()
        except exception.CellMappingExists:
            print('Cell0 is already setup')
            cell0 = CellMapping.get_by_uuid(ctxt, CellMapping.CELL0_UUID)
        try:
            migration.db_sync(_db_url_of(cell0), 'main')
        except (db_exc.DBError, sa.exc.SQLAlchemyError) as exc:
            print('Unable to sync cell0 schema: %s' % str(exc).strip().splitlines()[0])
        cell = self._local_cell(ctxt, transport_url)
        if not compute_node_obj.ComputeNodeList.get_all(ctxt):
            print('No hosts found to map to cell, exiting.')
        elif not host_mapping_obj.discover_hosts(ctxt, cell.uuid):
            print('All hosts are already mapped to cell(s).')
        self._map_instances(ctxt, cell)
        return 0

    # -- hosts ------------------------------------------------------------------------------------

    def discover_hosts(self, cell_uuid=None, verbose=False, strict=False, by_service=False):
        """Map the compute hosts of every cell (or of one) that are not mapped yet.

        Exit 0, or with ``--strict`` 1 when no host was mapped; 2 when a discovery running in
        parallel mapped a host first (run it once, after all computes are deployed).
        """
        def status_fn(msg):
            if verbose:
                print(msg)

        ctxt = context.get_admin_context()
        try:
            hosts = host_mapping_obj.discover_hosts(ctxt, cell_uuid, status_fn, by_service)
        except exception.HostMappingExists as exc:
            _error('ERROR: Duplicate host mapping was encountered. This command should be run '
                   'once after all compute hosts have been deployed and should not be run in '
                   'parallel. When run in parallel, the commands will collide with each other '
                   'trying to map the same hosts in the database at the same time. Error: %s'
                   % exc.format_message())
            return 2
        if strict:
            return int(not hosts)
        return 0

    def list_hosts(self, cell_uuid=None):
        """List the host mappings of every cell, or of one (exit 1: no such cell)."""
        ctxt = context.get_admin_context()
        if cell_uuid:
            try:
                cell = CellMapping.get_by_uuid(ctxt, cell_uuid)
            except exception.CellMappingNotFound:
                _error('Cell with uuid %s was not found.' % cell_uuid)
                return 1
            host_mappings = host_mapping_obj.HostMappingList.get_by_cell_id(ctxt, cell.id)
        else:
            host_mappings = host_mapping_obj.HostMappingList.get_all(ctxt)
        rows = [[hm.cell_mapping.name, hm.cell_mapping.uuid, hm.host]
                for hm in sorted(host_mappings, key=lambda hm: hm.host)]
        manage.print_table(['Cell Name', 'Cell UUID', 'Hostname'], rows)
        return 0

    # -- cells ------------------------------------------------------------------------------------

    def create_cell(self, name=None, database_connection=None, transport_url=None,
                    verbose=False, disabled=False):
        """Add a cell mapping; URLs default to the local ones. ``--verbose`` prints its uuid.

        Exit 1 without a valid transport URL or with a database URL SQLAlchemy cannot use; 2
        when another cell has the same transport or database URL.
        """
        ctxt = context.get_admin_context()
        transport_url = self._validate_transport_url(transport_url)
        if not transport_url:
            return 1
        database_connection = self._validate_database_connection(database_connection)
        if self._unusable_database_connection(database_connection):
            return 1
        if self._non_unique_transport_url_database_connection_checker(
                ctxt, None, transport_url, database_connection):
            return 2
        cell = CellMapping(ctxt, uuid=uuidutils.generate_uuid(), name=name,
                           transport_url=transport_url, database_connection=database_connection,
                           disabled=disabled)
        cell.create()
        if verbose:
            print(cell.uuid)
        return 0

    def list_cells(self, verbose=False):
        """List the cells, their (formatted) URLs with passwords masked unless ``--verbose``."""
        cells = cell_mapping_obj.CellMappingList.get_all(context.get_admin_context())
        show = (lambda url: url) if verbose else cell_mapping_obj.mask_url
        rows = [[cell.name or '', cell.uuid, show(_mq_url_of(cell)), show(_db_url_of(cell)),
                 cell.disabled]
                for cell in sorted(cells, key=lambda cell: cell.name or '')]
        manage.print_table(['Name', 'UUID', 'Transport URL', 'Database Connection',
                            'Disabled'], rows)
        return 0

    def delete_cell(self, cell_uuid, force=False):
        """Delete an empty cell; ``--force`` also deletes its host mappings and the instance
        mappings of its deleted instances.

        Exit 1: no such cell; 2: hosts are mapped to it (without ``--force``); 3: it has live
        instances; 4: instance mappings remain though all its instances are deleted (without
        ``--force``).
        """
        ctxt = context.get_admin_context()
        try:
            cell = CellMapping.get_by_uuid(ctxt, cell_uuid)
        except exception.CellMappingNotFound:
            _error('Cell with uuid %s was not found.' % cell_uuid)
            return 1
        host_mappings = host_mapping_obj.HostMappingList.get_by_cell_id(ctxt, cell.id)
        nodes = []
        if host_mappings:
            if not force:
                _error('There are existing hosts mapped to cell with uuid %s.' % cell_uuid)
                return 2
            with context.target_cell(ctxt, _for_db_access(cell)) as cctxt:
                nodes = compute_node_obj.ComputeNodeList.get_all(cctxt)
        instance_mappings = api_db.instance_mapping_get_all_by_cell(ctxt, cell.id)
        if instance_mappings:
            with context.target_cell(ctxt, _for_db_access(cell)) as cctxt:
                live = instance_obj.InstanceList.get_by_filters(cctxt, {'deleted': False},
                                                                limit=1)
            if live:
                _error('There are existing instances mapped to cell with uuid %s.'
                       % cell_uuid)
                return 3
            if not force:
                _error('There are instance mappings to cell with uuid %s, but all instances '
                       'have been deleted in the cell. So execute "minisched-manage cell '
                       'delete_cell --force" to delete the instance mappings.' % cell_uuid)
                return 4
        for mapping in instance_mappings:
            api_db.instance_mapping_destroy(ctxt, mapping['instance_uuid'])
        for node in nodes:  # unmapped, so that a later discovery maps them again
            node.mapped = 0
            node.save()
        for host_mapping in host_mappings:
            host_mapping.destroy()
        cell.destroy()
        return 0

    def update_cell(self, cell_uuid, name=None, transport_url=None, db_connection=None,
                    disable=False, enable=False):
        """Change a cell's name, URLs or disabled state (running services see new URLs only
        after a restart, and the state after a SIGHUP of the scheduler).

        As in Nova, a URL not given is taken from the configuration file when set there.
        Exit 1: no such cell; 2: the update failed (or the database URL is one SQLAlchemy
        cannot use); 3: another cell has the same transport or
        database URL; 4: both ``--disable`` and ``--enable``; 5: enabling or disabling cell0.
        """
        ctxt = context.get_admin_context()
        try:
            cell = CellMapping.get_by_uuid(ctxt, cell_uuid)
        except exception.CellMappingNotFound:
            _error('Cell with uuid %s was not found.' % cell_uuid)
            return 1
        if name:
            cell.name = name
        transport_url = self._validate_transport_url(transport_url, warn_about_none=False)
        db_connection = self._validate_database_connection(db_connection, use_default=False)
        if db_connection and self._unusable_database_connection(db_connection):
            return 2
        if self._non_unique_transport_url_database_connection_checker(
                ctxt, cell, transport_url, db_connection):
            return 3
        if transport_url:
            cell.transport_url = transport_url
        if db_connection:
            cell.database_connection = db_connection
        if disable and enable:
            _error('Cell cannot be disabled and enabled at the same time.')
            return 4
        if disable or enable:
            if cell.is_cell0():
                _error('Cell0 cannot be disabled.')
                return 5
            if disable == cell.disabled:
                print('Cell %s is already %s' % (cell_uuid, 'disabled' if disable else 'enabled'))
            cell.disabled = bool(disable)
        try:
            cell.save()
        except Exception as exc:
            _error('Unable to update CellMapping: %s' % exc)
            return 2
        return 0


# -- command line ---------------------------------------------------------------------------------

def _arg(*flags, **kwargs):
    """An argument: its flags and ``add_argument`` keywords (``dest`` without the prefix)."""
    return flags, kwargs


def _with_help(arg, help_text, **extra):
    """``arg`` with its help text set (and any other keyword)."""
    flags, kwargs = arg
    return flags, dict(kwargs, help=help_text, **extra)


_CELL_UUID = _arg('--cell_uuid', dest='cell_uuid', metavar='<cell_uuid>')
_VERBOSE = _arg('--verbose', dest='verbose', action='store_true')
_TRANSPORT_URL = _arg('--transport-url', dest='transport_url', metavar='<transport_url>',
                      help='The transport URL of the cell message queue (a template may use '
                           '{scheme}, {username}, {password}, {hostname}, {port}, {path}, '
                           '{query} of [DEFAULT] transport_url).')
_DB_URL_HELP = ('The database URL of the cell (a template may use {scheme}, {username}, '
                '{password}, {hostname}, {port}, {path}, {query} of [database] connection).')


def _actions(commands):
    """``(name, aliases, function, help, arguments)`` of each action, as in nova-manage."""
    return [
        ('simple_cell_setup', (), commands.simple_cell_setup,
         'Map cell0 and the local cell, with its hosts and instances.', [_TRANSPORT_URL]),
        ('map_cell0', (), commands.map_cell0, 'Create the cell0 mapping (idempotent).',
         [_arg('--database_connection', dest='database_connection',
               metavar='<database_connection>',
               help='The database URL of cell0. Default: the [database] connection with '
                    '_cell0 appended to the database name.')]),
        ('discover_hosts', (), commands.discover_hosts,
         'Map the unmapped compute hosts of every cell, or of one.',
         [_with_help(_CELL_UUID, 'If provided only this cell will be searched for new hosts '
                                'to map.'),
          _with_help(_VERBOSE, 'Provide detailed output when discovering hosts.'),
          _arg('--strict', dest='strict', action='store_true',
               help='Considered successful (exit code 0) only when an unmapped host is '
                    'discovered. Any other outcome will be considered a failure (non-zero '
                    'exit code).'),
          _arg('--by-service', dest='by_service', action='store_true',
               help='Discover hosts by service instead of compute node.')]),
        ('create_cell', ('create',), commands.create_cell,
         'Add a cell mapping; URLs default to the local config.',
         [_arg('--name', dest='name', metavar='<cell_name>', help='The name of the cell.'),
          _arg('--database_connection', dest='database_connection',
               metavar='<database_connection>', help=_DB_URL_HELP),
          _TRANSPORT_URL,
          _with_help(_VERBOSE, 'Output the uuid of the created cell.'),
          _arg('--disabled', dest='disabled', action='store_true',
               help='Create the cell disabled.')]),
        ('list_cells', ('list',), commands.list_cells, 'List the cells.',
         [_with_help(_VERBOSE, 'Show sensitive details, such as passwords.')]),
        ('delete_cell', ('delete',), commands.delete_cell, 'Delete an empty cell.',
         [_arg('--force', dest='force', action='store_true',
               help='Delete the hosts and the instance mappings of deleted instances that '
                    'belong to the cell as well.'),
          _with_help(_CELL_UUID, 'The uuid of the cell to delete.', required=True)]),
        ('update_cell', (), commands.update_cell, "Change a cell's name, URLs or state.",
         [_with_help(_CELL_UUID, 'The uuid of the cell to update.', required=True),
          _arg('--name', dest='name', metavar='<cell_name>', help='Set the cell name.'),
          _with_help(_TRANSPORT_URL, 'Set the cell transport_url. NOTE that running nodes will '
                                    'not see the change until restart!'),
          _arg('--database_connection', dest='db_connection', metavar='<database_connection>',
               help='Set the cell database_connection. NOTE that running nodes will not see '
                    'the change until restart!'),
          _arg('--disable', dest='disable', action='store_true',
               help='Disable the cell: nothing is scheduled to it after a SIGHUP of the '
                    'scheduler.'),
          _arg('--enable', dest='enable', action='store_true',
               help='Enable the cell: it is scheduled to after a SIGHUP of the scheduler.')]),
        ('list_hosts', (), commands.list_hosts, 'List the host mappings.',
         [_with_help(_CELL_UUID, 'The uuid of the cell.')]),
    ]


def add_parsers(actions):
    """Add the ``cell`` category's actions to ``actions`` (argparse sub-parsers)."""
    for name, aliases, fn, help_text, arguments in _actions(CellCommands()):
        parser = actions.add_parser(name, aliases=list(aliases), help=help_text,
                                    description=manage_display.plain(fn.__doc__))
        kwargs = []
        for flags, options in arguments:
            options = dict(options)
            dest = options.pop('dest')
            parser.add_argument(*flags, dest='action_kwarg_' + dest, **options)
            kwargs.append(dest)
        parser.set_defaults(action_fn=fn, action_kwargs=kwargs)
