"""Servers: create, list, show and delete instances through the compute API.

``minisched-manage server create --flavor NAME|ID [--num-instances N] [--wait] ...`` does what
``openstack server create`` makes nova-api do (``minisched.compute.api``): validation of the
request as Nova's API schema does it (a refusal is one line on stderr, exit 1, nothing
written), build requests, request specs and mappings, then a cast to the conductor, which
schedules and builds. It prints the new uuids; ``--wait`` then polls until each instance is
ACTIVE or ERROR and prints them (exit 1 if any is in ERROR or the wait times out).
``server list [--all-projects]``, ``server show NAME|UUID`` (in table format with the
instance's faults, actions and events: where a build's time went and why it failed) and
``server delete NAME|UUID ... [--wait]`` complete the set; statuses are the compute API's
(``ACTIVE``, ``BUILD``, ``ERROR``...).
Requests are made for ``--project``/``--user`` (default ``admin``), with an admin context.
"""
import argparse
import re
import sys
import time

from oslo_utils import timeutils, uuidutils

from minisched import config, context, exception
from minisched.cmd import manage, manage_display, manage_flavor, manage_group
from minisched.cmd import manage_scheduler
from minisched.compute import api as compute_api
from minisched.objects import build_request as build_request_obj
from minisched.objects import instance as instance_obj

CONF = config.CONF
#: Default seconds of ``--wait``, and between two polls.
WAIT_TIMEOUT = 300
POLL_INTERVAL = 0.5
#: nova.compute.power_state.STATE_MAP as the API shows it.
POWER_STATES = {instance_obj.NOSTATE: 'NOSTATE', instance_obj.RUNNING: 'Running',
                instance_obj.PAUSED: 'Paused', instance_obj.SHUTDOWN: 'Shutdown',
                instance_obj.CRASHED: 'Crashed', instance_obj.SUSPENDED: 'Suspended'}
LIST_HEADERS = ['ID', 'Name', 'Status', 'Task State', 'Power State', 'Host', 'Node', 'Flavor']
#: The columns ``server list --long`` adds (``openstack server list --long`` has them too).
LONG_HEADERS = ['Flavor ID', 'Image ID', 'Availability Zone', 'Properties', 'Created At']
#: The compute API's status of a vm_state, and of its task states that show otherwise
#: (nova.api.openstack.common's state map).
_REBOOT = dict.fromkeys(('rebooting', 'reboot_pending', 'reboot_started'), 'REBOOT')
_HARD_REBOOT = dict.fromkeys(('rebooting_hard', 'reboot_pending_hard', 'reboot_started_hard'),
                             'HARD_REBOOT')
_REBUILD = dict.fromkeys(('rebuilding', 'rebuild_block_device_mapping', 'rebuild_spawning'),
                         'REBUILD')
_RESIZE = dict.fromkeys(('resize_prep', 'resize_migrating', 'resize_migrated',
                         'resize_finish'), 'RESIZE')
STATUSES = {
    'active': dict(default='ACTIVE', updating_password='PASSWORD', migrating='MIGRATING',
                   **_REBOOT, **_HARD_REBOOT, **_REBUILD, **_RESIZE),
    'building': {'default': 'BUILD'},
    'stopped': dict(default='SHUTOFF', **_RESIZE, **_REBUILD),
    'resized': {'default': 'VERIFY_RESIZE', 'resize_reverting': 'REVERT_RESIZE'},
    'paused': {'default': 'PAUSED', 'migrating': 'MIGRATING'},
    'suspended': {'default': 'SUSPENDED'},
    'rescued': {'default': 'RESCUE'},
    'error': dict(default='ERROR', **_REBUILD),
    'deleted': {'default': 'DELETED'},
    'soft-delete': {'default': 'SOFT_DELETED'},
    'shelved': {'default': 'SHELVED'},
    'shelved_offloaded': {'default': 'SHELVED_OFFLOADED'},
}
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def _default_compute_api(conf):
    manage_flavor.init_rpc(conf)
    api = compute_api.API(conf)
    manage_flavor.bounded(api.compute_task_api.client, api.compute_rpcapi.router.default_client)
    return api


#: Builds the compute API the actions use (tests replace it).
compute_api_factory = _default_compute_api


def _time(value):
    return timeutils.normalize_time(value).isoformat(sep=' ', timespec='seconds') \
        if value else '-'


def _flavor_name(instance):
    return instance.flavor.name if instance.obj_attr_is_set('flavor') and instance.flavor \
        else '-'


def status(instance):
    """``instance``'s status as the compute API shows it (``ACTIVE``, ``BUILD``...)."""
    by_task = STATUSES.get(instance.vm_state, {'default': 'UNKNOWN'})
    return by_task.get(instance.task_state, by_task['default'])


def list_row(instance, long=False):
    """The ``server list`` row of ``instance`` (the columns of ``LIST_HEADERS``, and with
    ``long`` those of ``LONG_HEADERS`` after them)."""
    row = [instance.uuid, instance.display_name, status(instance), instance.task_state,
           POWER_STATES.get(instance.power_state, instance.power_state), instance.host,
           instance.node, _flavor_name(instance)]
    if long:
        flavor = instance.flavor if instance.obj_attr_is_set('flavor') else None
        row += [flavor.flavorid if flavor else None, instance.image_ref or None,
                instance.availability_zone,
                manage_display.properties(instance.metadata or {}), _time(instance.created_at)]
    return row


def traceback_summary(text):
    """``file.py:LINE in function`` of the innermost frame of a formatted traceback."""
    frames = _FRAME.findall(text or '')
    if not frames:
        return '-'
    path, line, function = frames[-1]
    return '%s:%s in %s' % (path.rsplit('/', 1)[-1], line, function)


def lookup(api, ctxt, instance_uuid):
    """The instance, or its build request's while it has no cell yet; None once gone.

    ``API.get`` reads the local cell when no cell is mapped, where an instance the conductor
    has not placed yet does not exist: its build request is read then.
    """
    try:
        return api.get(ctxt, instance_uuid)
    except exception.InstanceMappingNotFound:
        raise exception.InstanceNotFound(instance_id=instance_uuid)
    except (exception.InstanceNotFound, exception.BuildRequestNotFound):
        pass
    try:
        return build_request_obj.BuildRequest.get_by_instance_uuid(ctxt, instance_uuid).instance
    except exception.BuildRequestNotFound:
        return None


def _fields(instance, faults):
    flavor = instance.flavor if instance.obj_attr_is_set('flavor') else None
    pairs = [
        ('id', instance.uuid), ('name', instance.display_name), ('status', status(instance)),
        ('project_id', instance.project_id), ('user_id', instance.user_id),
        ('flavor', '%s (%s)' % (flavor.name, flavor.flavorid) if flavor else None),
        ('image', instance.image_ref), ('availability_zone', instance.availability_zone),
        ('host', instance.host), ('node', instance.node), ('vm_state', instance.vm_state),
        ('task_state', instance.task_state),
        ('power_state', POWER_STATES.get(instance.power_state, instance.power_state)),
        ('created', _time(instance.created_at)),
        ('launched_at', _time(instance.launched_at))]
    if faults:  # the newest, as the compute API shows it
        newest = max(faults, key=lambda f: f.created_at or timeutils.utcnow())
        pairs.append(('fault', manage_display.properties(
            {'code': newest.code, 'message': newest.message,
             'created': _time(newest.created_at)})))
    return manage_display.fields(pairs)


def _print_history(faults, actions):
    """The faults, actions and events tables ``server show`` adds in table format."""
    if faults:
        print('Faults:')
        manage.print_table(['Code', 'Message', 'Host', 'Created', 'Traceback'], [
            (f.code, f.message, f.host, _time(f.created_at), traceback_summary(f.details))
            for f in faults])
    print('Actions:')
    manage.print_table(['Action', 'Request ID', 'Start', 'Finish', 'Message'], [
        (a.action, a.request_id, _time(a.start_time), _time(a.finish_time), a.message)
        for a, _events in actions])
    print('Events:')
    manage.print_table(
        ['Action', 'Event', 'Host', 'Start', 'Finish', 'Result', 'Details', 'Traceback'],
        [(a.action, e.event, e.host, _time(e.start_time), _time(e.finish_time), e.result,
          e.details, traceback_summary(e.traceback))
         for a, events in actions for e in sorted(events, key=_event_order)])


class _ServerShow(manage_display.ShowOne):
    """``server show``: in table format (and all columns), the instance's faults, actions
    and events follow its fields."""

    def take_action(self, parsed_args):
        columns, values, self.history = self.fn(
            **{name: getattr(parsed_args, name) for name in self.kwargs})
        return columns, values

    def produce_output(self, parsed_args, column_names, data):
        super().produce_output(parsed_args, column_names, data)
        if parsed_args.formatter == 'table' and not parsed_args.columns:
            _print_history(*self.history)


def find_server(api, ctxt, server):
    """The instance whose UUID, else (in ``ctxt``'s project) whose name, is ``server``; None
    when a UUID names nothing."""
    if uuidutils.is_uuid_like(server):
        return lookup(api, ctxt, server)
    matches = [i for i in api.get_all(ctxt)
               if i.display_name == server and i.project_id == ctxt.project_id]
    if not matches:
        raise exception.InstanceNotFound(instance_id=server)
    return manage_display.only_match('server', server, matches)


def _event_order(event):
    return (event.start_time or timeutils.utcnow(), event.id)


class ServerCommands:
    """Servers: create, list, show and delete instances."""

    def create(self, flavor, image_properties=None, image_id=None, availability_zone=None,
               hints=None, group=None, num_instances=1, name=None, wait=False,
               timeout=WAIT_TIMEOUT, project=manage_scheduler.DEFAULT_OWNER,
               user=manage_scheduler.DEFAULT_OWNER, properties=None, server_name=None):
        ctxt = context.RequestContext(user_id=user, project_id=project, is_admin=True)
        if server_name is not None and name is not None and server_name != name:
            return manage_flavor.error('Two names given: %r and --name %r; give one.'
                                       % (server_name, name))
        name = name if name is not None else server_name
        if image_id is not None and not uuidutils.is_uuid_like(image_id):
            return manage_flavor.error('Image id must be a UUID: %r' % image_id)
        found_flavor = manage_flavor.find_flavor(ctxt, flavor)
        found_group = manage_group.find_group(ctxt, group) if group else None
        image = {'properties': dict(image_properties or [])}
        if image_id:
            image['id'] = image_id
        api = compute_api_factory(CONF)
        try:
            with manage_flavor.broker_errors():
                uuids = api.create(ctxt, found_flavor, image=image, num_instances=num_instances,
                                   availability_zone=availability_zone,
                                   scheduler_hints=manage_scheduler.hints_dict(hints),
                                   group=found_group, display_name=name,
                                   metadata=dict(properties or []))
        except ValueError as exc:  # a property value of the wrong type
            return manage_flavor.error('Bad image property: %s' % exc)
        for instance_uuid in uuids:
            print(instance_uuid)
        if not wait:
            return 0
        done = lambda inst: inst is not None and inst.vm_state in (instance_obj.ACTIVE,
                                                                   instance_obj.ERROR)
        instances, pending = self._wait(api, ctxt, uuids, done, timeout)
        # None as "None", as server list (the openstack client's table) shows it
        manage.print_table(LIST_HEADERS, [[str(v) for v in list_row(i)] if i is not None else
                                          [u] + [None] * (len(LIST_HEADERS) - 1)
                                          for u, i in instances.items()])
        if pending:
            scheduling = any(instances.get(u) is not None
                             and instances[u].task_state == 'scheduling' for u in pending)
            return manage_flavor.error(
                'Timed out after %ss waiting for %d of %d instance(s)%s'
                % (timeout, len(pending), len(uuids),
                   ' (still scheduling: is every service running and its cell reachable? '
                   'minisched-manage service list; for a local cluster minisched-cluster '
                   'status)' if scheduling else ''))
        errors = [u for u, i in instances.items() if i.vm_state == instance_obj.ERROR]
        if errors:
            return manage_flavor.error('%d of %d instance(s) went to ERROR (see server show '
                                       '%s)' % (len(errors), len(uuids), errors[0]))
        return 0

    def list(self, host=None, all_projects=False, all=False,
             project=manage_scheduler.DEFAULT_OWNER, user=manage_scheduler.DEFAULT_OWNER,
             long=False):
        if all:
            sys.stderr.write('--all is deprecated: use --all-projects.\n')
        ctxt = context.RequestContext(user_id=user, project_id=project, is_admin=True)
        filters = {} if all_projects or all else {'project_id': project}
        if host:
            filters['host'] = host
        instances = compute_api_factory(CONF).get_all(ctxt, filters)
        return (LIST_HEADERS + (LONG_HEADERS if long else []),
                [list_row(i, long=long) for i in instances])

    def show(self, server, project=manage_scheduler.DEFAULT_OWNER,
             user=manage_scheduler.DEFAULT_OWNER):
        ctxt = context.RequestContext(user_id=user, project_id=project, is_admin=True)
        api = compute_api_factory(CONF)
        instance = find_server(api, ctxt, server)
        if instance is None:
            raise exception.InstanceNotFound(instance_id=server)
        faults = api.get_faults(ctxt, instance.uuid)
        return _fields(instance, faults) + ((faults, api.get_actions(ctxt, instance.uuid)),)

    def delete(self, servers, wait=False, timeout=WAIT_TIMEOUT,
               project=manage_scheduler.DEFAULT_OWNER, user=manage_scheduler.DEFAULT_OWNER):
        ctxt = context.RequestContext(user_id=user, project_id=project, is_admin=True)
        api = compute_api_factory(CONF)
        accepted, failed = [], 0
        for name_or_uuid in servers:
            try:
                server = self._uuid(api, ctxt, name_or_uuid)
                with manage_flavor.broker_errors():
                    api.delete(ctxt, server)
            except exception.InstanceMappingNotFound:
                failed += manage_flavor.error('Instance %s could not be found.' % name_or_uuid)
                continue
            except (exception.InstanceNotFound, exception.Invalid) as exc:
                failed += manage_flavor.error(exc.format_message())
                continue
            except exception.MinischedException as exc:
                failed += manage_flavor.error('Failed to delete %s: %s'
                                              % (name_or_uuid, exc.format_message()))
                continue
            accepted.append(server)
            print('Request to delete server %s has been accepted.' % name_or_uuid)
        if wait and accepted:
            _instances, pending = self._wait(api, ctxt, accepted, lambda inst: inst is None,
                                             timeout)
            if pending:
                failed += manage_flavor.error('Timed out after %ss waiting for the deletion '
                                              'of %s' % (timeout, ', '.join(pending)))
            else:
                print('Deleted %d server(s).' % len(accepted))
        return 1 if failed else 0

    @staticmethod
    def _uuid(api, ctxt, server):
        """The UUID ``server`` names: itself when it is one, else a server's name."""
        if uuidutils.is_uuid_like(server):
            return server
        return find_server(api, ctxt, server).uuid

    @staticmethod
    def _wait(api, ctxt, uuids, done, timeout):
        """Poll until ``done(instance)`` for each uuid; returns ``({uuid: inst}, pending)``."""
        deadline = time.monotonic() + timeout
        instances = dict.fromkeys(uuids)
        pending = list(uuids)
        while True:
            for instance_uuid in list(pending):
                try:
                    instances[instance_uuid] = lookup(api, ctxt, instance_uuid)
                except exception.InstanceNotFound:
                    instances[instance_uuid] = None
                if done(instances[instance_uuid]):
                    pending.remove(instance_uuid)
            if not pending or time.monotonic() >= deadline:
                return instances, pending
            time.sleep(POLL_INTERVAL)


def add_parsers(actions):
    """Add the ``server`` category's actions."""
    commands = ServerCommands()
    create = actions.add_parser('create', help='Create instances (scheduled and built '
                                               'asynchronously).')
    create.add_argument('--flavor', required=True, dest='action_kwarg_flavor',
                        metavar='NAME|ID', help='Flavor of the instances.')
    create.add_argument('--image-id', dest='action_kwarg_image_id', metavar='UUID',
                        help='Image id recorded on the instances.')
    manage_scheduler.add_request_arguments(create)
    create.add_argument('--group', dest='action_kwarg_group', metavar='NAME|UUID',
                        help='Server group the instances join.')
    create.add_argument('action_kwarg_server_name', metavar='NAME', nargs='?',
                        help='Display name, as in "openstack server create --flavor F NAME" '
                             '(NAME-1, NAME-2... for several; default server).')
    create.add_argument('--name', dest='action_kwarg_name', metavar='NAME',
                        help='The same as NAME.')
    manage_flavor.add_property_argument(create, help_text='Metadata of the instances '
                                                          '(repeatable).')
    _add_wait_arguments(create, 'until every instance is ACTIVE or ERROR')
    manage_scheduler.add_owner_arguments(create)
    create.set_defaults(action_fn=commands.create, action_kwargs=[
        'flavor', 'image_properties', 'image_id', 'availability_zone', 'hints', 'group',
        'num_instances', 'name', 'wait', 'timeout', 'project', 'user', 'properties',
        'server_name'])

    manage_display.add_command(actions, 'list', manage_display.Lister(
        commands.list, ['host', 'all_projects', 'all', 'project', 'user', 'long'],
        _list_arguments),
        help_text='List instances of the project, newest first.')
    manage_display.add_command(actions, 'show', _ServerShow(
        commands.show, ['server', 'project', 'user'], _show_arguments),
        help_text='Show an instance; in table format also its faults, actions and events.')

    delete = actions.add_parser('delete', help='Delete instances.')
    delete.add_argument('action_kwarg_servers', metavar='server', nargs='+',
                        help='Instance name or UUID (repeatable).')
    _add_wait_arguments(delete, 'until every instance is gone')
    manage_scheduler.add_owner_arguments(delete)
    delete.set_defaults(action_fn=commands.delete,
                        action_kwargs=['servers', 'wait', 'timeout', 'project', 'user'])


def _list_arguments(parser):
    parser.add_argument('--host', metavar='HOST', help='Only those on this host.')
    parser.add_argument('--all-projects', action='store_true',
                        help='Instances of every project.')
    parser.add_argument('--all', action='store_true', help=argparse.SUPPRESS)  # deprecated
    parser.add_argument('--long', action='store_true',
                        help='Also the flavor ID, image ID, availability zone, properties and '
                             'creation time.')
    manage_scheduler.add_owner_arguments(parser, prefix='')


def _show_arguments(parser):
    parser.add_argument('server', help='Instance name or UUID.')
    manage_scheduler.add_owner_arguments(parser, prefix='')


def _add_wait_arguments(parser, until):
    parser.add_argument('--wait', action='store_true', dest='action_kwarg_wait',
                        help='Poll %s.' % until)
    parser.add_argument('--timeout', type=manage_flavor.integer(1), default=WAIT_TIMEOUT,
                        dest='action_kwarg_timeout', metavar='S',
                        help='Seconds --wait waits at most (%d).' % WAIT_TIMEOUT)
