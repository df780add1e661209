"""The GET /allocation_candidates query of a request, as Nova 34 builds it."""
import urllib.parse

from minisched.scheduler import request_filter
from minisched.scheduler import resource_request
from tests.unit import base
from tests.unit import fakes


def query(spec, **kwargs):
    request = resource_request.ResourceRequest.from_request_spec(spec, **kwargs)
    return request, urllib.parse.parse_qsl(request.to_querystring())


class TestResourceRequest(base.TestCase):

    def test_flavor_resources_with_swap_in_gb_and_the_limit(self):
        _request, params = query(fakes.fake_spec(memory_mb=2048, vcpus=2, root_gb=20,
                                                 ephemeral_gb=5, swap=1500), limit=1000)
        self.assertEqual([('limit', '1000'),
                          ('resources', 'DISK_GB:27,MEMORY_MB:2048,VCPU:2')], params)

    def test_volume_backed_requests_leave_the_root_disk_out(self):
        spec = fakes.fake_spec(root_gb=20, ephemeral_gb=0)
        spec.is_bfv = True
        _request, params = query(spec)
        self.assertEqual([('resources', 'MEMORY_MB:512,VCPU:1')], params)

    def test_extra_specs_override_add_groups_and_traits(self):
        spec = fakes.fake_spec(vcpus=2, extra_specs={
            'resources:VCPU': '4', 'resources:DISK_GB': '0', 'resources1:CUSTOM_GPU': '1',
            'trait1:CUSTOM_FAST': 'required', 'trait:HW_CPU_X86_AVX2': 'required',
            'trait:CUSTOM_SLOW': 'forbidden', 'group_policy': 'isolate'})
        _request, params = query(spec)
        self.assertEqual([
            ('group_policy', 'isolate'),
            ('required', 'HW_CPU_X86_AVX2,!CUSTOM_SLOW'), ('required1', 'CUSTOM_FAST'),
            ('resources', 'MEMORY_MB:512,VCPU:4'), ('resources1', 'CUSTOM_GPU:1')], params)

    def test_dedicated_cpus_are_pcpu_and_the_fallback_asks_vcpu(self):
        spec = fakes.fake_spec(vcpus=2, extra_specs={'hw:cpu_policy': 'dedicated'})
        request, params = query(spec)
        self.assertTrue(request.cpu_pinning_requested)
        self.assertEqual([('resources', 'DISK_GB:1,MEMORY_MB:512,PCPU:2')], params)
        request, params = query(spec, enable_pinning_translate=False)
        self.assertFalse(request.cpu_pinning_requested)
        self.assertEqual([('resources', 'DISK_GB:1,MEMORY_MB:512,VCPU:2')], params)

    def test_an_explicit_vcpu_amount_is_not_translated(self):
        spec = fakes.fake_spec(vcpus=2, extra_specs={'hw:cpu_policy': 'dedicated',
                                                     'resources:VCPU': '2'})
        request, params = query(spec)
        self.assertFalse(request.cpu_pinning_requested)
        self.assertIn(('resources', 'DISK_GB:1,MEMORY_MB:512,VCPU:2'), params)

    def test_image_traits_are_required(self):
        spec = fakes.fake_spec(image_props={'traits_required': ['CUSTOM_IMAGE']})
        _request, params = query(spec)
        self.assertIn(('required', 'CUSTOM_IMAGE'), params)

    def test_request_level_parameters_from_the_request_filters(self):
        spec = fakes.fake_spec()
        request_filter.compute_status_filter(None, spec, self.conf)
        spec.root_required.add('COMPUTE_IMAGE_TYPE_RAW')
        request_filter._destination(spec).require_aggregates(['b', 'a'])
        spec.requested_destination.append_forbidden_aggregates({'x'})
        _request, params = query(spec)
        self.assertEqual([
            ('member_of', '!in:x'), ('member_of', 'in:a,b'),
            ('resources', 'DISK_GB:1,MEMORY_MB:512,VCPU:1'),
            ('root_required', 'COMPUTE_IMAGE_TYPE_RAW,!COMPUTE_STATUS_DISABLED')], params)
