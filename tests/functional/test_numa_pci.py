"""NUMA-pinned, huge-page and PCI-passthrough flavors on a real cluster of fake NUMA hosts.

A conductor, a scheduler with two workers (NUMATopologyFilter and PciPassthroughFilter
enabled) and four fake computes run as processes on the real RabbitMQ: one host has what the
flavor asks for (two NUMA nodes with dedicated CPUs, 2 MB huge pages and three NICs), the
others each lack one thing. The flavor lands only on the fitting host; concurrent creates
never pin one host CPU twice or hand one device to two instances; a flavor nothing fits gets
NoValidHost with the count of each filter's rejections in its fault.
"""
import pytest

from minisched import objects
from minisched.objects import pci_device_pool
from tests.functional import build_helpers

pytestmark = [pytest.mark.functional, pytest.mark.timeout(240)]

NIC = '{"vendor_id": "8086", "product_id": "1520"}'
ALIAS = '{"name": "nic", "vendor_id": "8086", "product_id": "1520"}'
FILTERS = ('ComputeFilter,RamFilter,CoreFilter,DiskFilter,PciPassthroughFilter,'
           'NUMATopologyFilter')
RATIOS = {'ram_allocation_ratio': 1.0, 'cpu_allocation_ratio': 1.0,
          'disk_allocation_ratio': 1.0, 'reserved_host_memory_mb': 0}
SIZES = {'vcpus': 16, 'memory_mb': 16384, 'local_gb': 100}
HUGE = ['2048:2048']  # 4 GB of 2 MB pages on each of the two nodes
NICS = ('[{"vendor_id": "8086", "product_id": "1520", "count": 2, "numa_node": 0}, '
        '{"vendor_id": "8086", "product_id": "1520", "count": 1, "numa_node": 1}]')


def _compute(numa_nodes=2, hugepages=HUGE, pci_devices=NICS):
    fake = {'numa_nodes': numa_nodes, 'cpu_threads': 2}
    if hugepages:
        fake['hugepages'] = ','.join(hugepages)
    if pci_devices:
        fake['pci_devices'] = pci_devices
    return dict(SIZES, conf={'fake_driver': fake, 'pci': {'device_spec': NIC}})


#: Only ``fits`` has everything the flavor asks for.
COMPUTES = {'fits': _compute(), 'no-nics': _compute(pci_devices=None),
            'no-pages': _compute(hugepages=None), 'flat': _compute(numa_nodes=0)}
#: Two pinned CPUs, 1024 MB of huge pages per NUMA node, and one NIC.
PINNED = {'hw:numa_nodes': '2', 'hw:cpu_policy': 'dedicated', 'hw:mem_page_size': 'large',
          'pci_passthrough:alias': 'nic:1'}
#: The host has 3 NICs (and room for 4 instances by CPUs and pages): 3 fit.
CAPACITY = 3


@pytest.fixture
def client(request, cluster):
    # The API side (the test) reads [pci] alias from the shared config, as nova-api does.
    with open(cluster.conf_file, 'a') as conf:
        conf.write('\n[pci]\nalias = %s\n' % ALIAS)
    build_helpers.start(cluster, COMPUTES, compute_conf={'DEFAULT': RATIOS},
                        scheduler_conf={'filter_scheduler': {'enabled_filters': FILTERS}})
    client = build_helpers.Client(cluster)
    request.addfinalizer(client.close)
    return client


def _pinned_cpus(instance):
    return {cpu for cell in instance.numa_topology.cells for cpu in cell.cpu_pinning.values()}


def _free_devices(node):
    return sum(pool.count for pool in pci_device_pool.from_pci_stats(node['pci_stats']))


def _node_usage(client, host):
    node = client.nodes()[host]
    topology = objects.NUMATopology.obj_from_db_obj(node['numa_topology'])
    return {cpu for cell in topology.cells for cpu in cell.pinned_cpus}, node


def test_pinned_huge_page_pci_flavor_lands_only_on_the_fitting_host(client):
    flavor = client.flavor('pinned', vcpus=4, memory_mb=2048, root_gb=1, extra_specs=PINNED)
    uuid, = client.boot(flavor)
    instance = client.wait_built([uuid], timeout=90)[uuid]
    assert (instance.vm_state, instance.host) == ('active', 'fits')
    cells = instance.numa_topology.cells
    assert [cell.pagesize for cell in cells] == [2048, 2048]
    assert [len(cell.cpu_pinning) for cell in cells] == [2, 2]
    assert len(instance.pci_devices) == 1
    pinned, node = _node_usage(client, 'fits')
    assert pinned == _pinned_cpus(instance)
    assert _free_devices(node) == 2  # of 3


def test_concurrent_creates_never_overcommit_pinned_cpus_or_devices(client):
    flavor = client.flavor('pinned', vcpus=4, memory_mb=2048, root_gb=1, extra_specs=PINNED)
    uuids = client.boot_concurrently(flavor, threads=4, each=3)

    built = client.wait_built(uuids, timeout=150)
    active = [inst for inst in built.values() if inst.vm_state == 'active']
    assert len(active) == CAPACITY
    assert {inst.host for inst in active} == {'fits'}
    for uuid, inst in built.items():
        if inst.vm_state == 'error':
            fault = client.faults(uuid)
            assert fault and ('No valid host was found.' in fault[0] or
                              'Exceeded maximum number of retries.' in fault[0]), fault
    cpus = [_pinned_cpus(inst) for inst in active]
    assert sum(map(len, cpus)) == len(set().union(*cpus)) == 4 * CAPACITY
    devices = [dev.address for inst in active for dev in inst.pci_devices]
    assert len(devices) == len(set(devices)) == CAPACITY
    pinned, node = _node_usage(client, 'fits')
    assert pinned == set().union(*cpus)
    assert node['vcpus_used'] == 4 * CAPACITY and node['memory_mb_used'] == 2048 * CAPACITY
    assert _free_devices(node) == 0


@pytest.mark.parametrize('extra_specs, rejected_by', [
    ({'hw:numa_nodes': '3', 'hw:cpu_policy': 'dedicated'}, 'NUMATopologyFilter rejected 4 of 4'),
    ({'pci_passthrough:alias': 'nic:4'}, 'PciPassthroughFilter rejected 4 of 4'),
    # One NUMA node cannot hold the 3 NICs (2 on node 0, 1 on node 1: legacy affinity).
    ({'hw:mem_page_size': 'large', 'pci_passthrough:alias': 'nic:3'},
     'PciPassthroughFilter rejected 1 of 4, NUMATopologyFilter rejected 3 of 3'),
])
def test_nothing_fits_gets_no_valid_host_with_each_filter_s_count(client, extra_specs,
                                                                    rejected_by):
    flavor = client.flavor('impossible', vcpus=6, memory_mb=1536, root_gb=1,
                           extra_specs=extra_specs)
    uuid, = client.boot(flavor)
    assert client.wait_built([uuid], timeout=60)[uuid].vm_state == 'error'
    fault, = client.faults(uuid)
    assert 'No valid host was found.' in fault and rejected_by in fault, fault


def test_server_create_boots_a_numa_flavor_from_the_command_line(cluster, client):
    cluster.run_manage('flavor', 'create', 'cli-pinned', '--ram', 1024, '--vcpus', 2,
                       '--disk', 1, *[arg for key, value in PINNED.items()
                                      for arg in ('--property', '%s=%s' % (key, value))])
    result = cluster.run_manage('server', 'create', '--flavor', 'cli-pinned', '--wait',
                                '--timeout', 90, timeout=120)
    uuid = result.stdout.split()[0]
    instance = client.get(uuid)
    assert (instance.vm_state, instance.host) == ('active', 'fits'), result.stdout
    assert len(_pinned_cpus(instance)) == 2 and len(instance.pci_devices) == 1
