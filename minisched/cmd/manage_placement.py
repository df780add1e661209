"""Placement: heal missing allocations, delete orphaned ones, sync aggregates (nova-manage's).

``minisched-manage placement heal_allocations [--max-count N] [--dry-run] [--instance UUID]
[--verbose]`` creates, for every instance on a host (not deleted, no task under way) that has
no allocations in Placement, the allocations of its flavor on its compute node's provider.
``minisched-manage placement audit [--delete] [--resource_provider UUID] [--verbose]`` lists
the allocations of compute node providers whose consumer is no live instance (a build that
failed halfway, a delete that could not reach Placement) and with ``--delete`` deletes them.
``minisched-manage placement sync_aggregates [--verbose]`` puts the resource provider of
every host of a host aggregate in the Placement aggregate of the same uuid (aggregates made
before Placement was enabled, or a mirror that failed); it removes nothing.
All need ``[placement]`` settings; the exit codes are nova-manage's (see each action's help).
"""
import collections

from keystoneauth1 import exceptions as ks_exc

from minisched import config, context, exception
from minisched.objects import aggregate as aggregate_obj
from minisched.objects import cell_mapping as cell_mapping_obj
from minisched.objects import compute_node as compute_node_obj
from minisched.objects import host_mapping as host_mapping_obj
from minisched.objects import instance as instance_obj
from minisched.scheduler.client import report
from minisched.scheduler import resource_request

CONF = config.CONF

#: heal_allocations' exit codes (nova-manage's).
HEALED, MAX_COUNT_REACHED, NO_NODE, HEAL_FAILED, NOTHING_TO_HEAL = 0, 1, 2, 3, 4
#: audit's exit codes (nova-manage's).
NO_ORPHANS, ORPHANS_FOUND, ORPHANS_DELETED = 0, 3, 4
#: sync_aggregates' exit codes (nova-manage's).
(SYNCED, TOO_MANY_COMPUTES, PLACEMENT_ERROR, AGGREGATE_UPDATE_FAILED, HOSTS_UNMAPPED,
 COMPUTES_NOT_FOUND, PROVIDERS_NOT_FOUND) = range(7)


def _live_instances(ctxt, instance_uuid=None):
    """Instances of every cell, not deleted (the one of ``instance_uuid`` only)."""
    filters = {'deleted': False}
    if instance_uuid:
        filters['uuid'] = instance_uuid
    cells = list(cell_mapping_obj.CellMappingList.get_all(ctxt)) or [None]
    for cell in cells:
        with context.target_cell(ctxt, cell) as cctxt:
            for instance in instance_obj.InstanceList.get_by_filters(cctxt, filters):
                yield cctxt, instance


def _flavor_resources(instance):
    """The resources of the instance's flavor, as the scheduler asks for them."""
    spec = _SpecOf(instance)
    request = resource_request.ResourceRequest.from_request_spec(spec)
    return request.unnumbered.resources


class _SpecOf:
    """What ``ResourceRequest.from_request_spec`` reads, from an instance."""

    def __init__(self, instance):
        self.flavor = instance.flavor
        self.image = None
        self.is_bfv = False

    @staticmethod
    def obj_attr_is_set(name):
        return name in ('flavor', 'is_bfv')


class PlacementCommands:
    """Placement: heal missing allocations, audit orphaned ones, mirror aggregates."""

    def heal_allocations(self, max_count=None, verbose=False, dry_run=False, instance=None):
        """Exit 0: allocations created; 1: --max-count reached with more to heal; 2: an
        instance's compute node is not found; 3: Placement refused an allocation; 4:
        nothing to heal."""
        ctxt = context.get_admin_context()
        client = report.SchedulerReportClient(CONF)
        healed = 0
        for cctxt, inst in _live_instances(ctxt, instance):
            if not inst.host or not inst.node or inst.task_state is not None:
                _say(verbose, 'Instance %s is not on a host or has a task under way: '
                              'skipped.' % inst.uuid)
                continue
            current = client.get_allocs_for_consumer(ctxt, inst.uuid)
            if current is None:
                return _fail('Placement could not be reached.', HEAL_FAILED)
            if current['allocations']:
                _say(verbose, 'Instance %s already has allocations.' % inst.uuid)
                continue
            if max_count is not None and healed >= max_count:
                print('Max count reached. Processed %d instances.' % healed)
                return MAX_COUNT_REACHED
            try:
                node = compute_node_obj.ComputeNode.get_by_host_and_nodename(
                    cctxt, inst.host, inst.node)
            except exception.NotFound:
                return _fail('Compute node record not found for instance %s (host %s, node '
                             '%s).' % (inst.uuid, inst.host, inst.node), NO_NODE)
            payload = {'allocations': {node.uuid: {'resources': _flavor_resources(inst)}},
                       'project_id': inst.project_id, 'user_id': inst.user_id,
                       'consumer_generation': None}
            if dry_run:
                print('[dry-run] Would create allocations for instance %s: %s'
                      % (inst.uuid, payload['allocations']))
            elif not client.put_allocations(ctxt, inst.uuid, payload):
                return _fail('Failed to create allocations for instance %s against resource '
                             'provider %s.' % (inst.uuid, node.uuid), HEAL_FAILED)
            else:
                _say(verbose, 'Created allocations for instance %s on %s.'
                     % (inst.uuid, node.hypervisor_hostname))
            healed += 1
        if not healed:
            print('No instances need allocations healing.')
            return NOTHING_TO_HEAL
        print('%s allocations for %d instance(s).' % (
            'Would create' if dry_run else 'Created', healed))
        return HEALED

    def audit(self, delete=False, resource_provider=None, verbose=False):
        """Exit 0: no orphaned allocation; 3: some found; 4: all found were deleted."""
        ctxt = context.get_admin_context()
        client = report.SchedulerReportClient(CONF)
        live = {inst.uuid for _cctxt, inst in _live_instances(ctxt)}
        if resource_provider:
            rps = [client.get_provider(ctxt, resource_provider) or _missing(resource_provider)]
        else:
            rps = client.get_providers(ctxt) or []
        orphans = collections.OrderedDict()
        for rp in rps:
            for consumer, alloc in sorted(client.get_allocations_for_resource_provider(
                    ctxt, rp['uuid']).items()):
                if consumer in live:
                    continue
                orphans.setdefault(consumer, []).append((rp, alloc['resources']))
                print('Allocations for consumer UUID %s on Resource Provider %s (%s) can be '
                      'deleted: %s' % (consumer, rp['uuid'], rp['name'], alloc['resources']))
        _say(verbose, 'Processed %d resource provider(s).' % len(rps))
        if not orphans:
            return NO_ORPHANS
        if not delete:
            return ORPHANS_FOUND
        for consumer in orphans:
            client.delete_allocation_for_instance(ctxt, consumer, force=True)
            print('Deleted allocations for consumer UUID %s.' % consumer)
        return ORPHANS_DELETED

    def sync_aggregates(self, verbose=False):
        """Exit 0: done; 1: a host has more than one compute node; 2: Placement failed to
        give a provider's aggregates (or could not be reached); 3: Placement refused an
        update; 4: hosts without a host mapping; 5: hosts without a compute node record;
        6: providers not found (the problems of codes 4 to 6 are all listed, the last one
        found gives the code)."""
        ctxt = context.get_admin_context()
        client = report.SchedulerReportClient(CONF)
        output = print if verbose else (lambda message: None)
        output('Filling in missing placement aggregates')
        host_to_rp_uuid = {}
        unmapped_hosts, computes_not_found, providers_not_found = set(), set(), {}
        single_cell = not cell_mapping_obj.CellMappingList.get_all(ctxt)
        for aggregate in aggregate_obj.AggregateList.get_all(ctxt):
            output('Processing aggregate: %s' % aggregate.name)
            for host in aggregate.hosts:
                output('Processing host: %s' % host)
                rp_uuid = host_to_rp_uuid.get(host)
                if not rp_uuid:
                    try:
                        rp_uuid = host_to_rp_uuid[host] = _rp_uuid_for_host(ctxt, host,
                                                                            single_cell)
                    except exception.HostMappingNotFound:
                        unmapped_hosts.add(host)
                        continue
                    except exception.ComputeHostNotFound:
                        computes_not_found.add(host)
                        continue
                    except exception.TooManyComputesForHost as exc:
                        print(exc.format_message())
                        return TOO_MANY_COMPUTES
                code = _add_to_aggregate(client, ctxt, aggregate, host, rp_uuid, output,
                                         providers_not_found)
                if code:
                    return code
        return _sync_problems(unmapped_hosts, computes_not_found, providers_not_found)


def _rp_uuid_for_host(ctxt, host, single_cell):
    """The uuid of ``host``'s compute node (its provider's), read in the host's cell (the
    configured database when there are no cell mappings at all)."""
    cell = None
    if not single_cell:
        cell = host_mapping_obj.HostMapping.get_by_host(ctxt, host).cell_mapping
    with context.target_cell(ctxt, cell) as cctxt:
        nodes = compute_node_obj.ComputeNodeList.get_all_by_host(cctxt, host)
    if len(nodes) > 1:
        raise exception.TooManyComputesForHost(num_computes=len(nodes), host=host)
    return nodes[0].uuid


def _add_to_aggregate(client, ctxt, aggregate, host, rp_uuid, output, providers_not_found):
    """Put the provider in the aggregate; an exit code when sync_aggregates must stop."""
    try:
        client.aggregate_add_host(ctxt, aggregate.uuid, rp_uuid=rp_uuid)
    except exception.ResourceProviderNotFound:
        providers_not_found[host] = rp_uuid
        return None
    except exception.ResourceProviderAggregateRetrievalFailed as exc:
        print(exc.format_message())
        return PLACEMENT_ERROR
    except ks_exc.ClientException as exc:
        print('%s (%s)' % (exception.PlacementAPIConnectFailure().format_message(),
                           exception.first_line(exc)))
        return PLACEMENT_ERROR
    except exception.MinischedException as exc:
        print('Failed updating provider aggregates for host (%s), provider (%s) and aggregate '
              '(%s). Error: %s' % (host, rp_uuid, aggregate.uuid, exc.format_message()))
        return AGGREGATE_UPDATE_FAILED
    output('Successfully added host (%s) and provider (%s) to aggregate (%s).'
           % (host, rp_uuid, aggregate.uuid))
    return None


def _sync_problems(unmapped_hosts, computes_not_found, providers_not_found):
    """Print every problem sync_aggregates met; the exit code of the last kind printed."""
    code = SYNCED
    if unmapped_hosts:
        print('The following hosts were found in host aggregates but no host mappings were '
              'found in the API database. Run "minisched-manage cell discover_hosts" and '
              'then retry. Missing: %s' % ','.join(sorted(unmapped_hosts)))
        code = HOSTS_UNMAPPED
    if computes_not_found:
        print('Unable to find matching compute_nodes record entries in the cell database for '
              'the following hosts; does the minisched-compute service on each host need to '
              'be restarted? Missing: %s' % ','.join(sorted(computes_not_found)))
        code = COMPUTES_NOT_FOUND
    if providers_not_found:
        print('Unable to find matching resource provider record in placement with uuid for '
              'the following hosts: %s. Try restarting the minisched-compute service on each '
              'host and then retry.' % ','.join('(%s=%s)' % (host, providers_not_found[host])
                                                for host in sorted(providers_not_found)))
        code = PROVIDERS_NOT_FOUND
    return code


def _missing(uuid):
    raise exception.ResourceProviderNotFound(name_or_uuid=uuid)


def _say(verbose, message):
    if verbose:
        print(message)


def _fail(message, code):
    print(message)
    return code


def add_parsers(actions):
    """Add the ``placement`` category's actions."""
    commands = PlacementCommands()
    heal = actions.add_parser('heal_allocations', help='Create the missing allocations of '
                              'instances on hosts. ' + commands.heal_allocations.__doc__)
    heal.add_argument('--max-count', type=int, dest='action_kwarg_max_count', metavar='N',
                      help='Heal at most N instances (exit 1 when more remain).')
    heal.add_argument('--verbose', action='store_true', dest='action_kwarg_verbose',
                      help='Say what is done with each instance.')
    heal.add_argument('--dry-run', action='store_true', dest='action_kwarg_dry_run',
                      help='Print what would be created, create nothing.')
    heal.add_argument('--instance', dest='action_kwarg_instance', metavar='UUID',
                      help='Only this instance.')
    heal.set_defaults(action_fn=commands.heal_allocations,
                      action_kwargs=['max_count', 'verbose', 'dry_run', 'instance'])
    audit = actions.add_parser('audit', help='Find the allocations of no live instance. ' +
                               commands.audit.__doc__)
    audit.add_argument('--delete', action='store_true', dest='action_kwarg_delete',
                       help='Delete the orphaned allocations found.')
    audit.add_argument('--resource_provider', dest='action_kwarg_resource_provider',
                       metavar='UUID', help='Only this resource provider.')
    audit.add_argument('--verbose', action='store_true', dest='action_kwarg_verbose',
                       help='Say how many providers were looked at.')
    audit.set_defaults(action_fn=commands.audit,
                       action_kwargs=['delete', 'resource_provider', 'verbose'])
    sync = actions.add_parser('sync_aggregates', help='Mirror host aggregates to resource '
                              'provider aggregates in Placement (adds, never removes). ' +
                              commands.sync_aggregates.__doc__)
    sync.add_argument('--verbose', action='store_true', dest='action_kwarg_verbose',
                      help='Provide verbose output during execution.')
    sync.set_defaults(action_fn=commands.sync_aggregates, action_kwargs=['verbose'])
