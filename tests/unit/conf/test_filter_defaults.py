"""Which filters run: Nova 34's list with Placement (the default), Ocata's without it while
``enabled_filters`` is unset, and a list the operator set as given on both paths. Each test
reads a ConfigOpts of its own, parsed as a service parses its files."""
from minisched.conf import filter_scheduler as fs_conf
from minisched.scheduler import host_manager
from tests.unit import base


class TestEnabledFilters(base.TestCase):

    def setUp(self):
        super().setUp()
        # The unit base turns Placement off on the global CONF; its override reaches the
        # option objects every ConfigOpts here shares.
        self.conf.clear_override('enabled', group='placement')

    def _made(self, conf):
        return [type(f).__name__ for f in host_manager.HostManager(conf).enabled_filters]

    def test_placement_is_on_by_default(self):
        conf = self.private_conf()
        self.assertTrue(conf.placement.enabled)
        self.assertEqual(fs_conf.DEFAULT_FILTERS, fs_conf.enabled_filters(conf))
        self.assertEqual(fs_conf.DEFAULT_FILTERS, self._made(conf))

    def test_without_placement_the_unset_list_is_ocatas(self):
        conf = self.private_conf('[placement]\nenabled = false\n')
        self.assertEqual(fs_conf.LEGACY_FILTERS, fs_conf.enabled_filters(conf))
        self.assertEqual(fs_conf.LEGACY_FILTERS, self._made(conf))

    def test_a_list_set_in_a_file_is_used_on_both_paths(self):
        for enabled in ('true', 'false'):
            conf = self.private_conf('[placement]\nenabled = %s\n[filter_scheduler]\n'
                              'enabled_filters = ComputeFilter\n' % enabled)
            self.assertEqual(['ComputeFilter'], fs_conf.enabled_filters(conf))
            self.assertEqual(['ComputeFilter'], self._made(conf))
