"""PCIWeigher: 100 - min(free devices, 99), list-bounded, whatever the request."""
import types

from oslo_serialization import jsonutils

from minisched.scheduler.weights import pci
from tests.unit.scheduler.weights import helpers

FS = 'filter_scheduler'


def pools(*counts):
    return [{'vendor_id': '8086', 'product_id': '1520', 'count': c} for c in counts]


CASES = [
    ('hosts without devices win; fewer free devices beat more', {},
     [{'pci_stats': pools(2, 3)}, {'pci_stats': None}, {'pci_stats': pools(1)}],
     [('host2', 1.0), ('host3', 0.8), ('host1', 0.0)]),
    ('more than 99 free devices all weigh alike', {},
     [{'pci_stats': pools(150)}, {'pci_stats': pools(99)}, {'pci_stats': pools(0)}],
     [('host3', 1.0), ('host1', 0.0), ('host2', 0.0)]),
    ('no host has devices: all 0 (list-bounded)', {},
     [{}, {'pci_stats': []}], [('host1', 0.0), ('host2', 0.0)]),
    ('multiplier scales', {FS: {'pci_weight_multiplier': 3.0}},
     [{'pci_stats': pools(4)}, {}], [('host2', 3.0), ('host1', 0.0)]),
    ('pools as JSON text or a PciDeviceStats-like object', {},
     [{'pci_stats': jsonutils.dumps(pools(1))},
      {'pci_stats': types.SimpleNamespace(pools=pools(3))}, {}],
     [('host3', 1.0), ('host1', 0.6666666666666666), ('host2', 0.0)]),
]


class TestPCIWeigher(helpers.WeigherTestCase):
    def test_cases(self):
        self.check_cases([pci.PCIWeigher], CASES)

    def test_raw_values(self):
        weigher = pci.PCIWeigher(self.conf)
        for stats, expected in ((None, 100), (pools(1), 99), (pools(60, 60), 1),
                                (pools(98), 2), (pools(99), 1)):
            with self.subTest(stats=stats):
                host = self.hosts({'pci_stats': stats})[0]
                self.assertEqual(expected, weigher._weigh_object(host, None))
