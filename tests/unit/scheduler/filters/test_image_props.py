"""ImagePropertiesFilter: arch / hypervisor type / VM mode / version against the host."""
import numpy as np

from minisched.scheduler import filters
from minisched.scheduler import host_state as host_state_mod
from minisched.scheduler.filters import image_props
from tests.unit import base, fakes

# (image properties, passes) against a host supporting x86_64/kvm/hvm and i686/qemu/hvm,
# hypervisor_version 6000000 ("6.0.0")
CASES = [
    ({}, True),
    ({'hw_architecture': 'x86_64'}, True),
    ({'architecture': 'amd64'}, True),                         # legacy name, canonicalised
    ({'hw_architecture': 'aarch64'}, False),
    ({'img_hv_type': 'kvm'}, True),
    ({'img_hv_type': 'QEMU'}, True),
    ({'img_hv_type': 'xen'}, False),
    ({'hw_vm_mode': 'hv'}, True),                              # 'hv' is hvm
    ({'hw_vm_mode': 'xen'}, False),
    ({'hw_architecture': 'x86_64', 'img_hv_type': 'kvm', 'hw_vm_mode': 'hvm'}, True),
    ({'hw_architecture': 'i686', 'img_hv_type': 'kvm'}, False),   # one entry must hold all
    ({'hw_architecture': 'i686', 'img_hv_type': 'qemu'}, True),
    ({'img_hv_type': 'kvm', 'img_hv_requested_version': '>= 6.0'}, True),
    ({'img_hv_type': 'kvm', 'img_hv_requested_version': '> 6.0'}, False),
    ({'img_hv_type': 'kvm', 'img_hv_requested_version': '>= 5.0, < 7.0'}, True),
    ({'img_hv_requested_version': '< 1.0'}, True),             # version alone: not checked
]


def _host(**kw):
    values = dict(supported_instances=[['x86_64', 'kvm', 'hvm'], ['i686', 'qemu', 'hvm']],
                  hypervisor_version=6000000)
    values.update(kw)
    return fakes.fake_host_state(**values)


class TestImagePropertiesFilter(base.TestCase):
    def test_image_table(self):
        flt = image_props.ImagePropertiesFilter(self.conf)
        for props, passes in CASES:
            with self.subTest(props=props):
                self.assertIs(passes, flt.host_passes(_host(), fakes.fake_spec(image_props=props)))

    def test_host_without_supported_instances_fails_when_props_set(self):
        flt = image_props.ImagePropertiesFilter(self.conf)
        spec = fakes.fake_spec(image_props={'img_hv_type': 'kvm'})
        self.assertFalse(flt.host_passes(_host(supported_instances=[]), spec))
        self.assertTrue(flt.host_passes(_host(supported_instances=[]), fakes.fake_spec()))

    def test_default_architecture(self):
        self.flags(group='filter_scheduler', image_properties_default_architecture='aarch64')
        flt = image_props.ImagePropertiesFilter(self.conf)
        self.assertFalse(flt.host_passes(_host(), fakes.fake_spec()))
        self.assertFalse(flt.is_noop(fakes.fake_spec()))
        spec = fakes.fake_spec(image_props={'hw_architecture': 'x86_64'})
        self.assertTrue(flt.host_passes(_host(), spec))

    def test_version_skipped_without_hypervisor_version(self):
        flt = image_props.ImagePropertiesFilter(self.conf)
        spec = fakes.fake_spec(image_props={'img_hv_type': 'kvm',
                                            'img_hv_requested_version': '> 99.0'})
        self.assertTrue(flt.host_passes(_host(hypervisor_version=None), spec))
        self.assertTrue(flt.host_passes(_host(hypervisor_version=0), spec))

    def test_bad_version_requirement_is_refused_by_the_image_like_nova(self):
        # img_hv_requested_version is a VersionPredicate field: a request cannot carry a
        # requirement the filter could not read.
        for requirement in ('6.0', '>= x'):
            self.assertRaises(ValueError, fakes.fake_spec,
                              image_props={'img_hv_type': 'kvm',
                                           'img_hv_requested_version': requirement})

    def test_versions_compare_as_pep440(self):
        # hypervisor_version 1 is "1", which HEAD's VersionPredicate reads as 1.0.0.
        flt = image_props.ImagePropertiesFilter(self.conf)
        for requirement, expected in [('>= 1.0', True), ('< 7', True), ('> 1', False)]:
            with self.subTest(requirement=requirement):
                spec = fakes.fake_spec(image_props={'img_hv_type': 'kvm',
                                                    'img_hv_requested_version': requirement})
                self.assertIs(expected, flt.host_passes(_host(hypervisor_version=1), spec))

    def test_noop_and_flags(self):
        flt = image_props.ImagePropertiesFilter(self.conf)
        self.assertTrue(flt.is_noop(fakes.fake_spec()))
        self.assertTrue(flt.is_noop(fakes.fake_spec(image=None)))
        self.assertFalse(flt.is_noop(fakes.fake_spec(image_props={'hw_vm_mode': 'hvm'})))
        self.assertTrue(flt.run_filter_once_per_request)
        self.assertTrue(flt.RUN_ON_REBUILD)


class TestMaxPhysAddrBits(base.TestCase):
    """HEAD: the host's cpu_info maxphysaddr bits must reach the image's hw_maxphysaddr_bits."""

    PROPS = {'hw_architecture': 'x86_64', 'hw_maxphysaddr_bits': 42}

    def _passes(self, cpu_info, props=None):
        flt = image_props.ImagePropertiesFilter(self.conf)
        spec = fakes.fake_spec(image_props=props or self.PROPS)
        return flt.host_passes(_host(cpu_info=cpu_info), spec)

    def test_host_with_fewer_bits_fails(self):
        self.assertFalse(self._passes({'maxphysaddr': {'mode': 'emulate', 'bits': 20}}))

    def test_host_with_as_many_bits_or_more_passes(self):
        self.assertTrue(self._passes({'maxphysaddr': {'mode': 'emulate', 'bits': 42}}))
        self.assertTrue(self._passes({'maxphysaddr': {'mode': 'passthrough', 'bits': 46}}))

    def test_cpu_info_as_reported_json_string_is_read(self):
        # A compute node reports cpu_info as JSON text: decoded here (Nova reads a dict).
        self.assertFalse(self._passes('{"maxphysaddr": {"bits": 39}}'))
        self.assertTrue(self._passes('{"maxphysaddr": {"bits": 46}}'))

    def test_unknown_bits_pass(self):
        for cpu_info in (None, '', 'not json', '{}', {}, {'maxphysaddr': {}},
                         {'maxphysaddr': {'mode': 'emulate'}}, {'maxphysaddr': None}):
            with self.subTest(cpu_info=cpu_info):
                self.assertTrue(self._passes(cpu_info))

    def test_only_checked_with_the_other_properties(self):
        # As in Nova: an image with no architecture, hypervisor type or VM mode passes first.
        self.assertTrue(self._passes({'maxphysaddr': {'bits': 20}},
                                     props={'hw_maxphysaddr_bits': 42}))
        # ...and a host whose supported instances do not fit fails whatever its bits.
        self.assertFalse(self._passes({'maxphysaddr': {'bits': 46}},
                                      props={'hw_architecture': 'aarch64',
                                             'hw_maxphysaddr_bits': 42}))

    def test_rows_agree_with_hosts(self):
        flt = image_props.ImagePropertiesFilter(self.conf)
        table = host_state_mod.HostStateTable(capacity=1)
        hosts = [_host(host='h%d' % i, table=table, cpu_info=cpu_info)
                 for i, cpu_info in enumerate(['{"maxphysaddr": {"bits": 20}}', None,
                                               {'maxphysaddr': {'bits': 48}}])]
        spec = fakes.fake_spec(image_props=self.PROPS)
        view = filters.RowView(table, table.rows())
        mask = flt.filter_rows(view, spec)
        if mask is None:  # per host, as the handler then asks
            mask = [flt.host_passes(state, spec) for state in view.states()]
        np.testing.assert_array_equal([False, True, True], mask)
        self.assertEqual([False, True, True], [flt.host_passes(h, spec) for h in hosts])


class TestImagePropertiesRows(base.TestCase):
    def test_rows_follow_replaced_supported_instances(self):
        flt = image_props.ImagePropertiesFilter(self.conf)
        table = host_state_mod.HostStateTable(capacity=1)
        hosts = [fakes.fake_host_state('h%d' % i, table=table, hypervisor_version=version,
                                       supported_instances=supported)
                 for i, (supported, version) in enumerate([
                     ([['x86_64', 'kvm', 'hvm']], 6000000), ([['x86_64', 'kvm', 'hvm']], 5000),
                     ([['aarch64', 'kvm', 'hvm']], 6000000), (None, None), ([], 6000000)])]
        spec = fakes.fake_spec(image_props={'hw_architecture': 'x86_64',
                                            'img_hv_requested_version': '>= 6.0'})
        view = filters.RowView(table, table.rows()[::-1])
        np.testing.assert_array_equal([False, False, False, False, True],
                                      flt.filter_rows(view, spec))
        # Host states get new lists on update; the cached classes must follow.
        hosts[0].supported_instances = [['aarch64', 'qemu', 'hvm']]
        hosts[2].supported_instances = [['x86_64', 'qemu', 'hvm']]
        hosts[4].supported_instances = [['x86_64', 'qemu', 'hvm']]
        expected = [flt.host_passes(hosts[row], spec) for row in view.rows]
        self.assertEqual([True, False, True, False, False], expected)
        np.testing.assert_array_equal(expected, flt.filter_rows(view, spec))
