"""Host aggregates: named sets of hosts with metadata (availability zones, ratios...).

``minisched-manage aggregate create NAME [--zone AZ]``, ``aggregate add-host AGG HOST``,
``aggregate remove-host AGG HOST``, ``aggregate set AGG --property k=v ...`` (metadata; the
``availability_zone`` key is the zone), ``aggregate list`` and ``aggregate delete AGG``; AGG is
an aggregate's id, uuid or name. As Nova's API does, each change is then cast to every
scheduler (``update_aggregates``, or ``delete_aggregate``), whose host states would otherwise
not see it until they restart; and a host cannot be in two zones at once, a zone cannot be
empty, and only an empty aggregate can be deleted. With ``[placement] enabled`` a host added
to or removed from an aggregate is mirrored in Placement (its nodes' providers join or leave
the aggregate of the same uuid), as Nova's API does; a failure there is a warning, and
``minisched-manage placement sync_aggregates`` adds what is missing later.
"""
import logging

from oslo_utils import uuidutils

from minisched import config, context, exception
from minisched.cmd import manage_display, manage_flavor
from minisched.objects import aggregate as aggregate_obj
from minisched.objects import compute_node as compute_node_obj
from minisched.objects import service as service_obj
from minisched.scheduler.client import query
from minisched.scheduler.client import report

CONF = config.CONF
LOG = logging.getLogger(__name__)
AZ_KEY = 'availability_zone'


def _default_query_client(conf):
    manage_flavor.init_rpc(conf)
    client = query.SchedulerQueryClient(conf)
    manage_flavor.bounded(client.scheduler_rpcapi.client)
    return client


#: Builds the client the scheduler casts go through (tests replace it).
query_client_factory = _default_query_client


def find_aggregate(ctxt, ident):
    """The aggregate whose id, uuid or name is ``ident``."""
    try:
        if ident.isdigit():
            return aggregate_obj.Aggregate.get_by_id(ctxt, int(ident))
        if uuidutils.is_uuid_like(ident):
            return aggregate_obj.Aggregate.get_by_uuid(ctxt, ident)
    except exception.AggregateNotFound:
        pass
    for aggregate in aggregate_obj.AggregateList.get_all(ctxt):
        if aggregate.name == ident:
            return aggregate
    raise exception.AggregateNotFound(aggregate_id=ident)


def _conflicting_zones(ctxt, aggregate, zone, hosts):
    """Zones other than ``zone`` that ``hosts`` already have through other aggregates."""
    found = set()
    for host in hosts:
        for other in aggregate_obj.AggregateList.get_by_host(ctxt, host, key=AZ_KEY):
            if other.id != aggregate.id and other.availability_zone != zone:
                found.add(other.availability_zone)
    return sorted(found)


def _zone_problem(ctxt, aggregate, metadata, hosts):
    """Nova's ``is_safe_to_update_az``: why ``metadata`` may not apply to ``hosts``, or None."""
    if AZ_KEY not in metadata:
        return None
    if not metadata[AZ_KEY]:
        return 'Aggregate %s does not support empty named availability zone' % aggregate.name
    conflicts = _conflicting_zones(ctxt, aggregate, metadata[AZ_KEY], hosts)
    if conflicts:
        return 'One or more hosts already in availability zone(s) %s' % conflicts
    return None


def _show(aggregate):
    return manage_display.fields([
        ('id', aggregate.id), ('uuid', aggregate.uuid), ('name', aggregate.name),
        ('availability_zone', aggregate.availability_zone),
        ('hosts', manage_display.items(aggregate.hosts)),
        ('properties', manage_display.properties(aggregate.metadata))])


class AggregateCommands:
    """Host aggregates: host sets with metadata, availability zones."""

    def create(self, name, zone=None):
        ctxt = context.get_admin_context()
        aggregate = aggregate_obj.Aggregate(ctxt, name=name)
        if zone is not None:
            if not zone:
                return manage_flavor.error('Aggregate %s does not support empty named '
                                           'availability zone' % name)
            aggregate.metadata = {AZ_KEY: zone}
        aggregate.create()
        return self._updated(ctxt, aggregate)

    def add_host(self, aggregate, host):
        ctxt = context.get_admin_context()
        found = find_aggregate(ctxt, aggregate)
        if service_obj.Service.get_by_host_and_binary(ctxt, host, 'minisched-compute') is None:
            raise exception.ComputeHostNotFound(host=host)
        problem = _zone_problem(ctxt, found, found.metadata, [host])
        if problem:
            return manage_flavor.error('Cannot add host to aggregate %s. Reason: %s.'
                                       % (found.id, problem))
        found.add_host(host)
        _mirror_in_placement(ctxt, found, host, 'aggregate_add_host')
        return self._updated(ctxt, found)

    def remove_host(self, aggregate, host):
        ctxt = context.get_admin_context()
        found = find_aggregate(ctxt, aggregate)
        found.delete_host(host)
        _mirror_in_placement(ctxt, found, host, 'aggregate_remove_host')
        return self._updated(ctxt, found)

    def set(self, aggregate, properties):
        ctxt = context.get_admin_context()
        found = find_aggregate(ctxt, aggregate)
        metadata = dict(properties)
        problem = _zone_problem(ctxt, found, metadata, found.hosts)
        if problem:
            return manage_flavor.error('Cannot update aggregate %s. Reason: %s.'
                                       % (found.id, problem))
        found.update_metadata(metadata)
        return self._updated(ctxt, found)

    def list(self):
        aggregates = aggregate_obj.AggregateList.get_all(context.get_admin_context())
        rows = [(a.id, a.uuid, a.name, a.availability_zone, manage_display.items(a.hosts),
                 manage_display.properties(a.metadata))
                for a in sorted(aggregates, key=lambda a: a.id)]
        return ('ID', 'UUID', 'Name', 'Availability Zone', 'Hosts', 'Properties'), rows

    def delete(self, aggregate):
        ctxt = context.get_admin_context()
        found = find_aggregate(ctxt, aggregate)
        if found.hosts:
            return manage_flavor.error('Cannot remove aggregate %s. Reason: Host aggregate is '
                                       'not empty.' % found.id)
        found.destroy()
        print('Aggregate %s (%s) deleted.' % (found.name, found.id))
        return _tell_schedulers(query_client_factory(CONF).delete_aggregate, ctxt, found)

    @staticmethod
    def _updated(ctxt, aggregate):
        """Tell the schedulers (a fanout cast); the aggregate is shown whatever they say."""
        code = _tell_schedulers(query_client_factory(CONF).update_aggregates, ctxt,
                                [aggregate])
        return _show(aggregate) + (code,)


def _mirror_in_placement(ctxt, aggregate, host, method):
    """Add or remove the host's nodes' providers to the aggregate in Placement; as Nova's
    API, a failure is only a warning (the aggregate itself is saved)."""
    if not CONF.placement.enabled:
        return
    client = report.SchedulerReportClient(CONF)
    try:
        nodes = compute_node_obj.ComputeNodeList.get_all_by_host(ctxt, host)
    except exception.ComputeHostNotFound:
        nodes = []
    for node in nodes:
        try:
            getattr(client, method)(ctxt, aggregate.uuid, node.hypervisor_hostname)
        except (exception.ResourceProviderNotFound, exception.ResourceProviderRetrievalFailed,
                exception.ResourceProviderUpdateFailed,
                exception.ResourceProviderUpdateConflict) as err:
            if method == 'aggregate_add_host':
                LOG.warning('Failed to associate %s with a placement aggregate: %s. This may '
                            'be corrected after running minisched-manage placement '
                            'sync_aggregates.', node.hypervisor_hostname, err)
            else:
                LOG.warning('Failed to remove association of %s with a placement aggregate: '
                            '%s.', node.hypervisor_hostname, err)


def _tell_schedulers(cast, ctxt, argument):
    """Cast the change to every scheduler; a failure is reported, the change stays saved."""
    try:
        with manage_flavor.broker_errors():
            cast(ctxt, argument)
    except exception.MinischedException as exc:
        return manage_flavor.error('Saved, but the schedulers could not be told (they will see '
                                   'it when they restart): %s' % exc.format_message())
    return 0


def _aggregate_argument(parser):
    parser.add_argument('aggregate', help='Aggregate id, uuid or name.')


def _create_arguments(create):
    create.add_argument('name', help='Aggregate name (unique).')
    create.add_argument('--zone', metavar='AZ',
                        help='Availability zone of its hosts (metadata availability_zone).')


def _host_arguments(parser):
    _aggregate_argument(parser)
    parser.add_argument('host', help='Compute host name.')


def _set_arguments(setter):
    _aggregate_argument(setter)
    manage_flavor.add_property_argument(
        setter, required=True, dest='properties',
        help_text='Metadata item (repeatable); availability_zone=AZ sets the zone.')


def add_parsers(actions):
    """Add the ``aggregate`` category's actions."""
    commands = AggregateCommands()
    show = manage_display.ShowOne
    for name, command, help_text in (
            ('create', show(commands.create, ['name', 'zone'], _create_arguments),
             'Create an aggregate.'),
            ('add-host', show(commands.add_host, ['aggregate', 'host'], _host_arguments),
             'Add a compute host to an aggregate.'),
            ('remove-host', show(commands.remove_host, ['aggregate', 'host'], _host_arguments),
             'Remove a host from an aggregate.'),
            ('set', show(commands.set, ['aggregate', 'properties'], _set_arguments),
             'Set metadata of an aggregate.'),
            ('list', manage_display.Lister(commands.list),
             'List aggregates with hosts and metadata.')):
        manage_display.add_command(actions, name, command, help_text=help_text)

    delete = actions.add_parser('delete', help='Delete an empty aggregate.')
    delete.add_argument('action_kwarg_aggregate', metavar='aggregate',
                        help='Aggregate id, uuid or name.')
    delete.set_defaults(action_fn=commands.delete, action_kwargs=['aggregate'])
