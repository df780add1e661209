"""NUMATopologyFilter: fit of the requested instance topology; rows answer as hosts do."""
import random

import numpy as np

from minisched.scheduler import filters
from minisched.scheduler.filters import numa_topology
from minisched.scheduler import host_state
from minisched.virt import hardware
from tests.unit import base
from tests.unit import fakes

PINNED_2 = {'hw:numa_nodes': '2', 'hw:cpu_policy': 'dedicated'}


class TestNUMATopologyFilter(base.TestCase):

    def setUp(self):
        super().setUp()
        self.filt = numa_topology.NUMATopologyFilter(self.conf)

    def _host(self, topology, **kw):
        return fakes.fake_host_state(numa_topology=topology, **kw)

    def test_request_without_topology_passes_any_host(self):
        spec = fakes.fake_numa_spec({})
        self.assertIsNone(spec.numa_topology)
        self.assertTrue(self.filt.is_noop(spec))
        self.assertTrue(self.filt.host_passes(self._host(None), spec))
        self.assertTrue(self.filt.host_passes(self._host(fakes.fake_numa_topology()), spec))

    def test_request_with_topology_fails_a_host_without_one(self):
        spec = fakes.fake_numa_spec({'hw:numa_nodes': '1'}, vcpus=2)
        self.assertFalse(self.filt.is_noop(spec))
        self.assertFalse(self.filt.host_passes(self._host(None), spec))

    def test_fitting_host_passes_and_gets_numa_limits_from_its_ratios(self):
        host = self._host(fakes.fake_numa_topology(), cpu_allocation_ratio=2.0,
                          ram_allocation_ratio=1.25)
        spec = fakes.fake_numa_spec(PINNED_2, vcpus=4, memory_mb=2048)
        self.assertTrue(self.filt.host_passes(host, spec))
        limits = host.limits['numa_topology']
        self.assertEqual((2.0, 1.25), (limits.cpu_allocation_ratio,
                                       limits.ram_allocation_ratio))
        self.assertFalse(any(cell.cpu_pinning for cell in spec.numa_topology.cells),
                         'the request topology must stay unpinned')

    def test_pinned_cpus_are_never_overcommitted(self):
        topology = fakes.fake_numa_topology(nodes=2, cpus_per_node=2)
        spec = fakes.fake_numa_spec(PINNED_2, vcpus=4, memory_mb=1024)
        self.assertTrue(self.filt.host_passes(self._host(topology), spec))
        fitted = hardware.numa_fit_instance_to_host(topology, spec.numa_topology.obj_clone())
        used = hardware.numa_usage_from_instance_numa(topology, fitted)
        host = self._host(used, cpu_allocation_ratio=16.0)
        self.assertFalse(self.filt.host_passes(host, spec))
        self.assertNotIn('numa_topology', host.limits)

    def test_large_pages_need_huge_pages_on_the_host(self):
        spec = fakes.fake_numa_spec({'hw:mem_page_size': 'large'}, vcpus=2, memory_mb=1024)
        self.assertFalse(self.filt.host_passes(self._host(fakes.fake_numa_topology()), spec))
        with_pages = fakes.fake_numa_topology(hugepages=[(2048, 512)])
        self.assertTrue(self.filt.host_passes(self._host(with_pages), spec))

    def test_require_thread_policy_needs_smt_siblings(self):
        spec = fakes.fake_numa_spec({'hw:cpu_policy': 'dedicated',
                                     'hw:cpu_thread_policy': 'require'}, vcpus=2)
        no_smt = fakes.fake_numa_topology(threads=1)
        smt = fakes.fake_numa_topology(threads=2)
        self.assertFalse(self.filt.host_passes(self._host(no_smt), spec))
        self.assertTrue(self.filt.host_passes(self._host(smt), spec))

    def test_shared_cpus_are_overcommitted_by_the_cpu_ratio(self):
        spec = fakes.fake_numa_spec({'hw:numa_nodes': '1'}, vcpus=4, memory_mb=512)
        topology = fakes.fake_numa_topology(nodes=1, cpus_per_node=4)
        topology.cells[0].cpu_usage = 6  # floating instances already there
        self.assertTrue(self.filt.host_passes(self._host(topology, cpu_allocation_ratio=4.0),
                                              spec))
        self.assertFalse(self.filt.host_passes(self._host(topology, cpu_allocation_ratio=2.0),
                                               spec))

    def test_an_instance_cell_never_has_more_cpus_than_its_host_cell(self):
        # As in Nova: the ratio overcommits usage, not the size of one instance cell.
        spec = fakes.fake_numa_spec({'hw:numa_nodes': '1'}, vcpus=8, memory_mb=512)
        topology = fakes.fake_numa_topology(nodes=1, cpus_per_node=4)
        self.assertFalse(self.filt.host_passes(self._host(topology, cpu_allocation_ratio=16.0),
                                               spec))


def _random_topology(rng):
    if rng.random() < 0.2:
        return None
    nodes = rng.choice([1, 2, 4])
    threads = rng.choice([1, 2])
    topology = fakes.fake_numa_topology(
        nodes=nodes, cpus_per_node=threads * rng.choice([1, 2, 4]), threads=threads,
        memory_mb_per_node=rng.choice([1024, 2048, 4096]),
        hugepages=rng.choice([(), [(2048, 256)]]))
    for _ in range(rng.randint(0, 3)):  # some usage: earlier pinned instances
        extra = dict(rng.choice(SPECS))
        spec = fakes.fake_numa_spec(extra, vcpus=rng.choice([2, 4]),
                                    memory_mb=rng.choice([256, 512]))
        if spec.numa_topology is None:
            continue
        fitted = hardware.numa_fit_instance_to_host(topology, spec.numa_topology)
        if fitted is not None:
            topology = hardware.numa_usage_from_instance_numa(topology, fitted)
    return topology


SPECS = [{}, {'hw:numa_nodes': '1'}, {'hw:numa_nodes': '2'}, PINNED_2,
         {'hw:cpu_policy': 'dedicated'},
         {'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'require'},
         {'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'isolate'},
         {'hw:mem_page_size': 'large'}, {'hw:mem_page_size': 'small', 'hw:numa_nodes': '2'}]


class TestRows(base.TestCase):
    """filter_rows gives host_passes' answers, and writes no limits."""

    def test_rows_answer_as_hosts_on_random_clusters(self):
        rng = random.Random(20261125)
        flt = numa_topology.NUMATopologyFilter(self.conf)
        fitted = set()  # answers seen for hosts with a topology and requests with one
        for _ in range(120):
            table = host_state.HostStateTable(capacity=4)
            # Hosts reporting the same text share one topology object (as parsed by the
            # host states), which the row form fits once: some share one here, some with
            # devices on their cells.
            shared = [_random_topology(rng) for _ in range(2)]
            states = [fakes.fake_host_state(
                'h%d' % i, table=table,
                numa_topology=rng.choice(shared) if rng.random() < 0.5 else
                _random_topology(rng),
                pci_stats=fakes.fake_pci_stats(None, ('8086', '1520', rng.choice([0, 1]), 2))
                if rng.random() < 0.3 else None,
                cpu_allocation_ratio=rng.choice([1.0, 4.0]),
                ram_allocation_ratio=rng.choice([1.0, 1.5]))
                for i in range(rng.randint(1, 10))]
            spec = fakes.fake_numa_spec(dict(rng.choice(SPECS)), vcpus=rng.choice([2, 4, 8]),
                                        memory_mb=rng.choice([256, 1024, 4096]))
            rows = table.rows()
            rng.shuffle(rows)
            mask = flt.filter_rows(filters.RowView(table, rows), spec)
            self.assertEqual({}, {k: v for s in states for k, v in s.limits.items()})
            expected = [flt.host_passes(table.states[row], spec) for row in rows]
            np.testing.assert_array_equal(np.array(expected, dtype=bool), mask)
            if flt.is_noop(spec):
                self.assertTrue(all(expected))
            elif spec.numa_topology:
                fitted.update(answer for row, answer in zip(rows, expected)
                              if table.states[row].numa_topology)
        self.assertEqual({True, False}, fitted)
