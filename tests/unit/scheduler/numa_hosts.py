"""Schedulers over NUMA/PCI host states built from compute node records (no database), and
a comparable picture of everything a consumption changes in a host state."""
from oslo_serialization import jsonutils
from oslo_utils import timeutils
from oslo_utils.fixture import uuidsentinel as uuids

from minisched.conf import filter_scheduler as fs_conf
from minisched import context
from minisched import rpc
from minisched.scheduler import filter_scheduler
from minisched.scheduler import host_refresh
from tests.unit import fakes

#: ``[pci] alias`` of the requests built here: ``nic`` devices, and ``nic-near`` ones whose
#: NUMA affinity policy is ``required``.
PCI_ALIASES = ['{"name": "nic", "vendor_id": "8086", "product_id": "1520"}',
               '{"name": "nic-near", "vendor_id": "8086", "product_id": "1520", '
               '"numa_policy": "required"}']

#: The default filters with the NUMA and PCI ones.
NUMA_FILTERS = fs_conf.LEGACY_FILTERS + ['NUMATopologyFilter', 'PciPassthroughFilter']


class NoRefresh(filter_scheduler.FilterScheduler):
    """The FilterScheduler over host states filled by the test (no database)."""

    def _get_all_host_candidates(self, context, spec_obj):
        return self.pipeline.initial(context, spec_obj)


def set_up(test, filters=True):
    """A unit test's scheduler set-up for NUMA/PCI requests: RPC on the fake transport, the
    PCI aliases and (``filters``) NUMA_FILTERS; returns an admin context."""
    rpc.init(test.conf, url='fake://')
    test.addCleanup(rpc.cleanup)
    test.flags(group='pci', alias=PCI_ALIASES)
    if filters:
        test.flags(group='filter_scheduler', enabled_filters=NUMA_FILTERS)
    return context.get_admin_context()


def node_row(index, name, topology, pools, memory_mb=8192, vcpus=8):
    """A compute node row of ``topology`` (a NUMATopology) and PCI ``pools``
    (``(vendor, product, numa_node, count)``), nothing used."""
    now = timeutils.utcnow()
    device_pools = fakes.fake_pci_stats(topology, *pools).to_device_pools_obj()
    return {'id': index, 'uuid': getattr(uuids, 'cn_' + name), 'service_id': index,
            'host': name, 'hypervisor_hostname': name, 'vcpus': vcpus, 'memory_mb': memory_mb,
            'local_gb': 100, 'vcpus_used': 0, 'memory_mb_used': 0, 'local_gb_used': 0,
            'hypervisor_type': 'fake', 'hypervisor_version': 1000, 'free_ram_mb': memory_mb,
            'free_disk_gb': 100, 'current_workload': 0, 'running_vms': 0, 'cpu_info': '',
            'disk_available_least': 100, 'host_ip': '10.0.0.%d' % index,
            'supported_instances': '[["x86_64", "fake", "hvm"]]', 'metrics': '[]',
            'pci_stats': jsonutils.dumps(device_pools.obj_to_primitive()) if pools else None,
            'extra_resources': None, 'stats': '{}', 'numa_topology': topology._to_json(),
            'ram_allocation_ratio': 1.0, 'cpu_allocation_ratio': 1.0,
            'disk_allocation_ratio': 1.0, 'mapped': 1, 'created_at': now, 'updated_at': now,
            'deleted_at': None, 'deleted': 0}


def scheduler(conf, rows, pipeline=filter_scheduler.RowPipeline):
    """A NoRefresh scheduler running ``pipeline`` over host states built from ``rows``."""
    fs = NoRefresh(conf)
    fs.pipeline = pipeline(fs.host_manager)
    hm = fs.host_manager
    for row in rows:
        state = hm.host_state_cls(row['host'], row['hypervisor_hostname'], uuids.cell1,
                                  table=hm.table)
        state.last_record = row
        state.update(compute=host_refresh.NodeRecord(row, conf),
                     service=fakes.fake_service(host=row['host']))
        hm.host_state_map[(row['host'], row['hypervisor_hostname'])] = state
        hm._states_by_host[row['host']].append(state)
    hm.cells = hm.enabled_cells = [None]
    return fs


def numa_usage(topology):
    """Per NUMA cell of ``topology`` (or None): pinned CPUs, shared CPU and memory usage, and
    the pages used of each size."""
    if not topology:
        return None
    return [(sorted(cell.pinned_cpus), cell.cpu_usage, cell.memory_usage,
             [(page.size_kb, page.used) for page in cell.mempages or ()])
            for cell in topology.cells]


def pool_counts(pci_stats):
    """The pools of ``pci_stats`` (or None) in their order, with their counts."""
    return [(pool['vendor_id'], pool['product_id'], pool.get('numa_node'), pool['count'])
            for pool in pci_stats.pools] if pci_stats else []


def picture(state, times=True):
    """What a consumption changes in ``state``, comparable with ``==``: sizes, counters,
    NUMA usage, the PCI pools in their order, the instances and (with ``times``) the times.
    """
    result = {'host': state.host, 'free_ram_mb': state.free_ram_mb,
              'free_disk_mb': state.free_disk_mb, 'vcpus_used': state.vcpus_used,
              'num_instances': state.num_instances, 'num_io_ops': state.num_io_ops,
              'numa': numa_usage(state.numa_topology), 'pools': pool_counts(state.pci_stats),
              'instances': sorted(state.instances)}
    if times:
        result.update(updated=state.updated, consumed_at=state.consumed_at)
    return result


def pictures(fs, times=True):
    return [picture(state, times)
            for _key, state in sorted(fs.host_manager.host_state_map.items())]


def numa_spec(conf, extra_specs, memory_mb=1024, vcpus=2, num_instances=1, **kw):
    return fakes.fake_numa_spec(extra_specs, conf=conf, memory_mb=memory_mb, vcpus=vcpus,
                                num_instances=num_instances, **kw)
