"""IsolatedHostsFilter: both result matrices and the no-isolated-images case."""
from minisched.scheduler.filters import isolated_hosts
from tests.unit import base, fakes
from tests.unit.base import uuids

CASES = [  # (restrict, isolated images, image id, host, passes); isolated host: 'iso'
    (True, [uuids.iso_image], uuids.iso_image, 'iso', True),
    (True, [uuids.iso_image], uuids.iso_image, 'other', False),
    (True, [uuids.iso_image], uuids.image, 'iso', False),
    (True, [uuids.iso_image], uuids.image, 'other', True),
    (True, [uuids.iso_image], None, 'iso', False),              # no image (volume-backed)
    (False, [uuids.iso_image], uuids.iso_image, 'iso', True),
    (False, [uuids.iso_image], uuids.iso_image, 'other', False),
    (False, [uuids.iso_image], uuids.image, 'iso', True),
    (False, [uuids.iso_image], uuids.image, 'other', True),
    (True, [], uuids.image, 'iso', False),                      # no isolated images
    (True, [], uuids.image, 'other', True),
    (False, [], uuids.image, 'iso', True),
]


class TestIsolatedHostsFilter(base.TestCase):
    def test_isolation_matrix(self):
        for restrict, images, image_id, host, passes in CASES:
            with self.subTest(restrict=restrict, images=images, image_id=image_id, host=host):
                self.flags(group='filter_scheduler', isolated_hosts=['iso'],
                           isolated_images=images,
                           restrict_isolated_hosts_to_isolated_images=restrict)
                flt = isolated_hosts.IsolatedHostsFilter(self.conf)
                spec = fakes.fake_spec(image_id=image_id)
                self.assertIs(passes, flt.host_passes(fakes.fake_host_state(host), spec))
                if flt.is_noop(spec):  # a no-op must be right for every host
                    for name in ('iso', 'other'):
                        self.assertTrue(flt.host_passes(fakes.fake_host_state(name), spec))

    def test_defaults_pass_everything(self):
        flt = isolated_hosts.IsolatedHostsFilter(self.conf)
        self.assertTrue(flt.is_noop(fakes.fake_spec()))
        self.assertTrue(flt.host_passes(fakes.fake_host_state(), fakes.fake_spec()))
        self.assertTrue(flt.RUN_ON_REBUILD)
        self.assertTrue(flt.run_filter_once_per_request)
