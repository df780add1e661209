"""HostState: updates from compute node records, consumption, and the shared column table."""
import datetime

from oslo_serialization import jsonutils
from oslo_utils import timeutils

from minisched import objects
from minisched.pci import stats as pci_stats
from minisched.scheduler import host_refresh
from minisched.scheduler import host_state
from minisched.scheduler import ironic_host_manager
from tests.unit import base
from tests.unit import fakes


def _node(**kw):
    now = timeutils.utcnow()
    row = {'id': 1, 'uuid': base.uuids.cn1, 'service_id': 1, 'host': 'host1',
           'hypervisor_hostname': 'node1', 'vcpus': 8, 'memory_mb': 8192, 'local_gb': 100,
           'vcpus_used': 2, 'memory_mb_used': 2560, 'local_gb_used': 30,
           'hypervisor_type': 'fake', 'hypervisor_version': 1000, 'free_ram_mb': 5632,
           'free_disk_gb': 70, 'current_workload': 0, 'running_vms': 2, 'cpu_info': '',
           'disk_available_least': 60, 'host_ip': '10.0.0.1',
           'supported_instances': '[["x86_64", "fake", "hvm"]]', 'metrics': '[]',
           'pci_stats': None, 'extra_resources': None,
           'stats': '{"num_instances": "2", "io_workload": "1", "failed_builds": "3"}',
           'numa_topology': None, 'ram_allocation_ratio': 0.0, 'cpu_allocation_ratio': 4.0,
           'disk_allocation_ratio': None, 'mapped': 1, 'created_at': now, 'updated_at': now,
           'deleted_at': None, 'deleted': 0}
    row.update(kw)
    return row


class TestUpdateFromComputeNode(base.TestCase):

    def _state(self, **kw):
        state = host_state.HostState('host1', 'node1', base.uuids.cell)
        state.update(compute=host_refresh.NodeRecord(_node(**kw), self.conf))
        return state

    def test_copies_resources_and_stats(self):
        state = self._state()
        self.assertEqual((8192, 5632, 100), (state.total_usable_ram_mb, state.free_ram_mb,
                                             state.total_usable_disk_gb))
        self.assertEqual((8, 2), (state.vcpus_total, state.vcpus_used))
        self.assertEqual(30 * 1024, state.disk_mb_used)
        self.assertEqual((2, 1, 3), (state.num_instances, state.num_io_ops,
                                     state.failed_builds))
        self.assertEqual([['x86_64', 'fake', 'hvm']], state.supported_instances)
        self.assertEqual(base.uuids.cn1, state.uuid)

    def test_free_disk_is_the_smaller_of_free_and_available_least(self):
        self.assertEqual(60 * 1024, self._state().free_disk_mb)
        self.assertEqual(70 * 1024, self._state(disk_available_least=None).free_disk_mb)

    def test_unset_ratios_fall_back_to_config_then_constants(self):
        state = self._state()
        self.assertEqual((1.5, 4.0, 1.0), (state.ram_allocation_ratio,
                                           state.cpu_allocation_ratio,
                                           state.disk_allocation_ratio))
        self.flags(ram_allocation_ratio=2.0)
        self.assertEqual(2.0, self._state().ram_allocation_ratio)

    def test_metrics_read_as_nova_reads_them(self):
        # Nova's MonitorMetricList.from_json: percentages (sent as fractions) are kept in
        # hundredths, every value truncated to an integer, as its IntegerField does.
        raw = ('[{"name": "cpu.frequency", "value": 2400.9, "source": "m", "timestamp": "t"},'
               ' {"name": "cpu.percent", "value": 0.975}, {"name": "cpu.idle.percent",'
               ' "value": 0.5}, {"name": "cpu.user.time", "value": "12"}]')
        state = self._state(metrics=raw)
        self.assertEqual([('cpu.frequency', 2400), ('cpu.percent', 97), ('cpu.idle.percent', 50),
                          ('cpu.user.time', 12)],
                         [(m.name, m.value) for m in state.metrics])
        self.assertEqual(('m', 't'), (state.metrics[0].source, state.metrics[0].timestamp))

    def test_malformed_metrics_are_dropped_with_a_warning(self):
        raw = ('[{"name": "mem.free", "value": 5}, {"name": "cpu.percent", "value": "0.5"},'
               ' {"name": "cpu.frequency", "value": true},'
               ' "cpu.frequency", {"name": "cpu.user.time", "value": "x"},'
               ' {"name": "numa.membw.current", "numa_membw_values": [1]},'
               ' {"name": "cpu.idle.time", "value": 7}]')
        with self.assertLogs(host_state.LOG, 'WARNING') as logs:
            state = self._state(metrics=raw)
        self.assertEqual([('cpu.idle.time', 7)], [(m.name, m.value) for m in state.metrics])
        self.assertEqual(6, len(logs.records))
        self.assertIn("unknown metric type 'mem.free'", logs.output[0])
        with self.assertLogs(host_state.LOG, 'WARNING'):
            self.assertEqual([], self._state(metrics='{not json').metrics)

    def test_metric_without_value_is_kept(self):
        # Nova's MonitorMetric leaves an unreported value unset: numa.membw.* metrics come
        # with per-node values only (DictOfIntegersField: string keys, integer values).
        raw = ('[{"name": "numa.membw.current", "numa_membw_values": {"0": 10, "1": 43.7},'
               ' "source": "s", "timestamp": "t"}, {"name": "cpu.frequency"}]')
        state = self._state(metrics=raw)
        self.assertEqual([host_state.Metric('numa.membw.current', None, 't', 's',
                                            {'0': 10, '1': 43}),
                          host_state.Metric('cpu.frequency', None, None, None)],
                         state.metrics)
        self.assertIsNone(self._state(metrics='[{"name": "cpu.frequency", "value": 1}]')
                          .metrics[0].numa_membw_values)

    def test_record_without_usage_is_ignored(self):
        state = self._state(free_disk_gb=None)
        self.assertEqual(0, state.total_usable_ram_mb)
        self.assertIsNone(state.uuid)

    def test_older_record_does_not_undo_newer_consumption(self):
        state = self._state()
        state.consume_from_request(fakes.fake_spec(memory_mb=1024, vcpus=1, root_gb=10))
        old = _node(updated_at=timeutils.utcnow() - datetime.timedelta(seconds=30))
        state.update(compute=host_refresh.NodeRecord(old, self.conf))
        self.assertEqual(5632 - 1024, state.free_ram_mb)
        newer = _node(updated_at=timeutils.utcnow() + datetime.timedelta(seconds=30),
                      free_ram_mb=4000)
        state.update(compute=host_refresh.NodeRecord(newer, self.conf))
        self.assertEqual(4000, state.free_ram_mb)


class TestConsume(base.TestCase):

    def test_consume_subtracts_ram_disk_vcpus_not_swap(self):
        state = fakes.fake_host_state(free_ram_mb=4096, free_disk_mb=50 * 1024, vcpus_used=1,
                                      num_instances=2, num_io_ops=0)
        state.consume_from_request(fakes.fake_spec(memory_mb=1024, vcpus=2, root_gb=10,
                                                   ephemeral_gb=5, swap=2048))
        self.assertEqual(3072, state.free_ram_mb)
        self.assertEqual(35 * 1024, state.free_disk_mb)
        self.assertEqual(3, state.vcpus_used)
        self.assertEqual((3, 1), (state.num_instances, state.num_io_ops))
        self.assertIsNotNone(state.updated)
        self.assertEqual(state.updated, state.consumed_at)

    def test_ironic_node_is_consumed_whole(self):
        state = ironic_host_manager.IronicNodeState('h', 'n', base.uuids.cell)
        state.vcpus_total = 8
        state.free_ram_mb = 4096
        state.free_disk_mb = 1024
        state.num_instances = 0
        state.consume_from_request(fakes.fake_spec(memory_mb=512, vcpus=1, root_gb=1))
        self.assertEqual((0, 0, 8, 0), (state.free_ram_mb, state.free_disk_mb,
                                        state.vcpus_used, state.num_instances))


class TestNUMAAndPCI(base.TestCase):
    """A record's NUMA topology and PCI pools, consumed by requests and given back."""

    def setUp(self):
        super().setUp()
        self.flags(group='pci', alias=['{"name": "nic", "vendor_id": "8086", '
                                       '"product_id": "1520"}'])
        self.topology = fakes.fake_numa_topology(nodes=2, cpus_per_node=4)
        pools = fakes.fake_pci_stats(self.topology, ('8086', '1520', 0, 2),
                                     ('8086', '1520', 1, 1)).to_device_pools_obj()
        self.state = host_state.HostState('host1', 'node1', base.uuids.cell)
        self.state.update(compute=host_refresh.NodeRecord(_node(
            numa_topology=self.topology._to_json(),
            pci_stats=jsonutils.dumps(pools.obj_to_primitive())), self.conf))

    def _spec(self, extra_specs, **kw):
        return fakes.fake_numa_spec(extra_specs, conf=self.conf, **kw)

    def _usage(self):
        cells = [(set(cell.pinned_cpus), cell.cpu_usage, cell.memory_usage,
                  [(page.size_kb, page.used) for page in cell.mempages])
                 for cell in self.state.numa_topology.cells]
        return (cells, self._pools(), self.state.free_ram_mb, self.state.vcpus_used,
                self.state.num_instances, self.state.num_io_ops)

    def _pools(self):
        return sorted((pool['numa_node'], pool['count']) for pool in self.state.pci_stats.pools)

    def test_record_gives_objects_and_flags_the_row(self):
        self.assertEqual(self.topology._to_json(), self.state.numa_topology._to_json())
        self.assertEqual([(0, 2), (1, 1)], self._pools())
        table = self.state._table
        self.assertEqual({self.state.row}, table.flagged['numa_topology'])
        self.assertEqual({self.state.row}, table.flagged['pci_stats'])

    def test_consume_pins_cpus_and_takes_devices(self):
        spec = self._spec({'hw:numa_nodes': '1', 'hw:cpu_policy': 'dedicated',
                           'pci_passthrough:alias': 'nic:2'}, vcpus=4, memory_mb=1024)
        self.state.consume_from_request(spec)
        cells = self.state.numa_topology.cells
        self.assertEqual([{0, 1, 2, 3}, set()], [set(cell.pinned_cpus) for cell in cells])
        self.assertEqual([1024, 0], [cell.memory_usage for cell in cells])
        self.assertEqual({0: 0, 1: 1, 2: 2, 3: 3}, spec.numa_topology.cells[0].cpu_pinning)
        self.assertEqual([(1, 1)], self._pools())  # the two devices of the instance's cell

    def test_unconsume_gives_back_exactly_what_a_failed_request_took(self):
        before = self._usage()
        spec = self._spec({'hw:numa_nodes': '1', 'hw:cpu_policy': 'dedicated',
                           'pci_passthrough:alias': 'nic:1'}, vcpus=2, memory_mb=512)
        self.state.consume_from_request(spec)
        first = self._usage()
        self.state.consume_from_request(spec)
        self.assertNotEqual(first, self._usage())
        self.state.unconsume_from_request(spec)
        self.assertEqual(first, self._usage())
        self.state.unconsume_from_request(spec)
        self.assertEqual(before, self._usage())
        self.state.unconsume_from_request(spec)  # nothing left to give back
        self.assertEqual(before, self._usage())

    def test_emptied_pools_come_back(self):
        spec = self._spec({'pci_passthrough:alias': 'nic:3'})
        self.state.consume_from_request(spec)
        self.assertEqual([], self._pools())
        self.state.unconsume_from_request(spec)
        self.assertEqual([(0, 2), (1, 1)], self._pools())
        self.assertEqual({self.state.row}, self.state._table.flagged['pci_stats'])

    def _pool_order(self):
        return [(pool['numa_node'], pool['count']) for pool in self.state.pci_stats.pools]

    def test_a_topology_that_no_longer_fits_is_dropped_as_nova_drops_it(self):
        # Nova's _locked_consume_from_request: the fit's None becomes the request's
        # topology, the host's NUMA usage is left alone, the PCI requests are applied with
        # no NUMA cells and the I/O operation is counted.
        spec = self._spec({'hw:numa_nodes': '1', 'hw:cpu_policy': 'dedicated',
                           'pci_passthrough:alias': 'nic:1'}, vcpus=4)
        self.state.consume_from_request(spec)  # cell 0, a node-0 device
        self.state.consume_from_request(spec)  # cell 1, the node-1 device
        self.assertEqual([(0, 1)], self._pools())
        full = [set(cell.pinned_cpus) for cell in self.state.numa_topology.cells]
        self.assertEqual([{0, 1, 2, 3}, {4, 5, 6, 7}], full)
        io_ops = self.state.num_io_ops
        self.state.consume_from_request(spec)  # both cells are pinned full: no fit
        self.assertIsNone(spec.numa_topology)
        self.assertEqual(full, [set(cell.pinned_cpus) for cell in self.state.numa_topology.cells])
        self.assertEqual([], self._pools())  # taken with no NUMA cell to match
        self.assertEqual(io_ops + 1, self.state.num_io_ops)

    def test_a_failed_fit_is_given_back_with_the_rest(self):
        before = self._usage()
        spec = self._spec({'hw:numa_nodes': '1', 'hw:cpu_policy': 'dedicated',
                           'pci_passthrough:alias': 'nic:1'}, vcpus=4)
        for _ in range(3):
            self.state.consume_from_request(spec)
        for _ in range(3):
            self.state.unconsume_from_request(spec)
        self.assertEqual(before, self._usage())
        self.assertEqual([(0, 2), (1, 1)], self._pool_order())

    def test_emptied_pools_come_back_in_the_reported_order(self):
        # Nova rebuilds the pools from the compute's record for every request, so the next
        # request starts from the reported order: a pool emptied and given back goes back
        # to its place, not to the end of the list.
        self.assertEqual([(0, 2), (1, 1)], self._pool_order())
        # An earlier request's consumption stays: the state is not rebuilt from its record.
        self.state.consume_from_request(self._spec({}))
        spec = self._spec({'pci_passthrough:alias': 'nic:2'})
        self.state.consume_from_request(spec)  # empties the node-0 pool, which is dropped
        self.assertEqual([(1, 1)], self._pool_order())
        self.state.unconsume_from_request(spec)
        self.assertEqual([(0, 2), (1, 1)], self._pool_order())
        # The next request takes from the node-0 pool first, as Nova's would.
        self.state.consume_from_request(self._spec({'pci_passthrough:alias': 'nic:1'}))
        self.assertEqual([(0, 1), (1, 1)], self._pool_order())

    def test_pools_given_back_in_any_order_keep_the_reported_order(self):
        self.state.consume_from_request(self._spec({}))  # stays (see above)
        first = self._spec({'pci_passthrough:alias': 'nic:2'})
        second = self._spec({'pci_passthrough:alias': 'nic:1'})
        self.state.consume_from_request(first)   # node 0 emptied
        self.state.consume_from_request(second)  # node 1 emptied
        self.assertEqual([], self._pool_order())
        self.state.unconsume_from_request(second)
        self.state.unconsume_from_request(first)
        self.assertEqual([(0, 2), (1, 1)], self._pool_order())


class TestHostStateTable(base.TestCase):

    def test_states_share_columns_and_rows_are_reused(self):
        table = host_state.HostStateTable(capacity=2)
        states = [host_state.HostState('h%d' % i, 'n', None, table=table) for i in range(5)]
        for i, state in enumerate(states):
            state.free_ram_mb = i * 100
        self.assertEqual([0, 100, 200, 300, 400],
                         table.columns['free_ram_mb'][table.rows()].tolist())
        states[1].release()
        self.assertEqual([0, 2, 3, 4], table.rows().tolist())
        reused = host_state.HostState('new', 'n', None, table=table)
        self.assertEqual(1, reused.row)
        self.assertEqual(0, reused.free_ram_mb)  # a reused row starts from Nova's defaults

    def test_nullable_columns_read_back_as_none(self):
        state = host_state.HostState('h', 'n', None)
        self.assertIsNone(state.hypervisor_version)
        self.assertIsNone(state.ram_allocation_ratio)
        state.hypervisor_version = 2000
        self.assertEqual(2000, state.hypervisor_version)


class TestTrackedAttributes(base.TestCase):
    """HostStateTable.flagged follows assignments of aggregates, NUMA topologies and PCI
    stats (these: only stats with device pools)."""

    def test_flags_follow_assignments_and_release(self):
        table = host_state.HostStateTable(capacity=4)
        a = fakes.fake_host_state('a', table=table)
        b = fakes.fake_host_state('b', table=table)
        self.assertEqual(set(), table.flagged['aggregates'])
        a.aggregates = [fakes.fake_aggregate(hosts=['a'])]
        a.pci_stats = pci_stats.PciDeviceStats(None)
        b.pci_stats = pci_stats.PciDeviceStats(None, stats=objects.PciDevicePoolList(objects=[
            objects.PciDevicePool(vendor_id='8086', product_id='1520', count=2, tags={})]))
        self.assertEqual({a.row}, table.flagged['aggregates'])
        self.assertEqual({b.row}, table.flagged['pci_stats'])
        a.update(aggregates=[])
        self.assertEqual(set(), table.flagged['aggregates'])
        self.assertEqual([], a.aggregates)
        b.release()
        self.assertEqual(set(), table.flagged['pci_stats'])

    def test_states_with_answers_as_a_scan_of_the_states(self):
        from minisched.scheduler import filters
        from minisched.scheduler.weights import utils
        table = host_state.HostStateTable(capacity=8)
        states = [fakes.fake_host_state('h%d' % i, table=table) for i in range(5)]
        view = filters.RowView(table, table.rows())
        self.assertEqual([], utils.states_with(view, 'aggregates'))
        utils.forget(view)
        states[3].aggregates = [fakes.fake_aggregate(hosts=['h3'])]
        view = filters.RowView(table, table.rows())
        self.assertEqual([(3, states[3])], utils.states_with(view, 'aggregates'))
