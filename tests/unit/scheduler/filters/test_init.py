"""Filter catalogue and handler: entry points, Nova's O/R flags, run-once, rebuild, rows."""
import numpy as np

from minisched.scheduler import filters, plugins
from minisched.scheduler import host_state as host_state_mod
from tests.unit import base, fakes

#: Entry point -> (run_filter_once_per_request, RUN_ON_REBUILD, SETS_LIMITS), per Nova.
CATALOGUE = {
    'AllHostsFilter': (True, False, False),
    'ComputeFilter': (True, False, False),
    'AvailabilityZoneFilter': (True, False, False),
    'RetryFilter': (False, False, False),
    'RamFilter': (False, False, True),
    'AggregateRamFilter': (False, False, True),
    'CoreFilter': (False, False, True),
    'AggregateCoreFilter': (False, False, True),
    'DiskFilter': (False, False, True),
    'AggregateDiskFilter': (False, False, True),
    'ExactRamFilter': (False, False, True),
    'ExactCoreFilter': (False, False, True),
    'ExactDiskFilter': (False, False, True),
    'ComputeCapabilitiesFilter': (True, False, False),
    'ImagePropertiesFilter': (True, True, False),
    'ServerGroupAffinityFilter': (False, False, False),
    'ServerGroupAntiAffinityFilter': (False, False, False),
    'SameHostFilter': (True, False, False),
    'DifferentHostFilter': (True, False, False),
    'SimpleCIDRAffinityFilter': (True, False, False),
    'AggregateInstanceExtraSpecsFilter': (True, False, False),
    'AggregateMultiTenancyIsolation': (True, False, False),
    'AggregateImagePropertiesIsolation': (True, True, False),
    'IsolatedHostsFilter': (True, True, False),
    'TypeAffinityFilter': (False, False, False),
    'AggregateTypeAffinityFilter': (True, False, False),
    'MetricsFilter': (False, False, False),
    'IoOpsFilter': (False, False, False),
    'AggregateIoOpsFilter': (False, False, False),
    'NumInstancesFilter': (False, False, False),
    'AggregateNumInstancesFilter': (False, False, False),
    'JsonFilter': (False, False, False),
    'NUMATopologyFilter': (False, False, True),
    'PciPassthroughFilter': (False, False, False),
}
REBUILD = {'_nova_check_type': ['rebuild']}


class TestCatalogue(base.TestCase):
    def test_every_entry_point_loads_and_is_named_for_its_class(self):
        installed = plugins.installed(plugins.FILTERS)
        self.assertEqual(set(CATALOGUE), set(installed))
        for name, cls in installed.items():
            with self.subTest(name=name):
                self.assertEqual(name, cls.__name__)
                self.assertTrue(issubclass(cls, filters.BaseHostFilter))
                self.assertIsInstance(cls(self.conf), filters.BaseHostFilter)

    def test_flags_are_novas(self):
        installed = plugins.installed(plugins.FILTERS)
        for name, (once, rebuild, limits) in CATALOGUE.items():
            with self.subTest(name=name):
                cls = installed[name]
                self.assertIs(once, cls.run_filter_once_per_request)
                self.assertIs(rebuild, cls.RUN_ON_REBUILD)
                self.assertIs(limits, cls.SETS_LIMITS)

    def test_limit_setting_filters_are_never_noop(self):
        installed = plugins.installed(plugins.FILTERS)
        for name, (_once, _rebuild, limits) in CATALOGUE.items():
            # NUMATopologyFilter sets limits only for a request with a NUMA topology.
            if limits and name != 'NUMATopologyFilter':
                with self.subTest(name=name):
                    self.assertFalse(installed[name](self.conf).is_noop(fakes.fake_spec()))


class TestHandler(base.TestCase):
    def setUp(self):
        super().setUp()
        installed = plugins.installed(plugins.FILTERS)
        self.ram = installed['RamFilter'](self.conf)
        self.image = installed['ImagePropertiesFilter'](self.conf)
        self.compute = installed['ComputeFilter'](self.conf)
        self.table = host_state_mod.HostStateTable()
        self.hosts = [
            fakes.fake_host_state('small', table=self.table, total_usable_ram_mb=512,
                                  free_ram_mb=512),
            fakes.fake_host_state('big', table=self.table),
            fakes.fake_host_state('arm', table=self.table,
                                  supported_instances=[['aarch64', 'fake', 'hvm']]),
            fakes.fake_host_state('off', table=self.table, service={'disabled': True}),
        ]
        self.handler = filters.HostFilterHandler()
        self.filters = [self.compute, self.ram, self.image]

    def _names(self, states):
        return [s.host for s in states]

    def _run_both(self, spec, index=0):
        per_host = self.handler.run(self.filters, self.hosts, spec, index)
        rows = self.handler.run_rows(self.filters, self.table, self.table.rows(), spec, index)
        self.assertEqual(self._names(per_host.survivors),
                         [self.table.states[r].host for r in rows.survivors])
        self.assertEqual(per_host.counts, rows.counts)
        return per_host

    def test_filters_in_order_with_counts(self):
        spec = fakes.fake_spec(memory_mb=1024, image_props={'hw_architecture': 'x86_64'})
        result = self._run_both(spec)
        self.assertEqual(['big'], self._names(result.survivors))
        self.assertEqual([('ComputeFilter', 4, 3), ('RamFilter', 3, 2),
                          ('ImagePropertiesFilter', 2, 1)], result.counts)
        self.assertEqual('ComputeFilter rejected 1 of 4, RamFilter rejected 1 of 3, '
                         'ImagePropertiesFilter rejected 1 of 2', result.explain())

    def test_run_once_filters_skip_later_instances(self):
        spec = fakes.fake_spec(memory_mb=1024, image_props={'hw_architecture': 'x86_64'})
        result = self._run_both(spec, index=1)
        # ComputeFilter and ImagePropertiesFilter ran for index 0 only.
        self.assertEqual([('RamFilter', 4, 3)], result.counts)
        self.assertEqual(['big', 'arm', 'off'], self._names(result.survivors))

    def test_rebuild_runs_only_rebuild_filters(self):
        spec = fakes.fake_spec(memory_mb=100000, image_props={'hw_architecture': 'x86_64'},
                               scheduler_hints=REBUILD)
        result = self._run_both(spec)
        # RamFilter and ComputeFilter pass everyone; ImagePropertiesFilter still applies.
        self.assertEqual(['small', 'big', 'off'], self._names(result.survivors))
        self.assertEqual({}, self.hosts[0].limits)

    def test_stops_at_the_first_empty_result(self):
        spec = fakes.fake_spec(memory_mb=10 ** 6)
        result = self._run_both(spec)
        self.assertEqual([], result.survivors)
        self.assertEqual([('ComputeFilter', 4, 3), ('RamFilter', 3, 0)], result.counts)

    def test_row_view(self):
        rows = np.array([2, 0])
        view = filters.RowView(self.table, rows)
        self.assertEqual(2, len(view))
        self.assertEqual(['arm', 'small'], [s.host for s in view.states()])
        self.assertEqual([8192, 512], list(view.column('free_ram_mb')))

    def test_rejection_reported_as_nova_words_it(self):
        # The INFO report carries the counts, the DEBUG one the hosts each filter let
        # through, both in Nova's words (the uuid quoted, the lists as Python prints them).
        spec = fakes.fake_spec(memory_mb=10 ** 6)
        for run in (lambda: self.handler.run(self.filters, self.hosts, spec),
                    lambda: self.handler.run_rows(self.filters, self.table, self.table.rows(),
                                                  spec)):
            with self.assertLogs(filters.LOG, 'DEBUG') as logs:
                run()
            reports = [r.getMessage() for r in logs.records
                       if r.getMessage().startswith('Filtering removed all hosts')]
            prefix = ("Filtering removed all hosts for the request with instance ID '%s'. "
                      "Filter results: " % base.uuids.instance)
            self.assertEqual(
                [prefix + "[('ComputeFilter', [('small', 'small'), ('big', 'big'), "
                 "('arm', 'arm')]), ('RamFilter', None)]",
                 prefix + "['ComputeFilter: (start: 4, end: 3)', "
                 "'RamFilter: (start: 3, end: 0)']"], reports)
            self.assertEqual(['DEBUG', 'INFO'], [r.levelname for r in logs.records
                                                 if r.getMessage().startswith('Filtering')])

    def test_filter_answering_none_stops_filtering(self):
        # Nova's contract: filter_all() returning None means "stop": no host, no report.
        class Stop(filters.BaseHostFilter):
            def host_passes(self, host_state, spec_obj):
                return True

            def filter_all(self, host_states, spec_obj):
                return None

        stop = Stop(self.conf)
        spec = fakes.fake_spec()
        self.assertIsNone(self.handler.get_filtered_objects([self.compute, stop, self.ram],
                                                            self.hosts, spec))
        result = self.handler.run([self.compute, stop, self.ram], self.hosts, spec)
        self.assertTrue(result.stopped)
        self.assertEqual([], result.survivors)
        self.assertEqual([('ComputeFilter', 4, 3)], result.counts)
        self.assertEqual(['small', 'big', 'arm'],
                         self._names(self.handler.get_filtered_objects(
                             [self.compute], self.hosts, spec)))


#: Filter -> the start of the warning it logs on creation (its start): Nova's last release's
#: where that holds here. RamFilter, CoreFilter and DiskFilter are minisched's resource checks
#: (no Placement): they warn of nothing.
DEPRECATED = {
    'AggregateRamFilter': 'The AggregateRamFilter is deprecated: Nova removed it in 22.0.0',
    'AggregateCoreFilter': 'The AggregateCoreFilter is deprecated: Nova removed it in 22.0.0',
    'AggregateDiskFilter': 'The AggregateDiskFilter is deprecated: Nova removed it in 22.0.0',
    'RetryFilter': 'The RetryFilter is deprecated since the 20.0.0 Train release.',
    'TypeAffinityFilter': 'TypeAffinityFilter is deprecated for removal in the 17.0.0 Queens',
    'ExactRamFilter': 'ExactRamFilter is deprecated in Pike and will be removed',
    'ExactCoreFilter': 'ExactCoreFilter is deprecated in Pike and will be removed',
    'ExactDiskFilter': 'ExactDiskFilter is deprecated in Pike and will be removed',
}


class TestDeprecations(base.TestCase):
    def test_removed_filters_warn_on_creation_as_novas_last_release_did(self):
        installed = plugins.installed(plugins.FILTERS)
        for name, start in DEPRECATED.items():
            with self.subTest(name=name):
                cls = installed[name]
                with self.assertLogs(cls.__module__, 'WARNING') as logs:
                    cls(self.conf)
                self.assertEqual(1, len(logs.records))
                self.assertTrue(logs.records[0].getMessage().startswith(start),
                                logs.records[0].getMessage())

    def test_other_filters_do_not(self):
        installed = plugins.installed(plugins.FILTERS)
        for name in sorted(set(installed) - set(DEPRECATED)):
            with self.subTest(name=name):
                self.assertIsNone(installed[name].DEPRECATION)

    def test_resource_filters_start_silently(self):
        installed = plugins.installed(plugins.FILTERS)
        for name in ('RamFilter', 'CoreFilter', 'DiskFilter'):
            with self.subTest(name=name):
                with self.assertNoLogs(installed[name].__module__, 'WARNING'):
                    installed[name](self.conf)

    def test_no_warning_names_placement_which_minisched_has_not(self):
        for name, cls in plugins.installed(plugins.FILTERS).items():
            with self.subTest(name=name):
                self.assertNotIn('Placement', cls.DEPRECATION or '')
