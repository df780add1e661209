"""[pci] device_spec entries and the whitelist: which devices they admit, with which tags."""
from unittest import mock

from minisched.conf import pci as pci_conf
from minisched import exception
from minisched.pci import devspec
from minisched.pci import whitelist
from tests.unit import base
from tests.unit.pci import fakes


def _dev(address='0000:0a:00.1', vendor_id='8086', product_id='1520', parent_addr=None):
    return {'vendor_id': vendor_id, 'product_id': product_id, 'address': address,
            'parent_addr': parent_addr}


class TestDeviceSpec(base.TestCase):

    def _matches(self, spec, **dev):
        return devspec.PciDeviceSpec(dict(spec)).match(_dev(**dev))

    def test_missing_keys_match_anything(self):
        self.assertTrue(self._matches({}))
        self.assertTrue(self._matches({'vendor_id': '8086'}, product_id='ffff'))
        self.assertFalse(self._matches({'vendor_id': '10de'}))

    def test_ids_are_normalised_hex(self):
        self.assertTrue(self._matches({'vendor_id': ' 8086', 'product_id': '1520'}))
        spec = devspec.PciDeviceSpec({'vendor_id': 'ABC', 'product_id': '*'})
        self.assertEqual(('0abc', '*'), (spec.vendor_id, spec.product_id))

    def test_glob_addresses(self):
        for address, expected in (('*:0a:00.*', True), (':0a:00.', True), ('0a:00.1', True),
                                  ('0000:0a:00.1', True), ('*:0b:00.*', False),
                                  ('.2', False), ('00.1', True)):
            with self.subTest(address=address):
                self.assertEqual(expected, self._matches({'address': address}))

    def test_regex_addresses_match_from_the_start(self):
        spec = {'address': {'domain': '.*', 'bus': '0[a-b]', 'slot': '00',
                            'function': '[0-2]'}}
        self.assertTrue(self._matches(spec))
        self.assertFalse(self._matches(spec, address='0000:0c:00.1'))
        self.assertTrue(self._matches({'address': {'bus': '0'}}))

    def test_invalid_entries_are_refused(self):
        for spec, error in (
                ({'vendor_id': '808G'}, exception.PciConfigInvalidSpec),
                ({'product_id': '10000'}, exception.PciConfigInvalidSpec),
                ({'address': '0000:0a:00.8'}, exception.PciConfigInvalidSpec),
                ({'address': '0000:0a:20.0'}, exception.PciConfigInvalidSpec),
                ({'address': '1:2:3:4.5'}, exception.PciDeviceWrongAddressFormat),
                ({'address': {'bus': '('}}, exception.PciDeviceWrongAddressFormat),
                ({'address': 5}, exception.PciDeviceWrongAddressFormat),
                ({'address': '*:0a:00.*', 'devname': 'eth0'},
                 exception.PciDeviceInvalidDeviceName),
                ({'managed': 'perhaps'}, exception.PciConfigInvalidSpec),
                ({'one_time_use': 'yes'}, exception.PciConfigInvalidSpec)):
            with self.subTest(spec=spec):
                self.assertRaises(error, devspec.PciDeviceSpec, spec)

    def test_error_messages_name_the_property(self):
        with self.assertRaises(exception.PciConfigInvalidSpec) as ctx:
            devspec.PciDeviceSpec({'address': '0000:0a:00.8'})
        self.assertEqual('Invalid [pci]device_spec config: property func (8) is greater '
                         'than the maximum allowable value (7).',
                         ctx.exception.format_message())

    def test_other_keys_are_tags_with_booleans_normalised(self):
        spec = devspec.PciDeviceSpec({'vendor_id': '8086', 'physical_network': 'physnet1',
                                      'managed': 'no', 'live_migratable': 'Yes',
                                      'one_time_use': 'no'})
        self.assertEqual({'physical_network': 'physnet1', 'managed': 'false',
                          'live_migratable': 'true', 'one_time_use': 'false'},
                         spec.get_tags())
        dev = _dev()
        spec.enhanced_pci_device_with_spec_tags(dev)
        self.assertEqual(('false', 'true'), (dev['managed'], dev['live_migratable']))

    def test_unknown_devname_matches_nothing(self):
        self.assertFalse(self._matches({'devname': 'no-such-interface0'}))
        self.assertRaises(exception.PciDeviceRemoteManagedNotPresent, devspec.PciDeviceSpec,
                          {'devname': 'no-such-interface0', 'remote_managed': 'true'})

    def test_pf_address_also_matches_its_vfs(self):
        with mock.patch('minisched.pci.utils.is_physical_function', return_value=True):
            spec = devspec.PciDeviceSpec({'address': '0000:0a:00.0'})
        self.assertTrue(spec.match(_dev(address='0000:0a:00.3', parent_addr='0000:0a:00.0')))
        self.assertFalse(spec.match(_dev(address='0000:0b:00.3',
                                         parent_addr='0000:0b:00.0')))

    def test_device_address_out_of_range_raises_config_error(self):
        # Nova's behaviour: the hypervisor's address goes through the same parser.
        spec = devspec.PciDeviceSpec({'vendor_id': '10de'})
        self.assertRaises(exception.PciConfigInvalidSpec, spec.match,
                          _dev(address='10000:0a:00.0'))

    def test_match_pci_obj_uses_the_device_fields(self):
        device = fakes.devices(fakes.dev_dict('0000:0a:00.1'))[0]
        self.assertTrue(devspec.PciDeviceSpec({'address': '*:0a:*.*'}).match_pci_obj(device))


class TestWhitelist(base.TestCase):

    def test_first_matching_entry_wins(self):
        wl = whitelist.Whitelist(['{"vendor_id": "8086", "physical_network": "a"}',
                                  '[{"vendor_id": "10de"}, {"physical_network": "b"}]'])
        self.assertEqual({'physical_network': 'a'}, wl.device_assignable(_dev()).get_tags())
        self.assertEqual({'physical_network': 'b'},
                         wl.device_assignable(_dev(vendor_id='1234')).get_tags())
        self.assertEqual({}, wl.device_assignable(_dev(vendor_id='10de')).get_tags())

    def test_no_entry_admits_nothing(self):
        self.assertIsNone(whitelist.Whitelist().device_assignable(_dev()))
        self.assertIsNone(whitelist.Whitelist([]).device_assignable(_dev()))

    def test_invalid_entries_are_refused(self):
        for entry in ('{"vendor_id": ', '"a string"', '[1]'):
            with self.subTest(entry=entry):
                self.assertRaises(exception.PciConfigInvalidSpec, whitelist.Whitelist,
                                  [entry])

    def test_the_option_and_its_deprecated_name(self):
        self.flags(group='pci', device_spec=['{"vendor_id": "8086"}'])
        self.assertIsNotNone(whitelist.Whitelist(self.conf.pci.device_spec)
                             .device_assignable(_dev()))
        opt = [o for o in pci_conf.OPTS if o.dest == 'device_spec'][0]
        self.assertIn(('passthrough_whitelist', 'pci'),
                      [(d.name, d.group) for d in opt.deprecated_opts])
