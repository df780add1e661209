"""Servers: create, list, show and delete instances through the compute API.

``minisched-manage server create --flavor NAME|ID [--num-instances N] [--wait] ...`` does what
``openstack server create`` makes nova-api do (``minisched.compute.api``): validation of the
request as Nova's API schema does it (a refusal is one line on stderr, exit 1, nothing
written), build requests, request specs and mappings, then a cast to the conductor, which
schedules and builds. It prints the new uuids; ``--wait`` then polls until each instance is
ACTIVE or ERROR and prints them (exit 1 if any is in ERROR or the wait times out).
``server list``, ``server show UUID`` (with the instance's faults, actions and events: where a
build's time went and why it failed) and ``server delete UUID ... [--wait]`` complete the set.
Requests are made for ``--project``/``--user`` (default ``admin``), with an admin context.
"""
import re
import time

from oslo_utils import timeutils, uuidutils

from minisched import config, context, exception
from minisched.cmd import manage, manage_flavor, manage_group, manage_scheduler
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
LIST_HEADERS = ['UUID', 'Name', 'Host', 'Node', 'VM State', 'Task State', 'Power State',
                'Flavor']
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


def list_row(instance):
    """The ``server list`` row of ``instance``."""
    return [instance.uuid, instance.display_name, instance.host, instance.node,
            instance.vm_state, instance.task_state,
            POWER_STATES.get(instance.power_state, instance.power_state), _flavor_name(instance)]


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


def _show_tables(instance, faults, actions):
    flavor = instance.flavor if instance.obj_attr_is_set('flavor') else None
    manage_flavor.print_fields([
        ('id', instance.uuid), ('name', instance.display_name),
        ('project_id', instance.project_id), ('user_id', instance.user_id),
        ('flavor', '%s (%s)' % (flavor.name, flavor.flavorid) if flavor else None),
        ('image', instance.image_ref), ('availability_zone', instance.availability_zone),
        ('host', instance.host), ('node', instance.node), ('vm_state', instance.vm_state),
        ('task_state', instance.task_state),
        ('power_state', POWER_STATES.get(instance.power_state, instance.power_state)),
        ('created', _time(instance.created_at)),
        ('launched_at', _time(instance.launched_at))])
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


def _event_order(event):
    return (event.start_time or timeutils.utcnow(), event.id)


class ServerCommands:
    """Servers: create, list, show and delete instances."""

    def create(self, flavor, image_properties=None, image_id=None, availability_zone=None,
               hints=None, group=None, num_instances=1, name=None, wait=False,
               timeout=WAIT_TIMEOUT, project=manage_scheduler.DEFAULT_OWNER,
               user=manage_scheduler.DEFAULT_OWNER, properties=None):
        ctxt = context.RequestContext(user_id=user, project_id=project, is_admin=True)
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
        manage.print_table(LIST_HEADERS, [list_row(i) if i is not None else
                                          [u, '-', '-', '-', '-', '-', '-', '-']
                                          for u, i in instances.items()])
        if pending:
            return manage_flavor.error('Timed out after %ss waiting for %d of %d instance(s)'
                                       % (timeout, len(pending), len(uuids)))
        errors = [u for u, i in instances.items() if i.vm_state == instance_obj.ERROR]
        if errors:
            return manage_flavor.error('%d of %d instance(s) went to ERROR (see server show '
                                       '%s)' % (len(errors), len(uuids), errors[0]))
        return 0

    def list(self, host=None, all_projects=False, project=manage_scheduler.DEFAULT_OWNER,
             user=manage_scheduler.DEFAULT_OWNER):
        ctxt = context.RequestContext(user_id=user, project_id=project, is_admin=True)
        filters = {} if all_projects else {'project_id': project}
        if host:
            filters['host'] = host
        instances = compute_api_factory(CONF).get_all(ctxt, filters)
        manage.print_table(LIST_HEADERS, [list_row(i) for i in instances])
        return 0

    def show(self, server, project=manage_scheduler.DEFAULT_OWNER,
             user=manage_scheduler.DEFAULT_OWNER):
        ctxt = context.RequestContext(user_id=user, project_id=project, is_admin=True)
        api = compute_api_factory(CONF)
        instance = lookup(api, ctxt, server)
        if instance is None:
            raise exception.InstanceNotFound(instance_id=server)
        _show_tables(instance, api.get_faults(ctxt, server), api.get_actions(ctxt, server))
        return 0

    def delete(self, servers, wait=False, timeout=WAIT_TIMEOUT,
               project=manage_scheduler.DEFAULT_OWNER, user=manage_scheduler.DEFAULT_OWNER):
        ctxt = context.RequestContext(user_id=user, project_id=project, is_admin=True)
        api = compute_api_factory(CONF)
        accepted, failed = [], 0
        for server in servers:
            try:
                with manage_flavor.broker_errors():
                    api.delete(ctxt, server)
            except exception.InstanceMappingNotFound:
                failed += manage_flavor.error('Instance %s could not be found.' % server)
                continue
            except exception.MinischedException as exc:
                failed += manage_flavor.error('Failed to delete %s: %s'
                                              % (server, exc.format_message()))
                continue
            accepted.append(server)
            print('Request to delete server %s has been accepted.' % server)
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
    create.add_argument('--name', dest='action_kwarg_name',
                        help='Display name (NAME-1, NAME-2... for several; default server).')
    manage_flavor.add_property_argument(create, help_text='Metadata of the instances '
                                                          '(repeatable).')
    _add_wait_arguments(create, 'until every instance is ACTIVE or ERROR')
    manage_scheduler.add_owner_arguments(create)
    create.set_defaults(action_fn=commands.create, action_kwargs=[
        'flavor', 'image_properties', 'image_id', 'availability_zone', 'hints', 'group',
        'num_instances', 'name', 'wait', 'timeout', 'project', 'user', 'properties'])

    lister = actions.add_parser('list', help='List instances of the project, newest first.')
    lister.add_argument('--host', dest='action_kwarg_host', help='Only those on this host.')
    lister.add_argument('--all', action='store_true', dest='action_kwarg_all_projects',
                        help='Instances of every project.')
    manage_scheduler.add_owner_arguments(lister)
    lister.set_defaults(action_fn=commands.list,
                        action_kwargs=['host', 'all_projects', 'project', 'user'])

    show = actions.add_parser('show', help='Show an instance, its faults, actions and events.')
    show.add_argument('action_kwarg_server', metavar='uuid', help='Instance UUID.')
    manage_scheduler.add_owner_arguments(show)
    show.set_defaults(action_fn=commands.show, action_kwargs=['server', 'project', 'user'])

    delete = actions.add_parser('delete', help='Delete instances.')
    delete.add_argument('action_kwarg_servers', metavar='uuid', nargs='+',
                        help='Instance UUID(s).')
    _add_wait_arguments(delete, 'until every instance is gone')
    manage_scheduler.add_owner_arguments(delete)
    delete.set_defaults(action_fn=commands.delete,
                        action_kwargs=['servers', 'wait', 'timeout', 'project', 'user'])


def _add_wait_arguments(parser, until):
    parser.add_argument('--wait', action='store_true', dest='action_kwarg_wait',
                        help='Poll %s.' % until)
    parser.add_argument('--timeout', type=manage_flavor.integer(1), default=WAIT_TIMEOUT,
                        dest='action_kwarg_timeout', metavar='S',
                        help='Seconds --wait waits at most (%d).' % WAIT_TIMEOUT)
