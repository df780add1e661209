"""Synthetic clusters for the benchmarks: compute node and service rows, and host managers.

Hosts are generated, not real computes: each has a service row and a compute node row with
sizes drawn from a few machine types and a random fill level, so filters pass some hosts and
weighers see varied values. The same seed gives the same cluster.
"""
import datetime
import json
import random
import uuid

from oslo_utils import timeutils

#: (vcpus, memory_mb, local_gb) machine types.
MACHINE_TYPES = ((8, 16384, 200), (16, 65536, 500), (32, 131072, 1000), (64, 262144, 2000))


def node_rows(count, seed=0, now=None):
    """``count`` (service row, compute node row) pairs, as the DB layer returns them."""
    rng = random.Random(seed)
    now = now or timeutils.utcnow()
    pairs = []
    for index in range(count):
        host = 'host%05d' % index
        vcpus, memory_mb, local_gb = rng.choice(MACHINE_TYPES)
        fill = rng.random()
        vcpus_used = int(vcpus * 16 * fill * 0.9)
        memory_used = 512 + int((memory_mb - 512) * fill)
        disk_used = int(local_gb * fill * 0.8)
        instances = int(fill * 30)
        service = {'id': index + 1, 'uuid': str(uuid.UUID(int=rng.getrandbits(128))),
                   'host': host, 'binary': 'minisched-compute', 'topic': 'compute',
                   'report_count': 10, 'disabled': rng.random() < 0.02,
                   'disabled_reason': None, 'last_seen_up': now, 'forced_down': False,
                   'version': 1, 'created_at': now - datetime.timedelta(days=1),
                   'updated_at': now, 'deleted_at': None, 'deleted': 0}
        node = {'id': index + 1, 'uuid': str(uuid.UUID(int=rng.getrandbits(128))),
                'service_id': index + 1, 'host': host, 'hypervisor_hostname': host,
                'vcpus': vcpus, 'memory_mb': memory_mb, 'local_gb': local_gb,
                'vcpus_used': vcpus_used, 'memory_mb_used': memory_used,
                'local_gb_used': disk_used, 'hypervisor_type': 'fake',
                'hypervisor_version': rng.choice((1000, 2000, 3000)),
                'free_ram_mb': memory_mb - memory_used, 'free_disk_gb': local_gb - disk_used,
                'current_workload': 0, 'running_vms': instances, 'cpu_info': '',
                'disk_available_least': local_gb - disk_used, 'host_ip': '10.0.0.1',
                'supported_instances': json.dumps([['x86_64', 'fake', 'hvm']]),
                'metrics': '[]', 'pci_stats': None, 'extra_resources': None,
                'stats': json.dumps({'num_instances': str(instances),
                                     'io_workload': str(rng.randint(0, 10)),
                                     'failed_builds': str(int(rng.random() < 0.05))}),
                'numa_topology': None, 'ram_allocation_ratio': 1.5,
                'cpu_allocation_ratio': 16.0, 'disk_allocation_ratio': 1.0, 'mapped': 1,
                'created_at': now - datetime.timedelta(days=1), 'updated_at': now,
                'deleted_at': None, 'deleted': 0}
        pairs.append((service, node))
    return pairs


def populate(host_manager, pairs, cell_uuid=None):
    """Fill ``host_manager``'s host states straight from rows (no database)."""
    from minisched.scheduler import host_manager as hm_mod
    cell_uuid = cell_uuid or hm_mod.LOCAL_CELL_UUID
    for service, _node in pairs:
        host_manager._services[service['host']] = service
    for _service, node in pairs:
        host_manager._update_node(node, cell_uuid)
    host_manager.cells = host_manager.enabled_cells = [None]
    host_manager._initialized = True
