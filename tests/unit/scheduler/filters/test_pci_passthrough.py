"""PciPassthroughFilter: the host's device pools must support the request; rows agree."""
import random

import numpy as np

from minisched.scheduler import filters
from minisched.scheduler.filters import numa_topology
from minisched.scheduler.filters import pci_passthrough
from minisched.scheduler import host_state
from tests.unit import base
from tests.unit import fakes

ALIASES = ['{"name": "nic", "vendor_id": "8086", "product_id": "1520"}',
           '{"name": "gpu", "vendor_id": "10de", "product_id": "1eb8"}',
           '{"name": "gpu-near", "vendor_id": "10de", "product_id": "1eb8", '
           '"numa_policy": "required"}',
           '{"name": "gpu-any", "vendor_id": "10de", "product_id": "1eb8", '
           '"numa_policy": "preferred"}']


class TestPciPassthroughFilter(base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(group='pci', alias=ALIASES)
        self.filt = pci_passthrough.PciPassthroughFilter(self.conf)

    def _spec(self, alias, **kw):
        extra = {'pci_passthrough:alias': alias} if alias else {}
        extra.update(kw.pop('extra_specs', {}))
        return fakes.fake_numa_spec(extra, conf=self.conf, **kw)

    def test_request_without_devices_passes_every_host(self):
        spec = self._spec(None)
        self.assertTrue(self.filt.is_noop(spec))
        self.assertTrue(self.filt.host_passes(fakes.fake_host_state(pci_stats=None), spec))

    def test_host_needs_enough_matching_devices(self):
        host = fakes.fake_host_state(pci_stats=fakes.fake_pci_stats(
            None, ('8086', '1520', 0, 2), ('10de', '1eb8', 1, 1)))
        self.assertTrue(self.filt.host_passes(host, self._spec('nic:2')))
        self.assertTrue(self.filt.host_passes(host, self._spec('nic:1,gpu:1')))
        self.assertFalse(self.filt.host_passes(host, self._spec('nic:3')))
        self.assertFalse(self.filt.host_passes(host, self._spec('gpu:2')))
        self.assertFalse(self.filt.host_passes(fakes.fake_host_state(pci_stats=None),
                                               self._spec('nic:1')))

    def test_required_numa_policy_keeps_the_instance_on_the_device_s_cell(self):
        topology = fakes.fake_numa_topology(nodes=2, cpus_per_node=4)
        spec = self._spec('gpu-near:1', vcpus=4, memory_mb=1024,
                          extra_specs={'hw:numa_nodes': '1', 'hw:cpu_policy': 'dedicated'})
        numa_filter = numa_topology.NUMATopologyFilter(self.conf)
        host = fakes.fake_host_state(numa_topology=topology, pci_stats=fakes.fake_pci_stats(
            topology, ('10de', '1eb8', 1, 1)))
        self.assertTrue(self.filt.host_passes(host, spec))
        self.assertTrue(numa_filter.host_passes(host, spec))
        # The device's cell full of pinned CPUs: cell 0 is free, but the policy forbids it.
        used = topology.obj_clone()
        used.cells[1].pinned_cpus = {4, 5, 6, 7}
        host = fakes.fake_host_state(numa_topology=used, pci_stats=fakes.fake_pci_stats(
            used, ('10de', '1eb8', 1, 1)))
        self.assertTrue(self.filt.host_passes(host, spec))
        self.assertFalse(numa_filter.host_passes(host, spec))
        for alias, passes in (('gpu:1', False), ('gpu-any:1', True)):  # legacy, preferred
            other = self._spec(alias, vcpus=4, memory_mb=1024,
                               extra_specs={'hw:numa_nodes': '1', 'hw:cpu_policy': 'dedicated'})
            self.assertEqual(passes, numa_filter.host_passes(host, other), alias)


class TestRows(base.TestCase):

    def test_rows_answer_as_hosts_on_random_clusters(self):
        self.flags(group='pci', alias=ALIASES)
        rng = random.Random(7)
        flt = pci_passthrough.PciPassthroughFilter(self.conf)
        seen = set()
        for _ in range(80):
            table = host_state.HostStateTable(capacity=4)
            for i in range(rng.randint(1, 12)):
                pools = [(rng.choice(['8086', '10de']), rng.choice(['1520', '1eb8']),
                          rng.choice([None, 0, 1]), rng.randint(0, 3))
                         for _ in range(rng.randint(0, 3))]
                stats = rng.choice([None, fakes.fake_pci_stats(None, *pools)])
                fakes.fake_host_state('h%d' % i, table=table, pci_stats=stats)
            alias = rng.choice([None, 'nic:1', 'gpu:2', 'nic:1,gpu:1', 'nic:3'])
            extra = {'pci_passthrough:alias': alias} if alias else {}
            spec = fakes.fake_numa_spec(extra, conf=self.conf)
            rows = table.rows()
            rng.shuffle(rows)
            expected = [flt.host_passes(table.states[row], spec) for row in rows]
            if flt.is_noop(spec):
                self.assertTrue(all(expected))
                continue
            mask = flt.filter_rows(filters.RowView(table, rows), spec)
            np.testing.assert_array_equal(np.array(expected, dtype=bool), mask)
            seen.update(expected)
        self.assertEqual({True, False}, seen)
