"""The FilterScheduler on the Placement path claims, for each host, the first allocation
candidate its filters left (Nova 34's ``host.allocation_candidates[0]``), and both
pipelines decide, claim and consume the same.

The Placement client here records the claims it is asked for and accepts them: what is under
test is which allocation request the scheduler sends (the real Placement round trip is in
tests/functional/test_placement_scheduling.py).
"""
import random

from oslo_serialization import jsonutils
from oslo_utils.fixture import uuidsentinel as uuids

from minisched.scheduler import filter_scheduler
from minisched.scheduler import filters
from tests.unit import base
from tests.unit import fakes
from tests.unit.scheduler import numa_hosts

HOSTS = ['h0', 'h1', 'h2']


class RecordingPlacement:
    """Accepts every claim and records it (``[(instance uuid, allocation request)]``)."""

    def __init__(self):
        self.claims = []

    def claim_resources(self, context, consumer_uuid, alloc_request, project_id, user_id,
                        allocation_request_version, consumer_generation=None):
        self.claims.append((consumer_uuid, alloc_request))
        return True

    def delete_allocation_for_instance(self, context, uuid, consumer_type='instance',
                                       force=False):
        return True


class TestPlacementCandidates(base.TestCase):

    def setUp(self):
        super().setUp()
        self.ctxt = numa_hosts.set_up(self)

    def _scheduler(self, pipeline):
        rows = []
        for index, name in enumerate(HOSTS, 1):
            topology = fakes.fake_numa_topology(nodes=2, cpus_per_node=4)
            rows.append(numa_hosts.node_row(index, name, topology,
                                            [('8086', '1520', 0, 1), ('8086', '1520', 1, 1)]))
        fs = numa_hosts.scheduler(self.conf, rows, pipeline)
        for state in fs.host_manager.host_state_map.values():
            # Each pool the devices of one provider, as Nova 34 reports them to Placement.
            for pool in state.pci_stats.pools:
                pool['rp_uuid'] = '%s-nic%d' % (state.host, pool['numa_node'])
        fs._placement_client = RecordingPlacement()
        return fs

    def _candidates(self, fs, spec):
        """Per host: a candidate naming a provider it has no devices of, then one per NIC."""
        group = '%s-0' % spec.pci_requests.requests[0].request_id
        by_rp_uuid = {}
        for state in fs.host_manager.host_state_map.values():
            by_rp_uuid[state.uuid] = [
                {'allocations': {state.uuid: {'resources': {'VCPU': spec.vcpus}}},
                 'mappings': {'': [state.uuid], group: [rp_uuid]}}
                for rp_uuid in ('gone', '%s-nic0' % state.host, '%s-nic1' % state.host)]
        return by_rp_uuid, {uuid: {} for uuid in by_rp_uuid}

    def test_claims_take_the_candidates_the_filters_left(self):
        results = []
        for pipeline in (filter_scheduler.RowPipeline, filter_scheduler.ReferencePipeline):
            fs = self._scheduler(pipeline)
            states = {state.host: state for state in fs.host_manager.host_state_map.values()}
            # Pinned to one NUMA node with its NIC there: each host's cell 1 is full, so
            # only the candidate of the NIC on cell 0 fits.
            for state in states.values():
                topology = state.numa_topology.obj_clone()
                topology.cells[1].pinned_cpus = {4, 5, 6, 7}
                state.numa_topology = topology
            spec = numa_hosts.numa_spec(self.conf, {
                'hw:cpu_policy': 'dedicated', 'hw:numa_nodes': '1',
                'pci_passthrough:alias': 'nic-near:1'}, vcpus=2, num_instances=2)
            by_rp_uuid, summaries = self._candidates(fs, spec)
            random.seed(3)
            selections = fs.select_destinations(
                self.ctxt, spec, [uuids.i0, uuids.i1], by_rp_uuid, summaries, '1.36',
                return_alternates=True)
            self.assertFalse(hasattr(spec, filters.REQUEST_CANDIDATES))
            claims = fs.placement_client.claims
            self.assertEqual([uuids.i0, uuids.i1], [uuid for uuid, _req in claims])
            for (_uuid, alloc_req), selection in zip(claims, selections):
                chosen = selection[0]
                group = [rps for key, rps in alloc_req['mappings'].items() if key][0]
                self.assertEqual(['%s-nic0' % chosen.service_host], group)
                self.assertEqual(alloc_req, jsonutils.loads(chosen.allocation_request))
                for alternate in selection[1:]:
                    alt_req = jsonutils.loads(alternate.allocation_request)
                    self.assertEqual(by_rp_uuid[alternate.compute_node_uuid][1], alt_req)
            # The NIC of each chosen host's cell 0 is taken: the claimed provider's pool.
            for selection in selections:
                pools = {pool['rp_uuid']: pool['count']
                         for pool in states[selection[0].service_host].pci_stats.pools}
                self.assertEqual(0, pools.get('%s-nic0' % selection[0].service_host, 0))
            request_id = spec.pci_requests.requests[0].request_id  # each spec its own
            results.append([[(sel.service_host,
                              sel.allocation_request.replace(request_id, 'request'))
                             for sel in selection] for selection in selections])
        self.assertEqual(results[0], results[1])
