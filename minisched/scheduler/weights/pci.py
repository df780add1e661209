"""Keep hosts with free PCI devices for the requests that need them.

Raw value ``100 - min(free PCI devices, 99)`` (free = sum of the host's pool counts), bounds
from the host list, whatever the request asks: hosts without PCI devices win for requests
without PCI, and PCI requests stack on the hosts with the fewest free devices. Multiplier
``[filter_scheduler] pci_weight_multiplier`` (>= 0), overridable per aggregate with the
``pci_weight_multiplier`` metadata key.
"""
import numpy as np
from oslo_serialization import jsonutils

from minisched.scheduler import weights
from minisched.scheduler.weights import utils

#: Beyond this many free devices there is no scarcity to protect: all such hosts weigh alike.
MAX_DEVS = 100


def _pools(pci_stats):
    """Pool dicts of a host: a PciDeviceStats-like ``.pools``, a list, or its JSON text."""
    if not pci_stats:
        return []
    pools = getattr(pci_stats, 'pools', pci_stats)
    return jsonutils.loads(pools) if isinstance(pools, str) else pools


class PCIWeigher(weights.BaseHostWeigher):
    multiplier_name = 'pci_weight_multiplier'

    def _weigh_object(self, host_state, weight_properties):
        """Higher weights win: the fewer free devices, the higher."""
        free = sum(pool['count'] for pool in _pools(host_state.pci_stats)) or 0
        return MAX_DEVS - min(free, MAX_DEVS - 1)

    def weigh_rows(self, view, weight_properties):
        # Hosts without PCI pools all weigh MAX_DEVS; only the others are looked at.
        pooled = utils.states_with(view, 'pci_stats')
        if not pooled:
            return MAX_DEVS
        values = np.full(len(view), MAX_DEVS, dtype=np.float64)
        for pos, state in pooled:
            values[pos] = self._weigh_object(state, weight_properties)
        return values
