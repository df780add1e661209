"""normalize() and HostWeightHandler: Nova's (Victoria+) weighing algorithm."""
import numpy as np

from minisched.scheduler import host_state, weights
from minisched.scheduler.weights import cpu, disk, ram
from tests.unit import fakes
from tests.unit.scheduler.weights import helpers

NORMALIZE_CASES = [
    # (values, minval, maxval, expected)
    ([], None, None, []),
    ([5], None, None, [0]),
    ([3, 3, 3], None, None, [0, 0, 0]),
    ([1, 2, 3], None, None, [0.0, 0.5, 1.0]),
    ([-2, 0, 2], None, None, [0.0, 0.5, 1.0]),
    ([1, 2, 4], 0, None, [0.25, 0.5, 1.0]),
    ([4, 4], 0, None, [1.0, 1.0]),
    ([0, 0], 0, None, [0, 0]),
    ([1, 2], None, 4, [0.0, 1 / 3]),
    ([2, 3], 0, 8, [0.25, 0.375]),
]


class _Raw(weights.BaseHostWeigher):
    """Raw value taken from the host's ``num_instances``; bounds set per test."""

    def _weigh_object(self, host_state, weight_properties):
        return host_state.num_instances


class TestNormalize(helpers.WeigherTestCase):
    def test_normalize(self):
        for values, minval, maxval, expected in NORMALIZE_CASES:
            with self.subTest(values=values, minval=minval, maxval=maxval):
                self.assertEqual(expected, list(weights.normalize(values, minval, maxval)))
                if values:
                    array = weights.normalize_array(np.array(values, dtype=np.float64),
                                                    minval, maxval)
                    self.assertEqual([float(e) for e in expected], array.tolist())


class TestHostWeightHandler(helpers.WeigherTestCase):
    def test_identical_empty_hosts_score_three_under_ram_cpu_disk(self):
        hosts = self.hosts({}, {})
        self.assertEqual([('host1', 3.0), ('host2', 3.0)],
                         self.weigh([ram.RAMWeigher, cpu.CPUWeigher, disk.DiskWeigher], hosts))

    def test_ties_keep_input_order(self):
        hosts = self.hosts({'free_ram_mb': 1}, {'free_ram_mb': 2}, {'free_ram_mb': 1},
                           {'free_ram_mb': 2}, {'free_ram_mb': 1})
        self.assertEqual(['host2', 'host4', 'host1', 'host3', 'host5'],
                         [name for name, _ in self.weigh([ram.RAMWeigher], hosts)])

    def test_no_host_or_one_host_is_not_weighed(self):
        self.assertEqual([], self.handler.get_weighed_objects([ram.RAMWeigher(self.conf)], [],
                                                              None))
        self.assertEqual([('host1', 0.0)], self.weigh([ram.RAMWeigher], self.hosts({})))

    def test_weights_sum_over_weighers(self):
        hosts = self.hosts({'free_ram_mb': 1024, 'free_disk_mb': 4096},
                           {'free_ram_mb': 4096, 'free_disk_mb': 1024})
        self.flags(group='filter_scheduler', disk_weight_multiplier=2.0)
        self.assertEqual([('host1', 2.25), ('host2', 1.5)],
                         self.weigh([ram.RAMWeigher, disk.DiskWeigher], hosts))

    def test_declared_bounds_clamp_and_are_never_mutated(self):
        class Bounded(_Raw):
            minval, maxval = 2, 6

        self.assertEqual([('host3', 1.0), ('host2', 0.25), ('host1', 0.0)],
                         self.weigh([Bounded], self.hosts({'num_instances': 0},
                                                          {'num_instances': 3},
                                                          {'num_instances': 9})))
        self.assertEqual((2, 6), (Bounded.minval, Bounded.maxval))
        # A later request with narrower values is normalised on the same declared bounds.
        self.table = host_state.HostStateTable()
        self.assertEqual([('host2', 0.5), ('host1', 0.25)],
                         self.weigh([Bounded], self.hosts({'num_instances': 3},
                                                          {'num_instances': 4})))

    def test_multiplier_per_host_is_asked_after_raw_values(self):
        class PerHost(_Raw):
            def weight_multiplier(self, host_state):
                return 10.0 if host_state.host == 'host1' else 1.0

        self.assertEqual([('host1', 10.0), ('host2', 0.0)],
                         self.weigh([PerHost], self.hosts({'num_instances': 5},
                                                          {'num_instances': 1})))

    def test_nan_multiplier_orders_like_python_sort(self):
        # NaN weights have no total order; both paths must still agree (checked by weigh()).
        nan = fakes.fake_aggregate({'ram_weight_multiplier': 'nan'})
        hosts = self.hosts({'free_ram_mb': 1}, {'free_ram_mb': 3, 'aggregates': [nan]},
                           {'free_ram_mb': 2}, {'free_ram_mb': 4})
        names = [name for name, _ in self.weigh([ram.RAMWeigher], hosts)]
        self.assertEqual(4, len(names))


class _Constant(_Raw):
    """Every host's raw value is ``value``, and the vectorised form says so with a number."""

    value = 5

    def _weigh_object(self, host_state, weight_properties):
        return self.value

    def weigh_rows(self, view, weight_properties):
        return self.value


class TestSkippedWork(helpers.WeigherTestCase):
    """What the handler does not compute must not change a weight or the order."""

    def test_constant_values_normalise_as_a_list_of_them(self):
        nan = float('nan')
        cases = [
            # (value, minval, maxval): every one checked bit for bit against the per-host path
            (5, None, None), (0, None, None), (5, 0, None), (0, 0, None), (-3, 0, None),
            (5, None, 9), (9, None, 9), (5, 2, 8), (12, 2, 8), (1e308, -1e308, None),
            (nan, None, None), (nan, 0, None), (float('inf'), None, None), (2.5, 2.5, 2.5),
        ]
        for value, minval, maxval in cases:
            with self.subTest(value=value, minval=minval, maxval=maxval):
                weigher = type('C', (_Constant,), {'value': value, 'minval': minval,
                                                   'maxval': maxval})
                self.table = host_state.HostStateTable()
                hosts = self.hosts({'free_ram_mb': 10}, {'free_ram_mb': 30},
                                   {'free_ram_mb': 20})
                self.weigh([weigher, ram.RAMWeigher], hosts)

    def test_bounded_constant_still_weighs(self):
        class Half(_Constant):
            minval, maxval, value = 0, 10, 5

        hosts = self.hosts({}, {})
        self.flags(group='filter_scheduler', ram_weight_multiplier=0.0)
        self.assertEqual([('host1', 0.5), ('host2', 0.5)], self.weigh([Half], hosts))

    def _counting(self, base_cls):
        calls = []

        class Counting(base_cls):
            def weigh_rows(self, view, weight_properties):
                calls.append(len(view))
                return super().weigh_rows(view, weight_properties)
        return Counting, calls

    def test_zero_multiplier_skips_finite_values(self):
        counting, calls = self._counting(ram.RAMWeigher)
        self.flags(group='filter_scheduler', ram_weight_multiplier=0.0)
        hosts = self.hosts({'free_ram_mb': 1}, {'free_ram_mb': 9}, {'free_ram_mb': 4})
        self.assertEqual([('host1', 0.0), ('host2', 0.0), ('host3', 0.0)],
                         self.weigh([counting], hosts))
        self.assertEqual([], calls)

    def test_zero_multiplier_overridden_by_an_aggregate_is_weighed(self):
        counting, calls = self._counting(ram.RAMWeigher)
        self.flags(group='filter_scheduler', ram_weight_multiplier=0.0)
        agg = fakes.fake_aggregate({'ram_weight_multiplier': '2.0'})
        hosts = self.hosts({'free_ram_mb': 1}, {'free_ram_mb': 9, 'aggregates': [agg]},
                           {'free_ram_mb': 4})
        self.assertEqual([('host2', 2.0), ('host1', 0.0), ('host3', 0.0)],
                         self.weigh([counting], hosts))
        self.assertEqual([3], calls)

    def test_zero_multiplier_does_not_skip_values_that_may_raise(self):
        # CPUWeigher's values come from the allocation ratio, which may be unset (an error
        # per host, as in Nova): they are computed whatever the multiplier.
        counting, calls = self._counting(cpu.CPUWeigher)
        self.flags(group='filter_scheduler', cpu_weight_multiplier=0.0)
        self.weigh([counting], self.hosts({'vcpus_total': 4}, {'vcpus_total': 8}))
        self.assertEqual([2], calls)
