"""Plugin loading: the names ``available_filters`` and ``weight_classes`` accept."""
from unittest import mock

from minisched import exception
from minisched.scheduler import filters
from minisched.scheduler import plugins
from minisched.scheduler import weights
from minisched.scheduler.filters import all_hosts
from minisched.scheduler.filters import ram
from minisched.scheduler.weights import ram as ram_weigher
from tests.unit import base


class CustomFilter(filters.BaseHostFilter):
    """A filter of a package of one's own, named by its dotted path."""

    def host_passes(self, host_state, spec_obj):
        return True


def two_filters():
    """A function returning filter classes (Nova's ``all_filters`` form)."""
    return [CustomFilter, all_hosts.AllHostsFilter]


def not_plugins():
    return [object]


class TestClasses(base.TestCase):
    def _filters(self, *names):
        return plugins.classes(plugins.FILTERS, list(names), plugins.ALL_FILTERS)

    def _weighers(self, *names):
        return plugins.classes(plugins.WEIGHERS, list(names), plugins.ALL_WEIGHERS)

    def test_entry_point_names(self):
        self.assertEqual({'RamFilter': ram.RamFilter}, self._filters('RamFilter'))
        self.assertEqual({'RAMWeigher': ram_weigher.RAMWeigher}, self._weighers('RAMWeigher'))

    def test_all_alias_is_every_installed_plugin_by_name(self):
        installed = plugins.installed(plugins.FILTERS)
        found = self._filters(plugins.ALL_FILTERS)
        self.assertEqual(sorted(installed), list(found))
        self.assertEqual(installed, found)

    def test_novas_all_aliases_mean_every_installed_plugin(self):
        self.assertEqual(self._filters(plugins.ALL_FILTERS),
                         self._filters('nova.scheduler.filters.all_filters'))
        self.assertEqual(self._weighers(plugins.ALL_WEIGHERS),
                         self._weighers('nova.scheduler.weights.all_weighers'))

    def test_novas_class_paths_name_the_installed_plugin_of_that_class(self):
        self.assertEqual({'RamFilter': ram.RamFilter},
                         self._filters('nova.scheduler.filters.ram_filter.RamFilter'))
        self.assertEqual({'RAMWeigher': ram_weigher.RAMWeigher},
                         self._weighers('nova.scheduler.weights.ram.RAMWeigher'))

    def test_novas_path_to_a_plugin_not_installed_stops(self):
        self.assertRaises(exception.PluginNotFound, self._filters,
                          'nova.scheduler.filters.trusted_filter.TrustedFilter')
        # A filter's path is not a weigher's.
        self.assertRaises(exception.PluginNotFound, self._weighers,
                          'nova.scheduler.filters.ram_filter.RamFilter')

    def test_dotted_class_path_keyed_by_class_name(self):
        self.assertEqual({'RamFilter': ram.RamFilter},
                         self._filters('minisched.scheduler.filters.ram.RamFilter'))
        self.assertEqual({'CustomFilter': CustomFilter},
                         self._filters(__name__ + '.CustomFilter'))

    def test_dotted_function_path_gives_its_classes(self):
        self.assertEqual({'CustomFilter': CustomFilter, 'AllHostsFilter': all_hosts.AllHostsFilter},
                         self._filters(__name__ + '.two_filters'))
        self.assertEqual(sorted(plugins.installed(plugins.WEIGHERS)),
                         sorted(self._weighers('minisched.scheduler.weights.all_weighers')))
        self.assertTrue(all(issubclass(cls, weights.BaseHostWeigher)
                            for cls in self._weighers(plugins.ALL_WEIGHERS).values()))

    def test_order_is_kept_and_duplicates_dropped(self):
        found = self._filters('RamFilter', __name__ + '.two_filters', 'AllHostsFilter',
                              'minisched.scheduler.filters.ram.RamFilter')
        self.assertEqual(['RamFilter', 'CustomFilter', 'AllHostsFilter'], list(found))

    def test_unknown_names_stop(self):
        for name in ('NoSuchFilter', 'no_such_module.Filter', __name__ + '.NoSuchFilter',
                     __name__ + '.not_plugins', 'minisched.scheduler.weights.ram.RAMWeigher',
                     'minisched.scheduler.filters.utils'):
            with self.subTest(name=name):
                with self.assertRaises(exception.PluginNotFound) as caught:
                    self._filters(name)
                self.assertIn(name, str(caught.exception))
                self.assertIn('RamFilter', str(caught.exception))  # what is installed

    def test_broken_module_import_is_not_hidden(self):
        # A module that exists but cannot import one of its own imports is a bug to show,
        # not an unknown name.
        broken = ModuleNotFoundError("No module named 'some_dependency'",
                                     name='some_dependency')
        with mock.patch('importlib.import_module', side_effect=broken):
            self.assertRaises(ModuleNotFoundError, self._filters, 'my_package.filters.MyFilter')
