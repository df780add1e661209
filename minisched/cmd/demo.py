"""The local cluster's demo: boot instances of mixed flavors and show where they landed."""
import collections
import time

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
    """Boot ``count`` instances, wait for them, print placement and usage; True if all ACTIVE."""
    ctxt = context.RequestContext(user_id='demo', project_id='demo', is_admin=True)
    api = compute_api.API(conf)
    flavors = _flavors(ctxt)
    say('Booting %d instance(s) of flavors %s...' % (
        count, ', '.join(f.name for f in flavors)))
    uuids = []
    for index in range(count):
        flavor = flavors[index % len(flavors)]
        uuids += api.create(ctxt, flavor, display_name='demo-%02d' % (index + 1))
    instances = _wait(api, ctxt, uuids, say, timeout)
    rows = [[inst.display_name, inst.flavor.name, inst.host or '-', inst.vm_state]
            for inst in sorted(instances, key=lambda i: i.display_name)]
    say('Where the instances landed:')
    manage.print_table(['Name', 'Flavor', 'Host', 'State'], rows, out=_Writer(say))
    _print_usage(ctxt, instances, say)
    errors = [inst for inst in instances if inst.vm_state != instance_obj.ACTIVE]
    for inst in errors:
        faults = api.get_faults(ctxt, inst.uuid)
        say('%s is %s: %s' % (inst.display_name, inst.vm_state,
                              faults[0].message if faults else 'no fault recorded'))
    return not errors and len(instances) == count


def _wait(api, ctxt, uuids, say, timeout):
    deadline = time.monotonic() + timeout
    last = None
    while True:
        instances = [api.get(ctxt, uuid) for uuid in uuids]
        states = collections.Counter(inst.vm_state for inst in instances)
        summary = ', '.join('%d %s' % (n, state) for state, n in sorted(states.items()))
        if summary != last:
            say('  instances: %s' % summary)
            last = summary
        if all(inst.vm_state in _FINAL for inst in instances) or time.monotonic() > deadline:
            return instances
        time.sleep(0.5)


def _print_usage(ctxt, instances, say):
    per_host = collections.Counter(inst.host for inst in instances if inst.host)
    rows = []
    for node in sorted(compute_node_obj.ComputeNodeList.get_all(_cell_context(ctxt)),
                       key=lambda n: n.host):
        rows.append([node.host, '%d/%d' % (node.vcpus_used, node.vcpus),
                     '%d/%d' % (node.memory_mb_used, node.memory_mb),
                     '%d/%d' % (node.local_gb_used, node.local_gb), per_host.get(node.host, 0)])
    say('Per-host usage (used/total; RAM includes the host reserve):')
    manage.print_table(['Host', 'vCPUs', 'RAM MB', 'Disk GB', 'Demo instances'], rows,
                       out=_Writer(say))


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
