"""``limits_for``: the limits each limit-setting filter writes for a passing host, unwritten.

The scheduler asks a filter for a chosen host's limits after choosing it, when other requests
may have consumed from the host since; so ``limits_for`` must give exactly what
``host_passes`` writes for a host that passes, read from the host's totals and ratios only.
"""
import random

from minisched.scheduler import filters
from minisched.scheduler.filters import numa_topology
from tests.unit import base
from tests.unit import fakes

_LIMIT_SETTERS = ['RamFilter', 'AggregateRamFilter', 'CoreFilter', 'AggregateCoreFilter',
                  'DiskFilter', 'AggregateDiskFilter', 'ExactRamFilter', 'ExactCoreFilter',
                  'ExactDiskFilter', 'NUMATopologyFilter']


class TestLimitsFor(base.TestCase):

    def _filters(self):
        classes = {cls.__name__: cls for cls in filters.all_filters()}
        setters = sorted(name for name, cls in classes.items() if cls.SETS_LIMITS)
        self.assertEqual(sorted(_LIMIT_SETTERS), setters)
        return [classes[name](self.conf) for name in _LIMIT_SETTERS]

    def test_every_limit_setting_filter_gives_what_a_pass_writes(self):
        rng = random.Random(11)
        checked = {name: 0 for name in _LIMIT_SETTERS}
        for flt in self._filters():
            for _ in range(40):
                spec = fakes.fake_numa_spec(
                    rng.choice([{}, {'hw:numa_nodes': '1'}]), vcpus=rng.choice([1, 2]),
                    memory_mb=rng.choice([512, 2048]))
                exact = rng.random() < 0.3  # what the Exact* filters pass
                total_ram = rng.choice([2048, 8192, 16384])
                vcpus = rng.choice([0, 2, 8])
                host = fakes.fake_host_state(
                    total_usable_ram_mb=total_ram,
                    free_ram_mb=spec.memory_mb if exact else rng.randint(0, total_ram),
                    vcpus_total=vcpus, vcpus_used=rng.randint(0, 2 * vcpus),
                    total_usable_disk_gb=rng.choice([4, 100]),
                    free_disk_mb=spec.root_gb * 1024 if exact else rng.randint(0, 100) * 1024,
                    ram_allocation_ratio=rng.choice([0.0, 1.0, 1.5]),
                    cpu_allocation_ratio=rng.choice([0.0, 1.0, 4.0]),
                    disk_allocation_ratio=rng.choice([0.0, 1.0, 2.0]),
                    numa_topology=rng.choice([None, fakes.fake_numa_topology()]))
                before = dict(host.limits)
                given = flt.limits_for(host, spec)
                self.assertEqual(before, host.limits, 'limits_for wrote into the host')
                if not flt.host_passes(host, spec):
                    continue
                checked[flt.name] += 1
                self.assertEqual(_values(host.limits), _values(given), flt.name)
        self.assertEqual([], [name for name, count in checked.items() if not count],
                         'filters no scenario let pass')

    def test_numa_limits_need_a_topology_on_both_sides(self):
        flt = numa_topology.NUMATopologyFilter(self.conf)
        with_topology = fakes.fake_numa_spec({'hw:numa_nodes': '1'}, vcpus=2)
        self.assertEqual({}, flt.limits_for(fakes.fake_host_state(numa_topology=None),
                                            with_topology))
        host = fakes.fake_host_state(numa_topology=fakes.fake_numa_topology(),
                                     cpu_allocation_ratio=3.0, ram_allocation_ratio=1.0)
        self.assertEqual({}, flt.limits_for(host, fakes.fake_numa_spec({})))
        limits = flt.limits_for(host, with_topology)['numa_topology']
        self.assertEqual((3.0, 1.0), (limits.cpu_allocation_ratio, limits.ram_allocation_ratio))


def _values(limits):
    """Limits with the NUMA limits object as its primitive (compared by value)."""
    return {key: value.obj_to_primitive() if hasattr(value, 'obj_to_primitive') else value
            for key, value in limits.items()}
