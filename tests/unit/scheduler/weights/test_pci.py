"""PCIWeigher: 100 - min(free devices, 99), list-bounded, whatever the request."""
from minisched.scheduler.weights import pci
from tests.unit import fakes
from tests.unit.scheduler.weights import helpers

FS = 'filter_scheduler'


def pools(*counts):
    """A host's PciDeviceStats with pools of these device counts."""
    return fakes.fake_pci_stats(None, *[('8086', '%04x' % i, None, count)
                                        for i, count in enumerate(counts)])


CASES = [
    ('hosts without devices win; fewer free devices beat more', {},
     [{'pci_stats': pools(2, 3)}, {'pci_stats': None}, {'pci_stats': pools(1)}],
     [('host2', 1.0), ('host3', 0.8), ('host1', 0.0)]),
    ('more than 99 free devices all weigh alike', {},
     [{'pci_stats': pools(150)}, {'pci_stats': pools(99)}, {'pci_stats': pools(0)}],
     [('host3', 1.0), ('host1', 0.0), ('host2', 0.0)]),
    ('no host has devices: all 0 (list-bounded)', {},
     [{}, {'pci_stats': pools()}], [('host1', 0.0), ('host2', 0.0)]),
    ('multiplier scales', {FS: {'pci_weight_multiplier': 3.0}},
     [{'pci_stats': pools(4)}, {}], [('host2', 3.0), ('host1', 0.0)]),
    ('pools emptied by consumption count as no device', {},
     [{'pci_stats': pools(0, 0)}, {'pci_stats': pools(2)}, {}],
     [('host1', 1.0), ('host3', 1.0), ('host2', 0.0)]),
]


class TestPCIWeigher(helpers.WeigherTestCase):
    def test_cases(self):
        self.check_cases([pci.PCIWeigher], CASES)

    def test_raw_values(self):
        weigher = pci.PCIWeigher(self.conf)
        for counts, expected in ((None, 100), ((1,), 99), ((60, 60), 1), ((98,), 2),
                                 ((99,), 1)):
            with self.subTest(counts=counts):
                host = self.hosts({'pci_stats': pools(*counts) if counts else None})[0]
                self.assertEqual(expected, weigher._weigh_object(host, None))
