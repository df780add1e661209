"""Property: HostWeightHandler.weigh_rows == get_weighed_objects, bit for bit, same order."""
import types

import hypothesis
import numpy as np
from hypothesis import strategies as st

from minisched.scheduler import filters, host_state, weights
from minisched.scheduler.weights import (
    affinity,
    compute,
    cpu,
    cross_cell,
    disk,
    hypervisor_version,
    io_ops,
    metrics,
    num_instances,
    pci,
    ram,
)
from tests.unit import base, fakes

ALL = [ram.RAMWeigher, cpu.CPUWeigher, disk.DiskWeigher, io_ops.IoOpsWeigher, pci.PCIWeigher,
       affinity.ServerGroupSoftAffinityWeigher, affinity.ServerGroupSoftAntiAffinityWeigher,
       compute.BuildFailureWeigher, metrics.MetricsWeigher, cross_cell.CrossCellWeigher,
       hypervisor_version.HypervisorVersionWeigher, num_instances.NumInstancesWeigher]
FS_MULTIPLIERS = ['ram_weight_multiplier', 'cpu_weight_multiplier', 'disk_weight_multiplier',
                  'io_ops_weight_multiplier', 'build_failure_weight_multiplier',
                  'cross_cell_move_weight_multiplier', 'hypervisor_version_weight_multiplier',
                  'num_instances_weight_multiplier']
NON_NEGATIVE = ['pci_weight_multiplier', 'soft_affinity_weight_multiplier',
                'soft_anti_affinity_weight_multiplier']
AGG_KEYS = FS_MULTIPLIERS + NON_NEGATIVE + ['metrics_weight_multiplier']
MEMBERS = ['m%d' % i for i in range(5)]
CELLS = ['cell-a', 'cell-b']

small = st.integers(-50, 50)
big = st.integers(-(2 ** 62), 2 ** 62)
multiplier = st.sampled_from([0.0, 1.0, -1.0, 2.5, -0.3, 1e6, 1e-7])
agg_value = st.one_of(st.sampled_from(['2', '-1.5', '0', ' 3.25 ', 'bad', '1e3', 'nan', 'inf']),
                      st.floats(-1e6, 1e6, allow_nan=False).map(repr))
aggregate = st.builds(
    lambda i, meta: fakes.fake_aggregate(meta, id=i),
    st.integers(1, 6), st.dictionaries(st.sampled_from(AGG_KEYS), agg_value, max_size=3))
host = st.fixed_dictionaries({
    'free_ram_mb': st.one_of(small, big), 'free_disk_mb': st.one_of(small, big),
    'vcpus_total': st.integers(0, 256), 'vcpus_used': st.integers(0, 600),
    'cpu_allocation_ratio': st.sampled_from([0.5, 1.0, 1.5, 4.0, 16.0, 0.1]),
    'num_io_ops': st.integers(-2, 10), 'num_instances': st.integers(0, 60),
    'failed_builds': st.integers(0, 4),
    'hypervisor_version': st.one_of(st.none(), st.integers(0, 3), st.just(6002000)),
    'pci_stats': st.one_of(st.none(), st.lists(st.integers(0, 120), max_size=3).map(
        lambda counts: fakes.fake_pci_stats(None, *[('8086', '%04x' % i, None, count)
                                                    for i, count in enumerate(counts)]))),
    'instances': st.lists(st.sampled_from(MEMBERS + ['x1', 'x2']), max_size=4).map(
        lambda uuids: dict.fromkeys(uuids)),
    'metrics': st.dictionaries(st.sampled_from(['cpu', 'mem', 'io']),
                               st.one_of(st.integers(-100, 100), st.floats(-1e3, 1e3))).map(
        lambda m: [host_state.Metric(k, v, None, 'fake') for k, v in m.items()]),
    'aggregates': st.one_of(st.just([]), st.lists(aggregate, max_size=3)),
    'cell_uuid': st.sampled_from(CELLS),
})


class _Stub(types.SimpleNamespace):
    def __contains__(self, name):
        return hasattr(self, name)


request = st.builds(
    lambda policy, members, cell, allow: _Stub(
        instance_group=policy and fakes.fake_group(policy=policy, members=members),
        requested_destination=_Stub(cell=cell and _Stub(uuid=cell),
                                    allow_cross_cell_move=allow)),
    st.sampled_from([None, 'soft-affinity', 'soft-anti-affinity', 'affinity']),
    st.lists(st.sampled_from(MEMBERS), max_size=5),
    st.sampled_from([None] + CELLS), st.booleans())
config = st.fixed_dictionaries({
    'fs': st.fixed_dictionaries(
        {**{name: multiplier for name in FS_MULTIPLIERS},
         **{name: multiplier.map(abs) for name in NON_NEGATIVE}}),
    'metrics': st.fixed_dictionaries({
        'weight_multiplier': multiplier,
        'weight_setting': st.lists(st.sampled_from(
            ['cpu=1.0', 'mem=-0.5', 'io=2', 'bad', 'cpu=0']), max_size=3),
        'required': st.booleans(), 'weight_of_unavailable': st.sampled_from([-10000.0, 0.0]),
    }),
})


class TestVectorisedWeighing(base.TestCase):
    @hypothesis.settings(max_examples=200, deadline=None,
                         suppress_health_check=[hypothesis.HealthCheck.too_slow])
    @hypothesis.given(hosts=st.lists(host, min_size=2, max_size=12), conf=config,
                      spec=request, data=st.data())
    def test_rows_equal_per_host(self, hosts, conf, spec, data):
        self.flags(group='filter_scheduler', **conf['fs'])
        self.flags(group='metrics', **conf['metrics'])
        table = host_state.HostStateTable(capacity=2)
        states = [fakes.fake_host_state('h%d' % i, table=table, **kw)
                  for i, kw in enumerate(hosts)]
        rows = np.array([s.row for s in states], dtype=np.intp)
        rows = rows[data.draw(st.permutations(range(len(rows))))] if len(rows) else rows
        weighers = [cls(self.conf) for cls in ALL]
        handler = weights.HostWeightHandler()
        view = filters.RowView(table, rows)
        try:
            expected = handler.get_weighed_objects(weighers, view.states(), spec)
        except Exception as exc:
            hypothesis.event('raised %s' % type(exc).__name__)
            with self.assertRaises(type(exc)):
                handler.weigh_rows(weighers, view, spec)
            return
        got_rows, got_weights = handler.weigh_rows(weighers, view, spec)
        hypothesis.event('NaN weight' if np.isnan(got_weights).any() else 'no NaN')
        hypothesis.event('aggregate overrides: %s' % any(
            key in agg.metadata for s in states for agg in s.aggregates for key in AGG_KEYS))
        self.assertEqual([w.obj.row for w in expected], got_rows.tolist())
        self.assertEqual([float(w.weight).hex() for w in expected],
                         [w.hex() for w in got_weights.tolist()])


# Weights as they come out of the handler: few distinct values (ties), signed zeros, infinities.
weight_value = st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 2.25, 1e300, float('inf'),
                                float('-inf')])


class TestPartialRanking(base.TestCase):
    """rank_rows with ``top`` places the first positions of the full stable sort, and
    completing the ranking gives that sort exactly."""

    @hypothesis.settings(max_examples=300, deadline=None)
    @hypothesis.given(total=st.lists(weight_value, min_size=2, max_size=60),
                      top=st.integers(0, 12))
    def test_placed_positions_are_those_of_the_full_sort(self, total, top):
        total = np.array(total, dtype=np.float64)
        full = np.argsort(-total, kind='stable')
        order, placed = weights._descending_order(total, top)
        best = int(np.count_nonzero(total == total.max()))
        self.assertEqual(min(len(total), best + top), placed)
        self.assertEqual(full[:placed].tolist(), order[:placed].tolist())
        self.assertEqual(sorted(order.tolist()), list(range(len(total))))
        ranking = weights.Ranking(np.arange(len(total))[order], total[order], placed)
        self.assertEqual(full.tolist(), ranking.complete().tolist())
        self.assertEqual([w.hex() for w in total[full].tolist()],
                         [w.hex() for w in ranking.weights.tolist()])

    def test_nan_weights_are_sorted_whole_as_python_sorts_them(self):
        total = np.array([1.0, float('nan'), 2.0, 1.0, 0.5])
        order, placed = weights._descending_order(total, 1)
        self.assertEqual(len(total), placed)
        values = total.tolist()
        self.assertEqual(sorted(range(5), key=values.__getitem__, reverse=True),
                         order.tolist())
