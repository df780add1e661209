"""filter_rows must give exactly host_passes' answers; is_noop must only skip sure passes."""
import datetime

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oslo_utils import timeutils

from minisched.scheduler import filters, plugins
from minisched.scheduler import host_state as host_state_mod
from minisched.scheduler.filters import utils
from tests.unit import base, fakes

NOW = datetime.datetime(2024, 5, 1, 12, 0, 0)
RATIOS = st.one_of(st.sampled_from([None, 0.0, -0.0, 0.5, 1.0, 1.5, 16.0]),
                   st.floats(min_value=0.0, max_value=64.0, allow_nan=False))
SMALL = st.integers(min_value=-2 ** 20, max_value=2 ** 20)
SIZE = st.integers(min_value=0, max_value=2 ** 20)
AGGREGATE_VALUES = st.sampled_from(['0.5', '1', '1.5', '2.0', '16', '0', '-1', 'nan', 'bad',
                                    '', '3', '10', ' 4 '])
AGGREGATE_KEYS = st.sampled_from(['ram_allocation_ratio', 'cpu_allocation_ratio',
                                  'disk_allocation_ratio', 'max_io_ops_per_host',
                                  'max_instances_per_host', 'availability_zone', 'ssd',
                                  'filter_tenant_id', 'instance_type', 'hw_architecture'])
ZONES = st.sampled_from([None, '', 'nova', 'az1', 'az2', 'az1, az2'])
WORDS = st.sampled_from(['true', 'false', 'true, false', 'p1', 'p1, p2', 'm1.small',
                         'm1.large, m1.small', 'x86_64', 'aarch64, x86_64'])
HOSTS = ['h0', 'h1', 'h2']
NODES = ['n0', 'n1']
UUIDS = ['11111111-1111-1111-1111-11111111111%d' % i for i in range(4)]
SUPPORTED = st.lists(st.lists(st.sampled_from(['x86_64', 'aarch64', 'kvm', 'qemu', 'hvm',
                                               'xen']), max_size=3), max_size=2)
IMAGE_PROPS = st.fixed_dictionaries({}, optional={
    'hw_architecture': st.sampled_from(['x86_64', 'aarch64', 'AMD64']),
    'img_hv_type': st.sampled_from(['kvm', 'qemu']),
    'hw_vm_mode': st.sampled_from(['hvm', 'xen']),
    'img_hv_requested_version': st.sampled_from(['>= 6.0', '< 7.0, != 6.0.0'])})
EXTRA_SPECS = st.dictionaries(
    st.sampled_from(['ssd', 'aggregate_instance_extra_specs:ssd', 'hw:cpu_policy',
                     'filter_tenant_id', 'gpu', 'hypervisor_type', 'capabilities:gpu',
                     'capabilities:cpu_info:vendor', 'capabilities:cpu_info:topology:cores',
                     'capabilities:stats:gpu', 'hw:maxphysaddr_bits']),
    st.sampled_from(['true', 'false', '<or> true <or> false', 's== true', '<in> ru', 'p1',
                     'fake', 'Intel', '<in> nv', '4', 's>= 40']),
    max_size=3)
CPU_INFOS = st.sampled_from([
    None, '', '{not json', '{"vendor": "Intel", "topology": {"cores": 4}}',
    '{"vendor": "AMD", "maxphysaddr": {"bits": 46}, "topology": {"cores": "4"}}'])
QUERIES = st.sampled_from([None, '[">=", "$free_ram_mb", 1024]', '["in", "$host", "h0", "h2"]',
                           '["not", ["=", "$nodename", "n0"]]',
                           '["and", [">", "$vcpus_total", 4], ["<", "$num_io_ops", 3]]'])

service_st = st.fixed_dictionaries({
    'disabled': st.booleans(),
    'forced_down': st.booleans(),
    # seconds before NOW; 60 is exactly service_down_time
    'last_seen_up': st.one_of(st.none(), st.sampled_from([0, 59.999999, 60, 60.000001, -60,
                                                          -61, 3600]),
                              st.floats(min_value=-200, max_value=200, allow_nan=False)),
    'created_at': st.one_of(st.none(), st.sampled_from([0, 60, 61])),
    'aware': st.booleans(),
})

aggregate_st = st.dictionaries(AGGREGATE_KEYS,
                               st.one_of(AGGREGATE_VALUES, ZONES.filter(bool), WORDS),
                               max_size=3)

host_st = st.fixed_dictionaries({
    'host': st.sampled_from(HOSTS), 'node': st.sampled_from(NODES),
    'total_usable_ram_mb': SIZE, 'free_ram_mb': SMALL,
    'total_usable_disk_gb': st.integers(0, 2 ** 12), 'free_disk_mb': SMALL,
    'vcpus_total': st.integers(0, 128), 'vcpus_used': st.integers(-8, 4096),
    'num_io_ops': st.integers(-1, 20), 'num_instances': st.integers(-1, 60),
    'ram_allocation_ratio': RATIOS, 'cpu_allocation_ratio': RATIOS,
    'disk_allocation_ratio': RATIOS,
    'aggregates': st.lists(aggregate_st, max_size=3),
    'service': service_st,
    'instances': st.lists(st.sampled_from(UUIDS), max_size=3),
    'supported_instances': SUPPORTED,
    'hypervisor_version': st.sampled_from([None, 0, 1000, 6000000, 7001000]),
    'cpu_info': CPU_INFOS,
    'stats': st.dictionaries(st.sampled_from(['gpu', 'ssd']),
                             st.sampled_from(['nvidia', 'true']), max_size=2),
})

spec_st = st.fixed_dictionaries({
    'memory_mb': st.integers(0, 2 ** 20), 'vcpus': st.integers(0, 256),
    'root_gb': st.integers(0, 2 ** 10), 'ephemeral_gb': st.integers(0, 64),
    'swap': st.integers(0, 4096), 'availability_zone': ZONES,
    'retry': st.one_of(st.none(), st.lists(st.tuples(st.sampled_from(HOSTS),
                                                     st.sampled_from(NODES)), max_size=4)),
    'image_props': IMAGE_PROPS, 'extra_specs': EXTRA_SPECS,
    'project_id': st.sampled_from(['p1', 'p2']),
    'flavor_name': st.sampled_from(['m1.small', 'm1.large']),
    'instance_uuid': st.sampled_from(UUIDS),
    'group': st.one_of(st.none(), st.fixed_dictionaries({
        'policy': st.sampled_from(['affinity', 'anti-affinity', 'soft-affinity']),
        'members': st.lists(st.sampled_from(UUIDS), max_size=3),
        'hosts': st.lists(st.sampled_from(HOSTS), max_size=2),
        'rules': st.one_of(st.just({}), st.fixed_dictionaries(
            {'max_server_per_host': st.integers(1, 3)}))})),
    'same_host': st.lists(st.sampled_from(UUIDS), max_size=2),
    'different_host': st.lists(st.sampled_from(UUIDS), max_size=2),
    'query': QUERIES,
})

conf_st = st.fixed_dictionaries({
    'ram': st.sampled_from([0.0, 1.0, 3.0]), 'cpu': st.sampled_from([0.0, 2.0]),
    'disk': st.sampled_from([0.0, 1.5]), 'max_io_ops': st.integers(0, 10),
    'max_instances': st.integers(1, 55), 'zone': st.sampled_from(['nova', 'az1']),
})


def _when(seconds_ago, aware):
    if seconds_ago is None:
        return None
    when = NOW - datetime.timedelta(seconds=seconds_ago)
    return when.replace(tzinfo=datetime.timezone.utc) if aware else when


def _service(values):
    aware = values['aware']
    return {'disabled': values['disabled'], 'forced_down': values['forced_down'],
            'last_seen_up': _when(values['last_seen_up'], aware),
            'created_at': _when(values['created_at'], aware)}


def _build(hosts):
    table = host_state_mod.HostStateTable(capacity=4)
    states = []
    for index, values in enumerate(hosts):
        values = dict(values)
        aggs = [fakes.fake_aggregate(m, id=i) for i, m in enumerate(values.pop('aggregates'))]
        service = _service(values.pop('service'))
        instances = {uuid: fakes.fake_instance(uuid, instance_type_id=int(uuid[-1]) % 2 + 1)
                     for uuid in values.pop('instances')}
        states.append(fakes.fake_host_state(values.pop('host'), node=values.pop('node'),
                                            table=table, aggregates=aggs, service=service,
                                            instances=instances, **values))
    return table, states


def _spec(values):
    values = dict(values)
    tried = values.pop('retry')
    retry = None if tried is None else fakes.fake_retry(*tried)
    group = values.pop('group')
    if group is not None:
        group = fakes.fake_group(**group)
    hints = {name: values.pop(name) for name in ('same_host', 'different_host')}
    query = values.pop('query')
    if query:
        hints['query'] = [query]
    flavor = fakes.fake_flavor(
        name=values.pop('flavor_name'), extra_specs=values.pop('extra_specs'),
        **{name: values.pop(name) for name in ('memory_mb', 'vcpus', 'root_gb',
                                               'ephemeral_gb', 'swap')})
    return fakes.fake_spec(flavor=flavor, retry=retry, instance_group=group,
                           scheduler_hints={k: v for k, v in hints.items() if v}, **values)


def _at_capacity(conf, state):
    """Request sizes right at one host's boundaries, where >= versus > matters."""
    ram = utils.node_ratio(conf, state, 'ram_allocation_ratio')
    cpu = utils.node_ratio(conf, state, 'cpu_allocation_ratio')
    disk = utils.node_ratio(conf, state, 'disk_allocation_ratio')
    total_ram, total_disk = state.total_usable_ram_mb, state.total_usable_disk_gb * 1024
    usable_ram = int(total_ram * ram - (total_ram - state.free_ram_mb))
    free_cpu = int(state.vcpus_total * cpu - state.vcpus_used)
    usable_disk = int(total_disk * disk - (total_disk - state.free_disk_mb))
    return {
        'memory_mb': [total_ram, total_ram + 1, usable_ram, usable_ram + 1, state.free_ram_mb],
        'vcpus': [state.vcpus_total, state.vcpus_total + 1, free_cpu, free_cpu + 1,
                  state.vcpus_total - state.vcpus_used],
        'disk_mb': [total_disk, total_disk + 1, usable_disk, usable_disk + 1,
                    state.free_disk_mb],
    }


def _boundary_spec(values, data, conf, states):
    values = dict(values)
    sizes = _at_capacity(conf, data.draw(st.sampled_from(states)))
    values['memory_mb'] = max(0, data.draw(st.sampled_from(sizes['memory_mb'])))
    values['vcpus'] = max(0, data.draw(st.sampled_from(sizes['vcpus'])))
    disk_mb = max(0, data.draw(st.sampled_from(sizes['disk_mb'])))
    values['root_gb'], values['ephemeral_gb'], values['swap'] = disk_mb // 1024, 0, disk_mb % 1024
    return _spec(values)


def _all_limits(states):
    merged = {}
    for state in states:
        merged.update(state.limits)
    return merged


class TestVectorised(base.TestCase):
    def setUp(self):
        super().setUp()
        timeutils.set_time_override(NOW)
        self.addCleanup(timeutils.clear_time_override)
        self.installed = plugins.installed(plugins.FILTERS)

    def _configure(self, values):
        self.flags(ram_allocation_ratio=values['ram'], cpu_allocation_ratio=values['cpu'],
                   disk_allocation_ratio=values['disk'],
                   default_availability_zone=values['zone'])
        self.flags(group='filter_scheduler', max_io_ops_per_host=values['max_io_ops'],
                   max_instances_per_host=values['max_instances'])

    @settings(max_examples=200, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(hosts=st.lists(host_st, min_size=1, max_size=12), spec=spec_st, config=conf_st,
           order=st.randoms(use_true_random=False), data=st.data())
    def test_filter_rows_equals_host_passes(self, hosts, spec, config, order, data):
        self._configure(config)
        table, states = _build(hosts)
        if data.draw(st.booleans()):
            spec_obj = _boundary_spec(spec, data, self.conf, states)
        else:
            spec_obj = _spec(spec)
        rows = table.rows()
        order.shuffle(rows)  # candidates come in any order
        rows = rows[:order.randint(0, len(rows))]
        vectorised = 0
        for name, cls in sorted(self.installed.items()):
            flt = cls(self.conf)
            view = filters.RowView(table, rows)
            try:
                expected = [flt.host_passes(table.states[row], spec_obj) for row in rows]
            except Exception as exc:  # Nova's quirks raise (e.g. ">= Intel"): so must rows
                if cls.filter_rows is not filters.BaseHostFilter.filter_rows:
                    self.assertRaises(type(exc), flt.filter_rows, view, spec_obj)
                    vectorised += 1
                continue
            for state in states:
                state.limits = {}
            mask = flt.filter_rows(view, spec_obj)
            self.assertEqual({}, _all_limits(states), name)  # filter_rows writes no limits
            if flt.is_noop(spec_obj):
                self.assertTrue(all(expected), name)
            if mask is None:
                continue
            vectorised += 1
            self.assertEqual(bool, np.asarray(mask).dtype, name)
            np.testing.assert_array_equal(np.array(expected, dtype=bool), mask, err_msg=name)
        self.assertGreaterEqual(vectorised, 26)

    @settings(max_examples=50, deadline=None)
    @given(first=st.lists(service_st, min_size=1, max_size=8),
           second=st.lists(service_st, min_size=8, max_size=8),
           replace=st.lists(st.booleans(), min_size=8, max_size=8))
    def test_compute_filter_cache_follows_replaced_records(self, first, second, replace):
        flt = self.installed['ComputeFilter'](self.conf)
        table = host_state_mod.HostStateTable(capacity=2)
        states = [fakes.fake_host_state('h%d' % i, table=table, service=_service(values))
                  for i, values in enumerate(first)]
        view = filters.RowView(table, table.rows())
        spec_obj = fakes.fake_spec()
        for _round in range(2):
            expected = [flt.host_passes(state, spec_obj) for state in states]
            np.testing.assert_array_equal(expected, flt.filter_rows(view, spec_obj))
            for state, values, again in zip(states, second, replace):
                if again:
                    state.update(service=_service(values))
