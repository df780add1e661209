"""Which filters run: Nova 34's list with Placement (the default), Ocata's without it while
``enabled_filters`` is unset, and a list the operator set as given on both paths."""
import os
import tempfile

from minisched.conf import filter_scheduler as fs_conf
from minisched.scheduler import host_manager
from tests.unit import base


class TestEnabledFilters(base.TestCase):

    def test_placement_is_on_by_default(self):
        self.conf.clear_override('enabled', group='placement')  # the unit base turns it off
        self.assertTrue(self.conf.placement.enabled)
        self.assertEqual(fs_conf.DEFAULT_FILTERS, fs_conf.enabled_filters(self.conf))

    def test_without_placement_the_unset_list_is_ocatas(self):
        self.flags(enabled=False, group='placement')
        self.assertEqual(fs_conf.LEGACY_FILTERS, fs_conf.enabled_filters(self.conf))
        names = [type(f).__name__ for f in host_manager.HostManager(self.conf).enabled_filters]
        self.assertEqual(fs_conf.LEGACY_FILTERS, names)

    def test_a_list_set_in_a_file_is_used_on_both_paths(self):
        workdir = tempfile.TemporaryDirectory()
        self.addCleanup(workdir.cleanup)
        path = os.path.join(workdir.name, 'minisched.conf')
        with open(path, 'w') as f:
            f.write('[filter_scheduler]\nenabled_filters = ComputeFilter\n')
        self.conf(['--config-file', path], project='minisched', default_config_files=[],
                  default_config_dirs=[])
        for enabled in (True, False):
            self.flags(enabled=enabled, group='placement')
            self.assertEqual(['ComputeFilter'], fs_conf.enabled_filters(self.conf))
        names = [type(f).__name__ for f in host_manager.HostManager(self.conf).enabled_filters]
        self.assertEqual(['ComputeFilter'], names)
