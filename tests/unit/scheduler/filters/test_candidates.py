"""NUMATopologyFilter and PciPassthroughFilter on the Placement path: a host passes while
one of its allocation candidates fits with that candidate's provider mapping, and those that
do not are dropped; the row form answers and narrows exactly as the per-host form."""
import random

import numpy as np

from minisched import objects
from minisched.pci import stats as pci_stats_mod
from minisched.scheduler import filters
from minisched.scheduler.filters import numa_topology
from minisched.scheduler.filters import pci_passthrough
from minisched.scheduler import host_state
from minisched.scheduler import placement_claims
from tests.unit import base
from tests.unit import fakes
from tests.unit.scheduler.filters import test_numa_topology
from tests.unit.scheduler.filters import test_pci_passthrough

ALIASES = test_pci_passthrough.ALIASES


def _pci_stats(topology, pools):
    """Device pools ``(vendor, product, numa_node, count, rp_uuid)``: each pool the devices
    of one resource provider, as Nova 34 reports PCI devices to Placement."""
    return pci_stats_mod.PciDeviceStats(topology, stats=objects.PciDevicePoolList(objects=[
        objects.PciDevicePool(vendor_id=vendor, product_id=product, numa_node=node,
                              count=count, tags={'dev_type': 'type-PCI', 'rp_uuid': rp_uuid})
        for vendor, product, node, count, rp_uuid in pools]))


def _candidate(rng, spec, host, count):
    """An allocation request for ``host``: its PCI request groups (``<request_id>-<n>``)
    mapped to providers of the host's pools, or to a provider it has no pool of; or, as
    when the devices are not in Placement, without PCI groups."""
    mappings = {'': [host]}
    requests = spec.pci_requests.requests if spec.pci_requests else []
    if rng.random() < 0.4:
        requests = []
    for request in requests:
        for index in range(request.count):
            mappings['%s-%d' % (request.request_id, index)] = [
                rng.choice(['%s-rp%d' % (host, n) for n in range(count)] + ['elsewhere'])]
    return {'allocations': {host: {'resources': {'VCPU': 1}}}, 'mappings': mappings}


class TestCandidates(base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(group='pci', alias=ALIASES)

    def _spec(self, extra_specs, **kw):
        return fakes.fake_numa_spec(extra_specs, conf=self.conf, **kw)

    def test_pci_devices_must_come_from_a_candidate_s_providers(self):
        flt = pci_passthrough.PciPassthroughFilter(self.conf)
        spec = self._spec({'pci_passthrough:alias': 'nic:1'})
        group = '%s-0' % spec.pci_requests.requests[0].request_id
        host = fakes.fake_host_state(pci_stats=_pci_stats(None, [
            ('8086', '1520', 0, 1, 'rp-nic'), ('10de', '1eb8', 0, 1, 'rp-gpu')]))
        on_gpu = {'mappings': {group: ['rp-gpu']}}
        on_nic = {'mappings': {group: ['rp-nic']}}
        host.allocation_candidates = [on_gpu, on_nic, on_gpu]
        self.assertTrue(flt.host_passes(host, spec))
        self.assertEqual([on_nic], host.allocation_candidates)
        host.allocation_candidates = [on_gpu]
        self.assertFalse(flt.host_passes(host, spec))
        self.assertEqual([], host.allocation_candidates)
        self.assertFalse(flt.host_passes(host, spec))  # none left: fails without a try
        host.allocation_candidates = None  # the path without Placement: any pool will do
        self.assertTrue(flt.host_passes(host, spec))

    def test_numa_fit_takes_the_devices_of_the_candidate_s_providers(self):
        topology = fakes.fake_numa_topology(nodes=2, cpus_per_node=4)
        flt = numa_topology.NUMATopologyFilter(self.conf)
        spec = self._spec({'pci_passthrough:alias': 'gpu-near:1', 'hw:numa_nodes': '1',
                           'hw:cpu_policy': 'dedicated'}, vcpus=4, memory_mb=1024)
        group = '%s-0' % spec.pci_requests.requests[0].request_id
        used = topology.obj_clone()
        used.cells[1].pinned_cpus = {4, 5, 6, 7}
        # Two GPUs, one per cell: only cell 0's can go with the instance's pinned CPUs.
        host = fakes.fake_host_state(numa_topology=used, pci_stats=_pci_stats(used, [
            ('10de', '1eb8', 0, 1, 'rp-gpu0'), ('10de', '1eb8', 1, 1, 'rp-gpu1')]))
        on_cell1 = {'mappings': {group: ['rp-gpu1']}}
        on_cell0 = {'mappings': {group: ['rp-gpu0']}}
        host.allocation_candidates = [on_cell1, on_cell0]
        self.assertTrue(flt.host_passes(host, spec))
        self.assertEqual([on_cell0], host.allocation_candidates)
        self.assertIn('numa_topology', host.limits)
        host.allocation_candidates = [on_cell1]
        host.limits = {}
        self.assertFalse(flt.host_passes(host, spec))
        self.assertEqual([], host.allocation_candidates)
        self.assertEqual({}, host.limits)

    def test_a_request_s_own_candidates_leave_the_host_state_alone(self):
        flt = pci_passthrough.PciPassthroughFilter(self.conf)
        spec = self._spec({'pci_passthrough:alias': 'nic:1'})
        group = '%s-0' % spec.pci_requests.requests[0].request_id
        host = fakes.fake_host_state(pci_stats=_pci_stats(None, [
            ('8086', '1520', 0, 1, 'rp-nic')]))
        wrong, right = {'mappings': {group: ['rp-x']}}, {'mappings': {group: ['rp-nic']}}
        candidates = placement_claims.Candidates({host.uuid: [wrong, right]})
        setattr(spec, filters.REQUEST_CANDIDATES, candidates)
        self.assertTrue(flt.host_passes(host, spec))
        self.assertEqual([right], candidates.get(host.uuid))
        self.assertIsNone(host.allocation_candidates)
        self.assertEqual([], candidates.get('another host'))  # offered nothing: fails
        other = fakes.fake_host_state('host2', pci_stats=host.pci_stats)
        self.assertFalse(flt.host_passes(other, spec))


class TestRows(base.TestCase):
    """On random clusters, filter_rows answers as host_passes and leaves every host the
    same candidates, whether the host states hold them or the request does."""

    def _cluster(self, rng, spec, table):
        states = []
        for i in range(rng.randint(1, 8)):
            name = 'h%d' % i
            topology = test_numa_topology._random_topology(rng)
            count = rng.randint(0, 3)
            pools = [(rng.choice(['8086', '10de']), rng.choice(['1520', '1eb8']),
                      rng.choice([None, 0, 1]) if topology else None, rng.randint(0, 2),
                      '%s-rp%d' % (name, n)) for n in range(count)]
            state = fakes.fake_host_state(
                name, table=table, numa_topology=topology,
                pci_stats=_pci_stats(topology, pools) if pools or rng.random() < 0.5
                else None,
                cpu_allocation_ratio=rng.choice([1.0, 4.0]))
            # None: offered nothing if the request holds the candidates, or (hosts holding
            # them) this host is decided as without Placement, from the columns.
            state.candidates = None if rng.random() < 0.3 else [
                _candidate(rng, spec, name, count)
                for _ in range(rng.choice([0, 1, 1, 1, 2, 3]))]
            states.append(state)
        return states

    def test_rows_answer_and_narrow_as_hosts(self):
        self.flags(group='pci', alias=ALIASES)
        rng = random.Random(20261128)
        flts = [numa_topology.NUMATopologyFilter(self.conf),
                pci_passthrough.PciPassthroughFilter(self.conf)]
        seen = set()
        for attempt in range(160):
            table = host_state.HostStateTable(capacity=4)
            extra = dict(rng.choice(test_numa_topology.SPECS))
            alias = rng.choice([None, 'nic:1', 'gpu:1', 'gpu-near:1', 'nic:1,gpu:1', 'nic:2'])
            if alias:
                extra['pci_passthrough:alias'] = alias
            spec = fakes.fake_numa_spec(extra, conf=self.conf, vcpus=rng.choice([2, 4]),
                                        memory_mb=rng.choice([256, 1024]))
            states = self._cluster(rng, spec, table)
            held_by_request = attempt % 2 == 0
            rows = table.rows()
            rng.shuffle(rows)
            for flt in flts:
                if flt.is_noop(spec):
                    continue
                answers = []
                for form in ('hosts', 'rows'):
                    left = self._offer(spec, states, held_by_request)
                    if form == 'rows':
                        mask = flt.filter_rows(filters.RowView(table, rows), spec)
                        if mask is None:
                            continue
                        answer = np.asarray(mask, dtype=bool).tolist()
                    else:
                        answer = [flt.host_passes(table.states[row], spec) for row in rows]
                    answers.append((answer, [left(table.states[row]) for row in rows]))
                    for state in states:
                        state.limits = {}
                if len(answers) == 2:
                    self.assertEqual(answers[0], answers[1], (flt.name, extra))
                seen.update(answers[0][0])
            if hasattr(spec, filters.REQUEST_CANDIDATES):
                delattr(spec, filters.REQUEST_CANDIDATES)
        self.assertEqual({True, False}, seen)

    @staticmethod
    def _offer(spec, states, held_by_request):
        """Give the hosts their candidates afresh; returns how to read what is left."""
        if held_by_request:
            candidates = placement_claims.Candidates(
                {state.uuid: state.candidates for state in states if state.candidates})
            setattr(spec, filters.REQUEST_CANDIDATES, candidates)
            return lambda state: candidates.get(state.uuid)
        for state in states:
            state.allocation_candidates = (None if state.candidates is None
                                           else list(state.candidates))
        return lambda state: state.allocation_candidates
