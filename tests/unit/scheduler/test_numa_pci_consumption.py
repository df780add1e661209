"""Consumption of NUMA and PCI requests, randomized: both pipelines and Nova's rule agree.

Sequences of requests (pinned, multi-node, huge-page and PCI flavors, one to four instances,
forced hosts or not, with the NUMA and PCI filters on or off) run through the RowPipeline and
the per-host ReferencePipeline over identical host states. After each request both must have
decided alike and left every host state alike: sizes, counters, NUMA usage (pinned CPUs,
shared CPUs, memory, pages), PCI pools (counts and order), instances. Both must also equal
Nova's rule (``HostState._locked_consume_from_request``) applied to the states from before
the request, host by host as chosen, on a request of its own; a request that fails as a
whole must leave the states as they were (Nova builds its host states anew per request).
"""
import copy
import random

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from oslo_utils.fixture import uuidsentinel as uuids

from minisched import exception
from minisched.scheduler import filter_scheduler
from minisched.virt import hardware
from tests.unit import base
from tests.unit import fakes
from tests.unit.scheduler import numa_hosts

EXTRA_SPECS = (
    {}, {'hw:numa_nodes': '1'}, {'hw:numa_nodes': '2'}, {'hw:cpu_policy': 'dedicated'},
    {'hw:cpu_policy': 'dedicated', 'hw:numa_nodes': '2'}, {'hw:mem_page_size': 'large'},
    {'pci_passthrough:alias': 'nic:1'}, {'pci_passthrough:alias': 'nic:2'},
    {'pci_passthrough:alias': 'nic:1', 'hw:numa_nodes': '1'},
    {'hw:cpu_policy': 'dedicated', 'pci_passthrough:alias': 'nic-near:1'},
    {'hw:cpu_policy': 'dedicated', 'hw:numa_nodes': '1', 'pci_passthrough:alias': 'nic:1'},
    {'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'require'},
    {'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'isolate'},
    {'hw:mem_page_size': '2048', 'hw:numa_nodes': '2'},
    {'hw:numa_nodes': '1', 'pci_passthrough:alias': 'nic-near:1'})
HOSTS = ('h0', 'h1', 'h2')

host_st = st.fixed_dictionaries({
    'nodes': st.sampled_from([1, 2]),
    'cpus_per_node': st.sampled_from([2, 4]),
    'hugepages': st.sampled_from([(), ((2048, 512),)]),  # 1 GB of 2 MB pages per node
    'pools': st.lists(st.tuples(st.sampled_from([0, 1]), st.integers(0, 2)), max_size=2,
                      unique_by=lambda pool: pool[0]),
}, optional={'threads': st.sampled_from([1, 2])})
request_st = st.fixed_dictionaries({
    'extra_specs': st.sampled_from(EXTRA_SPECS),
    'size': st.sampled_from([(1024, 2), (2048, 2), (512, 4)]),
    'count': st.integers(1, 4),
    'force': st.sampled_from([None, None, 'h0', 'h1']),
})


class NovaHost:
    """A host as Nova's HostState holds it for one request, consumed by Nova's rule."""

    def __init__(self, state):
        for name in ('free_ram_mb', 'free_disk_mb', 'vcpus_used', 'num_instances',
                     'num_io_ops', 'numa_topology'):
            setattr(self, name, getattr(state, name))
        self.pci_stats = copy.deepcopy(state.pci_stats)
        self.instances = set(state.instances)

    def consume(self, spec, limits):
        """``_locked_consume_from_request``; a PCI request that cannot be met (no filter
        checked it) stops it there, as minisched logs and goes on (Nova raises)."""
        self.free_ram_mb -= spec.memory_mb
        self.free_disk_mb -= (spec.root_gb + spec.ephemeral_gb) * 1024
        self.vcpus_used += spec.vcpus
        self.num_instances += 1
        requests = (spec.pci_requests.requests if spec.pci_requests and self.pci_stats
                    else None)
        if self.numa_topology and spec.numa_topology:
            spec.numa_topology = hardware.numa_fit_instance_to_host(
                self.numa_topology, spec.numa_topology, limits=limits.get('numa_topology'),
                pci_requests=requests, pci_stats=self.pci_stats)
            self.numa_topology = hardware.numa_usage_from_instance_numa(
                self.numa_topology, spec.numa_topology)
        if requests:
            cells = spec.numa_topology.cells if spec.numa_topology else None
            try:
                self.pci_stats.apply_requests(requests, {}, cells)
            except exception.PciDeviceRequestFailed:
                return
        self.num_io_ops += 1

    def picture(self, host):
        return {'host': host, 'free_ram_mb': self.free_ram_mb,
                'free_disk_mb': self.free_disk_mb, 'vcpus_used': self.vcpus_used,
                'num_instances': self.num_instances, 'num_io_ops': self.num_io_ops,
                'numa': numa_hosts.numa_usage(self.numa_topology),
                'pools': numa_hosts.pool_counts(self.pci_stats),
                'instances': sorted(self.instances)}


def _comparable(decisions):
    """Decisions with the NUMA limits (an object) as their values."""
    if decisions is None:
        return None
    return [(host, {key: value.obj_to_primitive() if key == 'numa_topology' else value
                    for key, value in limits.items()}) for host, limits in decisions]


def _topology(spec):
    return None if spec.numa_topology is None else spec.numa_topology.obj_to_primitive()


class TestConsumptionAgainstNovasRule(base.TestCase):

    def setUp(self):
        super().setUp()
        self.ctxt = numa_hosts.set_up(self, filters=False)

    def _rows(self, hosts):
        rows = []
        for index, (name, host) in enumerate(zip(HOSTS, hosts), 1):
            topology = fakes.fake_numa_topology(
                nodes=host['nodes'], cpus_per_node=host['cpus_per_node'],
                threads=host.get('threads', 1), hugepages=host['hugepages'])
            pools = [('8086', '1520', node, count) for node, count in host['pools']]
            rows.append(numa_hosts.node_row(index, name, topology, pools,
                                            memory_mb=host['nodes'] * 4096,
                                            vcpus=host['nodes'] * host['cpus_per_node']))
        return rows

    def _spec(self, request, index):
        memory_mb, vcpus = request['size']
        spec = numa_hosts.numa_spec(self.conf, dict(request['extra_specs']),
                                    memory_mb=memory_mb, vcpus=vcpus,
                                    num_instances=request['count'])
        if request['force']:
            spec.force_hosts = [request['force']]
        uuid_list = [getattr(uuids, 'r%di%d' % (index, n)) for n in range(request['count'])]
        return spec, uuid_list

    def _run(self, fs, spec, uuid_list, seed):
        random.seed(seed)
        try:
            selections = fs._schedule(self.ctxt, spec, uuid_list)
        except exception.NoValidHost:
            return None
        return [(sel[0].service_host, sel[0].limits.to_dict()) for sel in selections]

    @settings(max_examples=40, deadline=None,
              suppress_health_check=[HealthCheck.too_slow])
    @example(  # a multi-create's first instance drops an empty pool it reaches (as Nova's
        # rule does) with the one it empties; when the request fails, both come back
        hosts=[{'nodes': 1, 'cpus_per_node': 2, 'hugepages': (), 'pools': []},
               {'nodes': 1, 'cpus_per_node': 2, 'hugepages': (), 'pools': []},
               {'nodes': 1, 'cpus_per_node': 2, 'hugepages': (), 'pools': [(0, 0), (1, 1)]}],
        requests=[{'extra_specs': {}, 'size': (1024, 2), 'count': 1, 'force': None}] * 3 + [
            {'extra_specs': {'pci_passthrough:alias': 'nic:1'}, 'size': (1024, 2),
             'count': 2, 'force': None}],
        numa_filters=True)
    @example(  # after a first instance, a multi-create empties both pools of the one host
        # with devices, then fails: the pools come back in their order
        hosts=[{'nodes': 2, 'cpus_per_node': 4, 'hugepages': (), 'pools': [(0, 1), (1, 1)]},
               {'nodes': 2, 'cpus_per_node': 4, 'hugepages': (), 'pools': []},
               {'nodes': 1, 'cpus_per_node': 4, 'hugepages': (), 'pools': []}],
        requests=[{'extra_specs': {}, 'size': (512, 4), 'count': 1, 'force': 'h0'},
                  {'extra_specs': {'pci_passthrough:alias': 'nic:1'}, 'size': (1024, 2),
                   'count': 3, 'force': None},
                  {'extra_specs': {'pci_passthrough:alias': 'nic:1'}, 'size': (1024, 2),
                   'count': 1, 'force': None}],
        numa_filters=True)
    @example(  # forced onto a host whose cells are full: the fit fails, the devices go
        hosts=[{'nodes': 2, 'cpus_per_node': 2, 'hugepages': (), 'pools': [(0, 2), (1, 1)]},
               {'nodes': 1, 'cpus_per_node': 2, 'hugepages': (), 'pools': []},
               {'nodes': 1, 'cpus_per_node': 2, 'hugepages': (), 'pools': []}],
        requests=[{'extra_specs': {'hw:cpu_policy': 'dedicated', 'hw:numa_nodes': '1',
                                   'pci_passthrough:alias': 'nic:1'},
                   'size': (1024, 2), 'count': 3, 'force': 'h0'}],
        numa_filters=True)
    @example(  # a forced PCI request fails half-way on a host without devices; a later
        # request that fails as a whole must not take back what that one took
        hosts=[{'nodes': 2, 'cpus_per_node': 2, 'hugepages': (), 'pools': []},
               {'nodes': 1, 'cpus_per_node': 2, 'hugepages': (), 'pools': []},
               {'nodes': 1, 'cpus_per_node': 2, 'hugepages': (), 'pools': []}],
        requests=[{'extra_specs': {'pci_passthrough:alias': 'nic:1'}, 'size': (1024, 2),
                   'count': 1, 'force': 'h0'},
                  {'extra_specs': {'hw:numa_nodes': '2'}, 'size': (1024, 2), 'count': 3,
                   'force': None}],
        numa_filters=True)
    @given(hosts=st.lists(host_st, min_size=3, max_size=3),
           requests=st.lists(request_st, min_size=1, max_size=6),
           numa_filters=st.booleans())
    def test_pipelines_and_novas_rule_agree_after_each_request(self, hosts, requests,
                                                               numa_filters):
        self.flags(group='filter_scheduler', enabled_filters=(
            numa_hosts.NUMA_FILTERS if numa_filters else numa_hosts.NUMA_FILTERS[:-2]))
        rows = self._rows(hosts)
        row = numa_hosts.scheduler(self.conf, rows)
        ref = numa_hosts.scheduler(self.conf, rows, filter_scheduler.ReferencePipeline)
        for index, request in enumerate(requests):
            original, uuid_list = self._spec(request, index)
            before = numa_hosts.pictures(row, times=False)
            specs = [original.obj_clone(), original.obj_clone()]
            oracle = self._nova_states(row, original)
            decided = [self._run(fs, spec, uuid_list, index)
                       for fs, spec in zip((row, ref), specs)]
            self.assertEqual(_comparable(decided[0]), _comparable(decided[1]),
                             (index, request))
            after = numa_hosts.pictures(row, times=False)
            self.assertEqual(after, numa_hosts.pictures(ref, times=False), (index, request))
            if decided[0] is None:
                self.assertEqual(before, after, (index, request))
                continue
            expected, nova_spec = oracle(decided[0])
            self.assertEqual(expected, after, (index, request))
            self.assertEqual(_topology(nova_spec), _topology(specs[0]), (index, request))
            self.assertEqual(_topology(specs[0]), _topology(specs[1]), (index, request))

    def _nova_states(self, fs, original):
        """Nova's rule, from the states as they are now, once the decisions are known."""
        frozen = {key[0]: NovaHost(state)
                  for key, state in fs.host_manager.host_state_map.items()}

        def oracle(decisions):
            spec = original.obj_clone()
            nova = {host: copy.deepcopy(novahost) for host, novahost in frozen.items()}
            for host, limits in decisions:
                nova[host].consume(spec, limits)
            return [nova[host].picture(host) for host in sorted(nova)], spec
        return oracle
