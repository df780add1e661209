"""Keep hosts with free PCI devices for the requests that need them.

Raw value ``100 - min(free PCI devices, 99)`` (free = sum of the counts of the host's
``pci_stats`` pools), bounds from the host list, whatever the request asks: hosts without PCI
devices win for requests without PCI, and PCI requests stack on the hosts with the fewest
free devices. Multiplier
``[filter_scheduler] pci_weight_multiplier`` (>= 0), overridable per aggregate with the
``pci_weight_multiplier`` metadata key.
"""
import numpy as np

from minisched.scheduler import weights

#: Beyond this many free devices there is no scarcity to protect: all such hosts weigh alike.
MAX_DEVS = 100


class PCIWeigher(weights.BaseHostWeigher):
    multiplier_name = 'pci_weight_multiplier'

    def _weigh_object(self, host_state, weight_properties):
        """Higher weights win: the fewer free devices, the higher."""
        pools = host_state.pci_stats.pools if host_state.pci_stats else []
        free = sum(pool['count'] for pool in pools) or 0
        return MAX_DEVS - min(free, MAX_DEVS - 1)

    def weigh_rows(self, view, weight_properties):
        # The free devices of every host are a column of the table (numa_columns).
        free = view.column('pci_free')
        if not free.any():
            return MAX_DEVS
        return (MAX_DEVS - np.minimum(free, MAX_DEVS - 1)).astype(np.float64)
