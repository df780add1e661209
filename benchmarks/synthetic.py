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


def node_rows(count, seed=0, now=None, spread_seconds=0):
    """``count`` (service row, compute node row) pairs, as the DB layer returns them.

    ``spread_seconds`` > 0 spreads ``updated_at`` (and ``last_seen_up``) over that many seconds
    before ``now``, as reports of a real cluster are; 0 stamps every row with ``now``.
    """
    rng = random.Random(seed)
    base = now or timeutils.utcnow()
    spread = random.Random(seed + 1)
    pairs = []
    for index in range(count):
        now = base - datetime.timedelta(seconds=spread.uniform(0, spread_seconds)) \
            if spread_seconds else base
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
    from minisched.scheduler.replay import offline
    offline.hold(host_manager, ((service, node, cell_uuid, True) for service, node in pairs))


def old_now(minutes=10):
    """A timestamp safely older than the incremental refresh's look-back (rows "unchanged")."""
    return timeutils.utcnow() - datetime.timedelta(minutes=minutes)


def write_db(main_url, pairs, api_url=None, cell_uuid=None, transport_url='none:///',
             first_index=0):
    """Bulk-insert ``pairs`` as service and compute node rows into the cell DB at ``main_url``.

    With ``api_url``: also a cell mapping (``cell_uuid``, pointing at ``main_url``; created
    once) and one host mapping per host, so every host is schedulable. Both schemas must exist
    (``minisched.db.migration.db_sync``). ``first_index`` offsets ids for a second batch.

    The tables are analyzed afterwards (see :func:`analyze`).
    """
    import sqlalchemy as sa
    from sqlalchemy import pool

    from minisched.db.api import models as api_models
    from minisched.db.main import models
    services = [dict(s, id=s['id'] + first_index) for s, _n in pairs]
    nodes = [dict(n, id=n['id'] + first_index, service_id=n['service_id'] + first_index)
             for _s, n in pairs]
    engine = sa.create_engine(main_url, poolclass=pool.NullPool)
    try:
        with engine.begin() as conn:
            conn.execute(models.services.insert(), services)
            conn.execute(models.compute_nodes.insert(), nodes)
        analyze(engine, models.services, models.compute_nodes)
    finally:
        engine.dispose()
    if api_url is None:
        return
    engine = sa.create_engine(api_url, poolclass=pool.NullPool)
    cells = api_models.cell_mappings
    try:
        with engine.begin() as conn:
            cell_id = conn.execute(sa.select(cells.c.id).where(
                cells.c.uuid == cell_uuid)).scalar()
            if cell_id is None:
                cell_id = conn.execute(cells.insert().values(
                    uuid=cell_uuid, name='cell1', transport_url=transport_url,
                    database_connection=main_url, disabled=False)).inserted_primary_key[0]
            conn.execute(api_models.host_mappings.insert(),
                         # As old as the hosts: a fresh mapping is re-read by each refresh.
                         [{'cell_id': cell_id, 'host': s['host'], 'created_at': s['created_at']}
                          for s in services])
        analyze(engine, cells, api_models.host_mappings)
    finally:
        engine.dispose()


def analyze(engine, *tables):
    """Give the planner statistics of ``tables`` after a bulk insert, as a live database has.

    PostgreSQL's autovacuum analyzes a table about a minute after it grew, and InnoDB
    recalculates its statistics once a tenth of the rows changed; a bench that timed queries
    in between would time plans made without statistics. On PostgreSQL those were sequential
    scans of the 10,000-row tables for the refresh's changed-since queries (~2 ms each,
    against 0.04 ms with the indexes). SQLite keeps no statistics unless asked and plans these
    queries on the indexes without them: it is left as it is.
    """
    import sqlalchemy as sa
    dialect = engine.dialect.name
    if dialect not in ('postgresql', 'mysql'):
        return
    keyword = 'ANALYZE TABLE' if dialect == 'mysql' else 'ANALYZE'
    quote = engine.dialect.identifier_preparer.quote
    with engine.begin() as conn:
        for table in tables:
            conn.execute(sa.text('%s %s' % (keyword, quote(table.name))))


#: PCI devices of the synthetic hosts that have some: (vendor_id, product_id).
PCI_DEVICES = (('8086', '1520'), ('10de', '1eb8'))


def numa_pci_rows(count, seed=0, now=None, busy=False):
    """:func:`node_rows` where most hosts also report a NUMA topology with some usage (2 or 4
    cells, 1 or 2 threads per core, some with 2 MB huge pages, pinned CPUs and memory in use)
    and a third report PCI device pools (NICs and GPUs on their NUMA nodes). ``busy``: a
    mostly full cluster, most of each cell's dedicated CPUs pinned and memory used."""
    from minisched.objects import pci_device_pool
    from minisched.virt import fake
    rng = random.Random(seed + 7)
    pairs = node_rows(count, seed, now)
    for _service, node in pairs:
        if rng.random() < 0.15:
            continue  # no NUMA topology, no devices
        nodes = rng.choice((2, 2, 4))
        threads = rng.choice((1, 2))
        cpus = set(range(node['vcpus']))
        hugepages = [(2048, node['memory_mb'] // nodes // 4 // 2)] if rng.random() < 0.5 else []
        topology = fake.build_numa_topology(nodes, threads, node['vcpus'], node['memory_mb'],
                                            cpus, cpus, hugepages)
        least = 0.6 if busy else 0.0
        for cell in topology.cells:
            free = sorted(cell.pcpuset)
            cell.pinned_cpus = set(rng.sample(free, rng.randint(int(least * len(free)),
                                                                len(free))))
            cell.cpu_usage = rng.randint(0, len(cell.cpuset) * 4)
            cell.memory_usage = rng.randint(int(least * cell.memory), cell.memory)
            for pages in cell.mempages[1:]:
                pages.used = rng.randint(0, pages.total)
        node['numa_topology'] = topology._to_json()
        if rng.random() < 0.35:
            pools = [pci_device_pool.PciDevicePool(
                vendor_id=vendor, product_id=product, numa_node=rng.randrange(nodes),
                count=rng.randint(0, 4), tags={'dev_type': 'type-PCI'})
                for vendor, product in PCI_DEVICES if rng.random() < 0.7]
            node['pci_stats'] = json.dumps(pci_device_pool.PciDevicePoolList(
                objects=pools).obj_to_primitive())
    return pairs
