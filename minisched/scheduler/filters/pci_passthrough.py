"""Drop hosts that do not have the PCI devices the request asks for.

Nova's PciPassthroughFilter: a request without PCI requests passes; otherwise the host's
device pools (``host_state.pci_stats``, a PciDeviceStats) must support every request
(vendor/product and tags, count, NUMA affinity policy). On the Placement path it must for at
least one of the host's allocation candidates, with that candidate's provider mapping (the
devices Nova 34 tracks in Placement come from the providers it names), and the candidates
for which it does not are dropped from ``host_state.allocation_candidates``.
"""
import logging

import numpy as np

from minisched.scheduler import filters
from minisched.scheduler import numa_rules

LOG = logging.getLogger(__name__)


def _requests(spec_obj):
    pci_requests = spec_obj.pci_requests if 'pci_requests' in spec_obj else None
    return pci_requests.requests if pci_requests else None


class PciPassthroughFilter(filters.BaseHostFilter, filters.CandidateFilterMixin):
    """Passes hosts whose PCI device pools can satisfy the request's PCI requests."""

    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        requests = _requests(spec_obj)
        if not requests:
            return True
        pci_stats = host_state.pci_stats
        if not pci_stats or not self.passes_candidates(
                host_state, spec_obj, lambda mapping: pci_stats.support_requests(
                    requests, provider_mapping=mapping)):
            LOG.debug("%(host_state)s doesn't have the required PCI devices (%(requests)s)",
                      {'host_state': host_state, 'requests': requests})
            return False
        return True

    def is_noop(self, spec_obj):
        return not _requests(spec_obj)

    def filter_rows(self, view, spec_obj):
        requests = _requests(spec_obj)
        if not requests:
            return np.ones(len(view), dtype=bool)
        if any(request.count < 1 for request in requests):
            return None  # a request for no device: let every host answer for itself
        # A host without free devices has none to give (for a request of one or more); the
        # others are decided from their devices per pool kind (numa_rules), or asked, as are
        # those whose allocation candidates' mappings matter (decided per candidate).
        columns, rows = view.table.columns, view.rows
        states = view.table.states
        mask = np.zeros(len(view), dtype=bool)
        asked, none_left, same = filters.candidate_kinds(view, spec_obj, requests)
        positions = np.flatnonzero(((columns['pci_kinds_known'][rows] == 0) |
                                    (columns['pci_free'][rows] > 0)) & ~asked & ~none_left)
        if len(positions):
            decision = numa_rules.pci_decision(view.table, rows[positions], requests)
            mask[positions] = decision.passes & ~decision.open
            asked[positions[decision.open]] = True
        for pos in np.flatnonzero(asked).tolist():
            mask[pos] = self.host_passes(states[rows[pos]], spec_obj)
        # Decided once for all their candidates: a host with devices that fails keeps none.
        for pos in np.flatnonzero(same & ~asked & ~mask).tolist():
            state = states[rows[pos]]
            if state.pci_stats:
                self.keep_candidates(state, spec_obj, [])
        return mask
