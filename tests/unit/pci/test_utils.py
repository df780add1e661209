"""Spec matching of pools and PCI address parsing."""
from minisched import exception
from minisched.pci import utils
from tests.unit import base


class TestPropMatch(base.TestCase):

    def test_every_key_of_one_spec_must_match(self):
        pool = {'vendor_id': '8086', 'product_id': '1520', 'physical_network': 'PhysNet1'}
        self.assertTrue(utils.pci_device_prop_match(pool, [{'vendor_id': '8086'}]))
        self.assertTrue(utils.pci_device_prop_match(
            pool, [{'vendor_id': '10de'}, {'physical_network': 'physnet1'}]))
        self.assertFalse(utils.pci_device_prop_match(
            pool, [{'vendor_id': '8086', 'product_id': '1521'}]))
        self.assertFalse(utils.pci_device_prop_match(pool, []))

    def test_missing_key_reads_as_none(self):
        self.assertTrue(utils.pci_device_prop_match({}, [{'numa_node': None}]))
        self.assertFalse(utils.pci_device_prop_match({'numa_node': 0}, [{'numa_node': None}]))

    def test_list_values_need_every_wanted_item(self):
        dev = {'capabilities_network': ['rx', 'tx', 'tso']}
        self.assertTrue(utils.pci_device_prop_match(dev, [{'capabilities_network': ['rx']}]))
        self.assertFalse(utils.pci_device_prop_match(
            dev, [{'capabilities_network': ['rx', 'gso']}]))


class TestAddresses(base.TestCase):

    def test_parse_address(self):
        self.assertEqual(('0000', '0a', '00', '1'), utils.parse_address('0000:0a:00.1'))
        self.assertRaises(exception.PciDeviceWrongAddressFormat, utils.parse_address,
                          '0a:00.1')

    def test_address_fields_round_trip(self):
        fields = utils.get_pci_address_fields('0000:0a:1f.7')
        self.assertEqual('0000:0a:1f.7', utils.get_pci_address(*fields))
        self.assertRaises(ValueError, utils.get_pci_address_fields, '0a:1f.7')

    def test_unknown_interface_has_no_address(self):
        self.assertEqual((None, False), utils.get_function_by_ifname('no-such-interface0'))
