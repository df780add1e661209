"""[pci] alias parsing and the PCI requests of a flavor's pci_passthrough:alias."""
import json

from oslo_utils import uuidutils

from minisched import exception
from minisched.objects import flavor as flavor_obj
from minisched.pci import request
from tests.unit import base

QAT = {'name': 'QuickAssist', 'vendor_id': '8086', 'product_id': '0443',
       'device_type': 'type-PCI'}
GPU = {'name': 'gpu', 'vendor_id': '10de', 'product_id': '1eb8', 'device_type': 'type-PF',
       'numa_policy': 'required'}


def _flavor(alias_value=None):
    specs = {} if alias_value is None else {'pci_passthrough:alias': alias_value}
    return flavor_obj.Flavor(name='f1', extra_specs=specs)


class TestAliases(base.TestCase):

    def _aliases(self, *entries):
        self.flags(group='pci', alias=[e if isinstance(e, str) else json.dumps(e)
                                       for e in entries])
        return request.get_alias_from_config(self.conf)

    def _reason(self, *entries):
        with self.assertRaises(exception.PciInvalidAlias) as ctx:
            self._aliases(*entries)
        return ctx.exception.format_message()

    def test_entries_become_policy_and_specs_by_name(self):
        aliases = self._aliases(QAT, GPU, dict(QAT, product_id='0442'))
        self.assertEqual(
            {'QuickAssist': ('legacy', [
                {'vendor_id': '8086', 'product_id': '0443', 'dev_type': 'type-PCI'},
                {'vendor_id': '8086', 'product_id': '0442', 'dev_type': 'type-PCI'}]),
             'gpu': ('required', [{'vendor_id': '10de', 'product_id': '1eb8',
                                   'dev_type': 'type-PF'}])},
            aliases)

    def test_live_migratable_is_normalised_and_must_be_boolean(self):
        aliases = self._aliases(dict(QAT, live_migratable='yes'))
        self.assertEqual('true', aliases['QuickAssist'][1][0]['live_migratable'])
        self.assertIn('Unrecognized value', self._reason(dict(QAT, live_migratable='maybe')))

    def test_schema_errors_are_worded_as_jsonschema_words_them(self):
        for entry, reason in (
                (dict(QAT, colour='red'),
                 "Additional properties are not allowed ('colour' was unexpected)"),
                ({'vendor_id': '8086'}, "'name' is a required property"),
                (dict(QAT, vendor_id='80860'),
                 "'80860' does not match '^([\\\\da-fA-F]{4})$'"),
                (dict(QAT, device_type='vdpa'),
                 "'vdpa' is not one of ['type-PCI', 'type-PF', 'type-VF']"),
                (dict(QAT, numa_policy=1), "1 is not of type 'string'"),
                (dict(QAT, name=''), "'' should be non-empty"),
                # Of several property errors, the one of the last property name wins.
                (dict(QAT, product_id='x', vendor_id='y'),
                 "'y' does not match '^([\\\\da-fA-F]{4})$'")):
            with self.subTest(entry=entry):
                self.assertEqual('Invalid PCI alias definition: ' + reason,
                                 self._reason(entry))

    def test_invalid_json_is_an_invalid_alias(self):
        self.assertIn('Invalid PCI alias definition', self._reason('{"name": '))

    def test_alternatives_must_agree_on_policy_and_type(self):
        self.assertIn("NUMA policy mismatch for alias 'gpu'",
                      self._reason(GPU, dict(GPU, numa_policy='legacy')))
        self.assertIn("Device type mismatch for alias 'gpu'",
                      self._reason(GPU, dict(GPU, device_type='type-VF')))

    def test_alternatives_without_device_type_are_refused(self):
        # Nova reads both entries' dev_type: a missing one fails with the key's name.
        entry = {'name': 'a', 'vendor_id': '8086', 'product_id': '0443'}
        self.assertEqual("Invalid PCI alias definition: 'dev_type'",
                         self._reason(entry, entry))

    def test_every_alias_needs_vendor_and_product_ids(self):
        self.assertEqual(
            'The PCI alias(es) a,b does not have vendor_id and product_id fields set.',
            self._reason({'name': 'b', 'vendor_id': '8086'},
                         {'name': 'a', 'product_id': '0443'}))

    def test_no_alias_option_means_no_aliases(self):
        self.assertEqual({}, self._aliases())


class TestRequestsFromFlavor(base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(group='pci', alias=[json.dumps(QAT), json.dumps(GPU)])

    def _requests(self, flavor, policy=None):
        return request.get_pci_requests_from_flavor(flavor, policy, conf=self.conf).requests

    def test_each_alias_item_becomes_one_request(self):
        requests = self._requests(_flavor('QuickAssist:2, gpu:1'))
        self.assertEqual([(2, 'QuickAssist', 'legacy'), (1, 'gpu', 'required')],
                         [(r.count, r.alias_name, r.numa_policy) for r in requests])
        self.assertEqual([{'vendor_id': '8086', 'product_id': '0443', 'dev_type': 'type-PCI'}],
                         requests[0].spec)
        self.assertTrue(all(uuidutils.is_uuid_like(r.request_id) for r in requests))
        self.assertNotEqual(requests[0].request_id, requests[1].request_id)

    def test_affinity_policy_overrides_the_aliases(self):
        requests = self._requests(_flavor('QuickAssist:1,gpu:1'), 'preferred')
        self.assertEqual(['preferred', 'preferred'], [r.numa_policy for r in requests])

    def test_flavor_without_the_extra_spec_asks_for_nothing(self):
        self.assertEqual([], self._requests(_flavor()))
        self.assertEqual([], self._requests(flavor_obj.Flavor(name='no-specs-loaded')))
        self.assertEqual([], self._requests({'extra_specs': {}}))

    def test_dict_flavors_work_too(self):
        requests = self._requests({'extra_specs': {'pci_passthrough:alias': 'gpu:3'}})
        self.assertEqual([3], [r.count for r in requests])

    def test_undefined_alias_is_refused(self):
        self.assertRaises(exception.PciRequestAliasNotDefined, self._requests,
                          _flavor('QuickAssist:1,nic:1'))

    def test_malformed_items_raise_value_error(self):
        for value in ('gpu', 'gpu:x', 'gpu:1:2'):
            with self.subTest(value=value):
                self.assertRaises(ValueError, self._requests, _flavor(value))

    def test_invalid_alias_option_fails_only_flavors_asking_for_devices(self):
        self.flags(group='pci', alias=['{"name": "bad"}'])
        self.assertEqual([], self._requests(_flavor()))
        self.assertRaises(exception.PciInvalidAlias, self._requests, _flavor('bad:1'))
