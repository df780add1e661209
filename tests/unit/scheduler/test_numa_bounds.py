"""The free-dedicated-CPU bound rules out only hosts the exact NUMA fit refuses."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minisched.scheduler import filters
from minisched.scheduler.filters import numa_topology
from minisched.scheduler import host_state
from minisched.scheduler import numa_bounds
from minisched.virt import hardware
from tests.unit import base
from tests.unit import fakes

host_st = st.fixed_dictionaries({
    'nodes': st.integers(1, 4),
    'cpus_per_node': st.sampled_from([2, 4, 6]),
    'threads': st.sampled_from([1, 2]),
    'pinned': st.lists(st.floats(0, 1), min_size=4, max_size=4),
})
extra_specs_st = st.fixed_dictionaries(
    {'hw:numa_nodes': st.sampled_from(['1', '2', '3', '4'])},
    optional={'hw:cpu_policy': st.sampled_from(['dedicated', 'shared']),
              'hw:cpu_thread_policy': st.sampled_from(['prefer', 'isolate', 'require']),
              'hw:emulator_threads_policy': st.just('isolate')})


def _host(spec, table):
    topology = fakes.fake_numa_topology(nodes=spec['nodes'],
                                        cpus_per_node=spec['cpus_per_node'],
                                        threads=spec['threads'])
    for cell, share in zip(topology.cells, spec['pinned']):
        free = sorted(cell.pcpuset)
        cell.pinned_cpus = set(free[:int(share * len(free))])
    return fakes.fake_host_state('h%d' % table.size, table=table, numa_topology=topology)


def _request(extra_specs, vcpus):
    try:
        spec = fakes.fake_numa_spec(dict(extra_specs), vcpus=vcpus, memory_mb=512 * vcpus)
    except Exception:  # an invalid combination (e.g. more nodes than vCPUs)
        return None
    return spec if spec.numa_topology is not None else None


class TestFreePcpuBound(base.TestCase):

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(hosts=st.lists(host_st, min_size=1, max_size=4), extra_specs=extra_specs_st,
           vcpus=st.integers(1, 12))
    def test_a_host_ruled_out_is_never_one_the_fit_accepts(self, hosts, extra_specs, vcpus):
        spec = _request(extra_specs, vcpus)
        if spec is None:
            return
        table = host_state.HostStateTable()
        states = [_host(host, table) for host in hosts]
        rows = np.asarray([state.row for state in states])
        possible = numa_bounds.may_fit(table, rows, spec.numa_topology)
        for state, may in zip(states, possible):
            fitted = hardware.numa_fit_instance_to_host(state.numa_topology,
                                                        spec.numa_topology)
            if fitted is not None:
                self.assertTrue(may, (state.numa_topology.cells, spec.numa_topology))
        # The filter's rows answer as its hosts do, bound or not.
        flt = numa_topology.NUMATopologyFilter(self.conf)
        mask = flt.filter_rows(filters.RowView(table, rows), spec)
        self.assertEqual([flt.host_passes(state, spec) for state in states], mask.tolist())

    def test_columns_follow_the_topology_freest_cell_first(self):
        table = host_state.HostStateTable()
        state = _host({'nodes': 3, 'cpus_per_node': 4, 'threads': 1,
                       'pinned': [0.5, 0.0, 1.0, 0.0]}, table)
        columns = [table.columns[name][state.row] for name in numa_bounds.FREE_PCPU_COLUMNS]
        self.assertEqual([4, 2, 0, 0], columns)
        state.numa_topology = None
        self.assertEqual([0, 0, 0, 0], [table.columns[name][state.row]
                                        for name in numa_bounds.FREE_PCPU_COLUMNS])

    def test_pinned_request_rules_out_hosts_short_of_free_cells(self):
        table = host_state.HostStateTable()
        full = _host({'nodes': 2, 'cpus_per_node': 4, 'threads': 1,
                      'pinned': [0.75, 0.0, 0.0, 0.0]}, table)  # cells: 1 and 4 free
        spec = fakes.fake_numa_spec({'hw:numa_nodes': '2', 'hw:cpu_policy': 'dedicated'},
                                    vcpus=4)
        self.assertEqual([False], numa_bounds.may_fit(table, np.asarray([full.row]),
                                                      spec.numa_topology).tolist())
        spec = fakes.fake_numa_spec({'hw:numa_nodes': '1', 'hw:cpu_policy': 'dedicated'},
                                    vcpus=4)
        self.assertEqual([True], numa_bounds.may_fit(table, np.asarray([full.row]),
                                                     spec.numa_topology).tolist())
