"""The column-wise NUMA and PCI answers are the exact checks' wherever they decide.

Random hosts (1 to 4 NUMA cells, with or without SMT, shared and dedicated CPUs split or
not, pinned CPUs, shared CPU and memory usage, huge pages partly used or reserved, PCI
pools of several kinds on NUMA nodes or none, allocation ratios) and random requests (node
counts, CPU and thread policies, emulator threads, page sizes, PCI aliases of each NUMA
affinity policy): a host the columns rule out is never one ``numa_fit_instance_to_host``
(or ``support_requests``) accepts, and a host they accept always is one it accepts.
"""
import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from minisched import objects
from minisched.pci import request as pci_request
from minisched.scheduler.filters import numa_topology
from minisched.scheduler.filters import pci_passthrough
from minisched.scheduler import host_state
from minisched.scheduler import numa_rules
from minisched.virt import hardware
from tests.unit import base
from tests.unit import fakes

ALIASES = [
    '{"name": "nic", "vendor_id": "8086", "product_id": "1520"}',
    '{"name": "gpu", "vendor_id": "10de", "product_id": "1eb8"}',
    '{"name": "nic-near", "vendor_id": "8086", "product_id": "1520", '
    '"numa_policy": "required"}',
    '{"name": "nic-pref", "vendor_id": "8086", "product_id": "1520", '
    '"numa_policy": "preferred"}',
    '{"name": "pf", "vendor_id": "8086", "product_id": "1520", "device_type": "type-PF"}']
PAGE_SIZES = (None, None, 'small', 'large', 'any', '2048', '1GB')
PCI = (None, None, 'nic:1', 'nic:2', 'gpu:1', 'nic-near:1', 'nic-near:2', 'nic-pref:2', 'pf:1',
       'nic:1,gpu:1')
DEVICES = (('8086', '1520', 'type-PCI'), ('8086', '1520', 'type-PF'),
           ('10de', '1eb8', 'type-PCI'))

cell_st = st.fixed_dictionaries({
    'pinned': st.floats(0, 1), 'cpu_usage': st.integers(0, 20),
    'memory_usage': st.floats(0, 1.2), 'pages_used': st.floats(0, 1),
    'pages_reserved': st.integers(0, 64)})
host_st = st.fixed_dictionaries({
    'nodes': st.integers(1, 4),
    'cpus_per_node': st.sampled_from([2, 4, 6]),
    'threads': st.sampled_from([1, 2]),
    'split': st.booleans(),  # shared and dedicated CPUs apart (not the legacy way)
    'hugepages': st.sampled_from([(), ((2048, 256),), ((2048, 128), (1048576, 1))]),
    'cells': st.lists(cell_st, min_size=4, max_size=4),
    'pools': st.lists(st.tuples(st.sampled_from(DEVICES),
                                st.sampled_from([0, 1, 2, 3, None]), st.integers(0, 3)),
                      max_size=4),
    'ratios': st.sampled_from([(1.0, 1.0), (4.0, 1.5), (16.0, 1.0)]),
})


@st.composite
def extra_specs_st(draw):
    """Flavor extra specs the compute API accepts (thread policies, emulator threads and
    dedicated masks only with a policy that pins)."""
    specs = {'hw:numa_nodes': draw(st.sampled_from(['1', '1', '2', '3']))}
    policy = draw(st.sampled_from([None, 'shared', 'dedicated', 'dedicated', 'mixed']))
    if policy:
        specs['hw:cpu_policy'] = policy
    if policy in ('dedicated', 'mixed'):
        specs.update(draw(st.fixed_dictionaries({}, optional={
            'hw:cpu_thread_policy': st.sampled_from(['prefer', 'isolate', 'require']),
            'hw:emulator_threads_policy': st.just('isolate')})))
    if policy == 'mixed':
        specs['hw:cpu_dedicated_mask'] = draw(st.sampled_from(['^0', '0-1']))
    for key, values in (('hw:mem_page_size', PAGE_SIZES), ('pci_passthrough:alias', PCI)):
        value = draw(st.sampled_from(values))
        if value:
            specs[key] = value
    return specs


def _topology(host):
    cpus = set(range(host['nodes'] * host['cpus_per_node']))
    shared = {cpu for cpu in cpus if cpu % 2} if host['split'] else cpus
    dedicated = cpus - shared if host['split'] else cpus
    topology = fakes.fake_numa_topology(
        nodes=host['nodes'], cpus_per_node=host['cpus_per_node'], threads=host['threads'],
        memory_mb_per_node=2048, hugepages=host['hugepages'], shared=shared,
        dedicated=dedicated)
    for cell, usage in zip(topology.cells, host['cells']):
        free = sorted(cell.pcpuset)
        cell.pinned_cpus = set(free[:int(usage['pinned'] * len(free))])
        cell.cpu_usage = usage['cpu_usage']
        cell.memory_usage = int(usage['memory_usage'] * cell.memory)
        for pages in cell.mempages:
            pages.used = int(usage['pages_used'] * pages.total)
            pages.reserved = min(usage['pages_reserved'], pages.total - pages.used)
    return topology


def _state(host, table):
    topology = _topology(host)
    pools = objects.PciDevicePoolList(objects=[
        objects.PciDevicePool(vendor_id=vendor, product_id=product, numa_node=node,
                              count=count, tags={'dev_type': dev_type})
        for (vendor, product, dev_type), node, count in host['pools']])
    state = fakes.fake_host_state('h%d' % table.size, table=table, numa_topology=topology)
    state.pci_stats = fakes.fake_pci_stats(topology)
    state.pci_stats = type(state.pci_stats)(topology, stats=pools)
    state.cpu_allocation_ratio, state.ram_allocation_ratio = host['ratios']
    return state


#: PCI NUMA affinity policies of the flavor (the alias's own, when it has one, wins).
POLICIES = (None, 'legacy', 'required', 'preferred', 'socket')


def _idle_with_pools(hosts):
    """The hosts with nothing used: the NUMA fit then turns on the devices alone."""
    for host in hosts:
        host['cells'] = [dict(cell, pinned=0, cpu_usage=0, memory_usage=0, pages_used=0)
                         for cell in host['cells']]
    return hosts


#: A cell with nothing used, and a host of two such cells with no devices.
UNUSED = {'pinned': 0.0, 'cpu_usage': 0, 'memory_usage': 0.0, 'pages_used': 0.0,
          'pages_reserved': 0}
IDLE = {'nodes': 2, 'cpus_per_node': 4, 'threads': 2, 'split': False, 'hugepages': (),
        'pools': [], 'ratios': (1.0, 1.0), 'cells': [UNUSED] * 4}


class TestColumnsAgreeWithTheFit(base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(group='pci', alias=ALIASES)

    def _spec(self, extra_specs, vcpus):
        try:
            return fakes.fake_numa_spec(dict(extra_specs), vcpus=vcpus,
                                        memory_mb=256 * vcpus, conf=self.conf)
        except Exception:  # an invalid combination (e.g. more nodes than vCPUs)
            return None

    @settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @example(hosts=[dict(IDLE, hugepages=((2048, 256),),
                         pools=[(DEVICES[0], 1, 2), (DEVICES[0], None, 1)])],
             extra_specs={'hw:numa_nodes': '1', 'pci_passthrough:alias': 'nic:2'}, vcpus=2,
             sparse=False)
    @example(  # 'any' page size: the first cell whose memory fits picks 2 MB pages, then
        # fails on its memory usage; the next cell has too few free 2 MB pages
        hosts=[dict(IDLE, cpus_per_node=2, hugepages=((2048, 256),), cells=[
            dict(UNUSED, memory_usage=1.0),
            dict(UNUSED, cpu_usage=1, pages_used=0.5, pages_reserved=1), UNUSED, UNUSED])],
        extra_specs={'hw:numa_nodes': '1', 'hw:mem_page_size': 'any'}, vcpus=1, sparse=True)
    @given(hosts=st.lists(host_st, min_size=1, max_size=4), extra_specs=extra_specs_st(),
           vcpus=st.integers(1, 8), sparse=st.booleans())
    def test_decided_hosts_are_decided_as_the_fit_decides(self, hosts, extra_specs, vcpus,
                                                          sparse):
        self._check(hosts, extra_specs, vcpus, sparse)

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @example(  # PFs on the one cell are not for a request that does not ask for PFs
        hosts=_idle_with_pools([dict(IDLE, nodes=1)]),
        pools=[[(DEVICES[1], 0, 1), (DEVICES[0], 1, 1)]] * 4, alias='nic-near:1',
        policy=None)
    @given(hosts=st.lists(host_st, min_size=1, max_size=4).map(_idle_with_pools),
           pools=st.lists(st.lists(st.tuples(st.sampled_from(DEVICES),
                                             st.sampled_from([0, 1, None]),
                                             st.integers(0, 3)), min_size=1, max_size=4),
                          min_size=4, max_size=4),
           alias=st.sampled_from([a for a in PCI if a]), policy=st.sampled_from(POLICIES))
    def test_pci_affinity_decided_as_the_fit_decides(self, hosts, pools, alias, policy):
        for host, host_pools in zip(hosts, pools):
            host['pools'] = host_pools
        extra_specs = {'hw:numa_nodes': '1', 'pci_passthrough:alias': alias}
        if policy:
            extra_specs['hw:pci_numa_affinity_policy'] = policy
        self._check(hosts, extra_specs, 2)

    def _check(self, hosts, extra_specs, vcpus, sparse=False):
        spec = self._spec(extra_specs, vcpus)
        if spec is None or spec.numa_topology is None:
            return
        table = host_state.HostStateTable()
        # Hosts that are not candidates: the rows asked about are then a small part of the
        # table, which numa_rules reads row by row rather than whole.
        for _ in range(20 if sparse else 0):
            _state(IDLE, table)
        states = [_state(host, table) for host in hosts]
        rows = np.asarray([state.row for state in states])
        requests = spec.pci_requests.requests if spec.pci_requests else None
        decision = numa_rules.numa_decision(table, rows, spec.numa_topology, requests)
        for position, state in enumerate(states):
            limits = objects.NUMATopologyLimits(
                cpu_allocation_ratio=state.cpu_allocation_ratio,
                ram_allocation_ratio=state.ram_allocation_ratio)
            fitted = hardware.numa_fit_instance_to_host(
                state.numa_topology, spec.numa_topology, limits=limits,
                pci_requests=requests, pci_stats=state.pci_stats)
            if decision is not None and not decision.open[position]:
                self.assertEqual(fitted is not None, bool(decision.passes[position]),
                                 (position, extra_specs))
        # And the filters' row answers are their per-host ones.
        for flt in (numa_topology.NUMATopologyFilter(self.conf),
                    pci_passthrough.PciPassthroughFilter(self.conf)):
            mask = flt.filter_rows(_view(table, rows), spec)
            if mask is not None:
                self.assertEqual([flt.host_passes(s, spec) for s in states], list(mask),
                                 (flt.name, extra_specs))

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(hosts=st.lists(host_st, min_size=1, max_size=4),
           alias=st.sampled_from(['nic:1', 'nic:2', 'gpu:3', 'pf:1', 'nic:1,gpu:1']))
    def test_pci_hosts_decided_as_support_requests_decides(self, hosts, alias):
        table = host_state.HostStateTable()
        states = [_state(host, table) for host in hosts]
        rows = np.asarray([state.row for state in states])
        flavor = fakes.fake_spec(extra_specs={'pci_passthrough:alias': alias}).flavor
        requests = pci_request.get_pci_requests_from_flavor(flavor, conf=self.conf).requests
        decision = numa_rules.pci_decision(table, rows, requests)
        for position, state in enumerate(states):
            if not decision.open[position]:
                self.assertEqual(state.pci_stats.support_requests(requests, None),
                                 bool(decision.passes[position]), position)

    def test_most_hosts_of_a_plain_numa_request_are_decided(self):
        host = dict(IDLE, hugepages=((2048, 256),), pools=[(DEVICES[0], 0, 1)],
                    ratios=(4.0, 1.0), cells=[{'pinned': 0.5, 'cpu_usage': 3,
                                               'memory_usage': 0.5, 'pages_used': 0.5,
                                               'pages_reserved': 0}] * 4)
        table = host_state.HostStateTable()
        rows = np.asarray([_state(host, table).row for _ in range(3)])
        for extra_specs in ({'hw:numa_nodes': '1'}, {'hw:numa_nodes': '2'},
                            {'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'require'},
                            {'hw:mem_page_size': 'large'},
                            {'hw:numa_nodes': '1', 'pci_passthrough:alias': 'nic:1'}):
            spec = self._spec(extra_specs, 2)
            requests = spec.pci_requests.requests if spec.pci_requests else None
            decision = numa_rules.numa_decision(table, rows, spec.numa_topology, requests)
            self.assertFalse(decision.open.any(), extra_specs)


def _view(table, rows):
    from minisched.scheduler import filters
    return filters.RowView(table, rows)
