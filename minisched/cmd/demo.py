"""The local cluster's demo: boot instances of mixed flavors and show where they landed."""
import collections
import time

from minisched.cmd import demo_why
from minisched.cmd import manage
from minisched.compute import api as compute_api
from minisched import context
from minisched import exception
from minisched.objects import compute_node as compute_node_obj
from minisched.objects import flavor as flavor_obj
from minisched.objects import instance as instance_obj
from minisched import localcluster

_FINAL = (instance_obj.ACTIVE, instance_obj.ERROR)


def _flavors(ctxt):
    flavors = []
    for index, (name, memory_mb, vcpus, root_gb) in enumerate(localcluster.DEMO_FLAVORS):
        try:
            flavor = flavor_obj.Flavor.get_by_name(ctxt, name)
        except exception.FlavorNotFound:
            flavor = flavor_obj.Flavor(ctxt, name=name, flavorid=str(index + 1),
                                       memory_mb=memory_mb, vcpus=vcpus, root_gb=root_gb,
                                       ephemeral_gb=0, swap=0, extra_specs={})
            flavor.create()
        flavors.append(flavor)
    return flavors


def run(conf, say, count, timeout=120):
    """Boot ``count`` instances one at a time, saying for each where it landed and why, then
    the reschedules, failures and each host's usage; True if all ended ACTIVE."""
    ctxt = context.RequestContext(user_id='demo', project_id='demo', is_admin=True)
    api = compute_api.API(conf)
    flavors = _flavors(ctxt)
    say(demo_why.scheduler_summary(conf))
    say('Booting %d instance(s) of flavors %s, one at a time; for each: the host it landed '
        'on and its weight, the runner-up, and what the filters removed...' % (
            count, ', '.join(f.name for f in flavors)))
    instances = []
    deadline = time.monotonic() + timeout
    placement_client = None
    if conf.placement.enabled:
        from minisched.scheduler.client import report
        placement_client = report.SchedulerReportClient(conf)
    for index in range(count):
        flavor = flavors[index % len(flavors)]
        name = 'demo-%02d' % (index + 1)
        ranking = demo_why.rank(conf, context.get_admin_context(), flavor, placement_client)
        [uuid] = api.create(ctxt, flavor, display_name=name)
        inst = _wait(api, ctxt, uuid, deadline)
        instances.append(inst)
        moved = demo_why.reschedules(_settled_actions(api, ctxt, uuid))
        say('  ' + demo_why.placement_line(name, flavor.name, ranking, inst.host,
                                           [host for host, _reason in moved]))
        for host, reason in moved:
            say('      rescheduled from %s: %s' % (host, reason))
        if inst.vm_state != instance_obj.ACTIVE:
            faults = api.get_faults(ctxt, inst.uuid)
            say('      %s: %s' % (inst.vm_state.upper(),
                                  faults[0].message if faults else 'no fault recorded'))
    rows = [[inst.display_name, inst.flavor.name, inst.host or '-', inst.vm_state]
            for inst in instances]
    say('Where the instances landed:')
    manage.print_table(['Name', 'Flavor', 'Host', 'State'], rows, out=_Writer(say))
    _print_usage(conf, ctxt, instances, say)
    if conf.placement.enabled:
        _print_allocations(conf, ctxt, instances, say)
    errors = [inst for inst in instances if inst.vm_state != instance_obj.ACTIVE]
    if errors:
        say('%d of %d instance(s) did not become ACTIVE (reasons above).' % (len(errors),
                                                                             count))
    return not errors


def _settled_actions(api, ctxt, uuid, timeout=10):
    """The instance's actions once each build event has its result (or at ``timeout``).

    A compute finishes its event of a build it gave up after it handed the build on: on a
    busy machine the instance can reach ERROR on the last host before the first host's
    event says why it moved on.
    """
    deadline = time.monotonic() + timeout
    while True:
        actions = api.get_actions(ctxt, uuid)
        open_events = [event for _action, events in actions for event in events
                       if event.event == demo_why.BUILD_EVENT and not event.result]
        if not open_events or time.monotonic() > deadline:
            return actions
        time.sleep(0.2)


def _wait(api, ctxt, uuid, deadline):
    """The instance once ACTIVE or ERROR (or as it is at ``deadline``)."""
    while True:
        inst = api.get(ctxt, uuid)
        if inst.vm_state in _FINAL or time.monotonic() > deadline:
            return inst
        time.sleep(0.2)


def _print_usage(conf, ctxt, instances, say):
    per_host = collections.Counter(inst.host for inst in instances if inst.host)
    rows = []
    for node in sorted(compute_node_obj.ComputeNodeList.get_all(_cell_context(ctxt)),
                       key=lambda n: n.host):
        rows.append([node.host,
                     demo_why.with_ratio(node.vcpus_used, node.vcpus,
                                         node.cpu_allocation_ratio),
                     demo_why.with_ratio(node.memory_mb_used, node.memory_mb,
                                         node.ram_allocation_ratio),
                     demo_why.with_ratio(node.local_gb_used, node.local_gb,
                                         node.disk_allocation_ratio),
                     per_host.get(node.host, 0)])
    say('Per-host usage: used/total (x allocation ratio = the limit %s allows); RAM '
        'includes the host reserve:' % ('Placement' if conf.placement.enabled else
                                         'the filters'))
    manage.print_table(['Host', 'vCPUs', 'RAM MB', 'Disk GB', 'Demo instances'], rows,
                       out=_Writer(say))


def _print_allocations(conf, ctxt, instances, say):
    """What Placement holds: each instance's allocations (``openstack resource provider
    allocation show``) and each provider's inventory with its usage (``openstack resource
    provider inventory list`` and ``resource provider usage show`` side by side)."""
    from minisched.scheduler.client import report
    client = report.SchedulerReportClient(conf)
    names = {}
    rows = []
    for provider in sorted(client.get_providers(ctxt) or [], key=lambda rp: rp['name']):
        names[provider['uuid']] = provider['name']
        _gen, inventory = client.get_inventory(ctxt, provider['uuid'])
        used = collections.Counter()
        for alloc in client.get_allocations_for_resource_provider(
                ctxt, provider['uuid']).values():
            used.update(alloc['resources'])
        for rc, inv in sorted(inventory.items()):
            rows.append([provider['name'], rc, inv['allocation_ratio'], inv['reserved'],
                         inv['total'], used.get(rc, 0)])
    say('Placement: each provider\'s inventory and what its allocations use:')
    manage.print_table(['Provider', 'Resource class', 'Allocation ratio', 'Reserved', 'Total',
                        'Used'], rows, out=_Writer(say))
    rows = []
    for inst in instances:
        allocs = (client.get_allocs_for_consumer(ctxt, inst.uuid) or {}).get('allocations', {})
        for rp_uuid, alloc in sorted(allocs.items()):
            rows.append([inst.display_name, names.get(rp_uuid, rp_uuid), ', '.join(
                '%s=%s' % item for item in sorted(alloc['resources'].items()))])
        if not allocs:
            rows.append([inst.display_name, '-', 'none'])
    say('Placement: the allocations of each instance:')
    manage.print_table(['Name', 'Resource provider', 'Resources'], rows, out=_Writer(say))


def _cell_context(ctxt):
    from minisched.objects import cell_mapping
    cells = [c for c in cell_mapping.CellMappingList.get_all(ctxt) if not c.is_cell0()]
    cctxt = context.get_admin_context()
    if cells:
        cctxt.db_connection = cells[0].database_connection
    return cctxt


class _Writer:
    def __init__(self, say):
        self.say = say

    def write(self, text):
        self.say(text.rstrip('\n'))
