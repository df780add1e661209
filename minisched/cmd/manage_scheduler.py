"""Ask a scheduler where instances would go (select_destinations, nothing is built).

``minisched-manage scheduler select --ram MB --vcpus N --disk GB [--flavor NAME|ID] ...``
builds a RequestSpec as the conductor would and calls ``select_destinations`` over RPC (API
4.5, Selection objects, alternates on request), then prints the chosen hosts; when no host
fits it prints the scheduler's explanation (how many hosts each filter rejected) and exits 1.
``--flavor`` starts from a stored flavor (its extra specs included); ``--ram``/``--vcpus``/
``--disk``/``--ephemeral``/``--swap`` then override its sizes.

A dry run: nothing is written to a database, and the worker that answers decides as for a
real request (each instance sees the earlier ones placed) but keeps nothing of it in memory
(the minisched-only ``dry_run`` keyword of ``select_destinations``).
"""
import json

import oslo_messaging as messaging
from oslo_utils import uuidutils

from minisched import config, context, exception
from minisched.cmd import manage_display, manage_flavor, manage_scheduler_replay
from minisched.objects import cell_mapping as cell_mapping_obj
from minisched.objects import flavor as flavor_obj
from minisched.objects import image_meta as image_meta_obj
from minisched.objects import request_spec as request_spec_obj
from minisched.objects import security_group as security_group_obj
from minisched.scheduler import rpcapi as scheduler_rpcapi

CONF = config.CONF
DEFAULT_OWNER = 'admin'
#: Flavor option -> Flavor field.
_SIZES = (('ram', 'memory_mb'), ('vcpus', 'vcpus'), ('disk', 'root_gb'),
          ('ephemeral', 'ephemeral_gb'), ('swap', 'swap'))


def _default_scheduler_api(conf):
    manage_flavor.init_rpc(conf)
    api = scheduler_rpcapi.SchedulerAPI(conf)
    manage_flavor.bounded(api.client)
    return api


#: Builds the SchedulerAPI the call goes through (tests replace it).
scheduler_api_factory = _default_scheduler_api


def hints_dict(pairs):
    """``[(k, v), ...]`` as scheduler hints: a list per key, repeated keys accumulate."""
    hints = {}
    for key, value in pairs or []:
        hints.setdefault(key, []).append(value)
    return hints


def build_flavor(ctxt, flavor=None, **sizes):
    """The stored flavor ``flavor`` (or an ad hoc one) with the given ``sizes`` overriding."""
    if flavor is not None:
        result = manage_flavor.find_flavor(ctxt, flavor)
    else:
        missing = [name for name in ('ram', 'vcpus', 'disk') if sizes.get(name) is None]
        if missing:
            raise exception.Invalid('--%s is required without --flavor'
                                    % ', --'.join(missing))
        result = flavor_obj.Flavor(id=0, flavorid='select', name='(select)', extra_specs={},
                                   ephemeral_gb=0, swap=0, rxtx_factor=1.0, is_public=True,
                                   disabled=False)
    for option, field in _SIZES:
        if sizes.get(option) is not None:
            setattr(result, field, sizes[option])
    return result


def build_spec(ctxt, flavor, image_properties=None, availability_zone=None, hints=None,
               force_hosts=None, ignore_hosts=None, num_instances=1):
    """A complete RequestSpec for ``num_instances`` instances of ``flavor``."""
    try:
        image = image_meta_obj.ImageMeta.from_dict({'properties': dict(image_properties or [])})
    except ValueError as exc:
        raise exception.Invalid('bad image property: %s' % exc)
    return request_spec_obj.RequestSpec(
        ctxt, flavor=flavor, image=image, num_instances=num_instances,
        project_id=ctxt.project_id, user_id=ctxt.user_id, availability_zone=availability_zone,
        scheduler_hints=hints_dict(hints), instance_uuid=uuidutils.generate_uuid(),
        ignore_hosts=list(ignore_hosts) if ignore_hosts else None,
        force_hosts=list(force_hosts) if force_hosts else None, force_nodes=None, retry=None,
        limits=None, requested_destination=None, instance_group=None,
        security_groups=security_group_obj.SecurityGroupList(objects=[]),
        is_bfv=False)


def _cell_names(ctxt):
    from minisched.scheduler import host_manager  # the implicit cell of unmapped deployments
    names = {host_manager.LOCAL_CELL_UUID: 'local'}
    try:
        names.update((c.uuid, c.name or c.uuid)
                     for c in cell_mapping_obj.CellMappingList.get_all(ctxt))
    except exception.MinischedException:
        pass  # names are a courtesy; uuids will do
    return names


def _limits(selection):
    limits = selection.limits.to_dict() if selection.limits is not None else {}
    return ', '.join('%s=%s' % (key, limits[key]) for key in sorted(limits)) or '-'


def selections(host_lists, cell_names, alternates=False):
    """``(columns, rows)``: a row per instance, or per candidate (the selected host, then
    alternates)."""
    headers = ['Instance #', 'Host', 'Node', 'Cell', 'Limits']
    if alternates:
        headers.insert(1, 'Choice')
    rows = []
    for number, host_list in enumerate(host_lists, 1):
        for index, sel in enumerate(host_list if alternates else host_list[:1]):
            row = [number, sel.service_host, sel.nodename,
                   cell_names.get(sel.cell_uuid, sel.cell_uuid), _limits(sel)]
            if alternates:
                row.insert(1, 'selected' if index == 0 else 'alternate %d' % index)
            rows.append(row)
    return headers, rows


class SchedulerCommands:
    """Ask a scheduler where instances would go (dry run)."""

    def select(self, ram=None, vcpus=None, disk=None, ephemeral=None, swap=None, flavor=None,
               image_properties=None, availability_zone=None, hints=None, force_hosts=None,
               ignore_hosts=None, num_instances=1, alternates=False, json=False,
               project=DEFAULT_OWNER, user=DEFAULT_OWNER):
        ctxt = context.RequestContext(user_id=user, project_id=project, is_admin=True)
        spec = build_spec(
            ctxt, build_flavor(ctxt, flavor, ram=ram, vcpus=vcpus, disk=disk,
                               ephemeral=ephemeral, swap=swap),
            image_properties, availability_zone, hints, force_hosts, ignore_hosts,
            num_instances)
        try:
            with manage_flavor.broker_errors():
                host_lists = scheduler_api_factory(CONF).select_destinations(
                    ctxt, spec, instance_uuids=None, return_objects=True,
                    return_alternates=alternates, dry_run=True)
        except exception.NoValidHost as exc:
            return manage_flavor.error(exc.format_message())  # str(exc) has the remote trace
        except messaging.MessagingTimeout:
            return manage_flavor.error('No scheduler answered (is minisched-scheduler '
                                       'running on this transport_url and exchange?)')
        if json:
            print(_as_json(host_lists, alternates))
            return 0
        return selections(host_lists, _cell_names(ctxt), alternates)


def _as_json(host_lists, alternates):
    """The legacy dicts (``return_objects=False``'s answer); with alternates, a list each."""
    if alternates:
        value = [[sel.to_dict() for sel in host_list] for host_list in host_lists]
    else:
        value = [host_list[0].to_dict() for host_list in host_lists]
    return json.dumps(value, indent=2, sort_keys=True)


def _select_arguments(parser):
    integer = manage_flavor.integer
    for option, minimum, metavar, help_text in (
            ('ram', 1, 'MB', 'Memory in MB.'), ('vcpus', 1, 'N', 'Number of vCPUs.'),
            ('disk', 0, 'GB', 'Root disk in GB.'), ('ephemeral', 0, 'GB', 'Ephemeral GB (0).'),
            ('swap', 0, 'MB', 'Swap in MB (0).')):
        parser.add_argument('--' + option, type=integer(minimum), metavar=metavar,
                            help=help_text + ' Overrides --flavor\'s.')
    parser.add_argument('--flavor', metavar='NAME|ID',
                        help='Start from this flavor (its sizes and extra specs).')
    add_request_arguments(parser, prefix='')
    parser.add_argument('--force-host', action='append', dest='force_hosts', metavar='HOST',
                        help='Only this host (repeatable); as in Nova, filters are then '
                             'skipped.')
    parser.add_argument('--ignore-host', action='append', dest='ignore_hosts',
                        metavar='HOST', help='Never this host (repeatable).')
    parser.add_argument('--alternates', action='store_true',
                        help='Also show the alternates of each instance ([scheduler] '
                             'max_attempts - 1 of them).')
    parser.add_argument('--json', action='store_true',
                        help='Print the legacy dicts (host, nodename, limits) that '
                             'select_destinations returns without return_objects, as JSON '
                             '(-f json prints the rows of the table).')
    add_owner_arguments(parser, prefix='')


def add_parsers(actions):
    """Add the ``select`` action (and ``snapshot`` and ``replay``) to the ``scheduler``
    category."""
    commands = SchedulerCommands()
    manage_display.add_command(actions, 'select', manage_display.Lister(
        commands.select, ['ram', 'vcpus', 'disk', 'ephemeral', 'swap', 'flavor',
                          'image_properties', 'availability_zone', 'hints', 'force_hosts',
                          'ignore_hosts', 'num_instances', 'alternates', 'json', 'project',
                          'user'], _select_arguments),
        help_text='Ask a scheduler for hosts (builds nothing).')
    manage_scheduler_replay.add_parsers(actions)


def add_request_arguments(parser, prefix='action_kwarg_'):
    """Options that ``server create`` shares: image properties, zone, hints, count."""
    parser.add_argument('--image-property', action='append', type=manage_flavor.key_value,
                        dest=prefix + 'image_properties', metavar='KEY=VALUE',
                        help='Image property, e.g. hw_architecture=x86_64 (repeatable).')
    parser.add_argument('--availability-zone', dest=prefix + 'availability_zone',
                        metavar='AZ', help='Availability zone.')
    parser.add_argument('--hint', action='append', type=manage_flavor.key_value,
                        dest=prefix + 'hints', metavar='KEY=VALUE',
                        help='Scheduler hint, e.g. same_host=UUID (repeatable; a repeated '
                             'key makes a list).')
    parser.add_argument('--num-instances', type=manage_flavor.integer(1), default=1,
                        dest=prefix + 'num_instances', metavar='N',
                        help='Number of instances (1).')


def add_owner_arguments(parser, prefix='action_kwarg_'):
    """``--project``/``--user``: who the request is made for (both default to admin)."""
    parser.add_argument('--project', default=DEFAULT_OWNER, dest=prefix + 'project',
                        metavar='PROJECT',
                        help='Project of the request (default: admin).')
    parser.add_argument('--user', default=DEFAULT_OWNER, dest=prefix + 'user',
                        metavar='USER',
                        help='User of the request (default: admin).')
