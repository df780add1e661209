"""The placement bench's data: synthetic compute nodes and the same hosts as Placement's
resource providers.

The hosts are :func:`benchmarks.synthetic.node_rows` with Nova's default allocation ratios
(``initial_cpu_allocation_ratio`` 4.0, ``initial_ram_allocation_ratio`` 1.0,
``initial_disk_allocation_ratio`` 1.0) and their usage scaled to fit them. Each becomes a
root resource provider of the node's uuid and hypervisor hostname, with the VCPU, MEMORY_MB
and DISK_GB inventory a compute reports (512 MB of memory reserved, Nova's
``reserved_host_memory_mb``), and the node's usage as the allocations of one consumer per
host, so that Placement's answer weighs the same free capacity as the host states do.

Loading: the rows go straight into Placement's tables, in bulk, through Placement's own
SQLAlchemy table definitions (``placement.db.sqlalchemy.models``), before the service
starts; through the REST API (two requests per provider, one at a time on SQLite) 10,000
providers took minutes. What was written is read back through the API by the bench
(:func:`check`).

For the build bench with Placement (:func:`deployment`, :func:`sections`, :func:`cpu`,
:func:`wait_providers`): an empty Placement that the fake computes fill themselves.
"""
import contextlib
import datetime
import json
import shutil
import tempfile
import time
import urllib.request

from benchmarks import cluster
from benchmarks import synthetic

#: Nova's initial allocation ratios (vcpu, ram, disk), given to the nodes and inventories.
RATIOS = (4.0, 1.0, 1.0)
#: Nova's ``reserved_host_memory_mb``: reserved in each MEMORY_MB inventory.
RESERVED_MEMORY_MB = 512
#: Placement's ids of the standard resource classes (their place in os-resource-classes).
VCPU, MEMORY_MB, DISK_GB = 0, 1, 2
PROJECT = USER = 'bench-usage'
#: The traits a compute gives its provider (``COMPUTE_STATUS_DISABLED`` while its service is
#: disabled): Nova's and minisched's requests ask for OWNER_NOVA and not the last one.
TRAITS = ('COMPUTE_NODE', 'OWNER_NOVA', 'COMPUTE_STATUS_DISABLED')


def node_rows(count, seed=0):
    """``[(service row, compute node row)]``: :func:`benchmarks.synthetic.node_rows` with
    Nova's default allocation ratios and the usage scaled to fit them."""
    pairs = synthetic.node_rows(count, seed, now=synthetic.old_now(), spread_seconds=600)
    cpu, ram, disk = RATIOS
    for _service, node in pairs:
        # node_rows fills up to 90% of 16 vcpus per core: the same fill of 4.
        node['vcpus_used'] = node['vcpus_used'] * int(cpu) // 16
        node.update(cpu_allocation_ratio=cpu, ram_allocation_ratio=ram,
                    disk_allocation_ratio=disk)
    return pairs


def usage(node):
    """``{resource class id: used}`` of a node (its reserved memory apart)."""
    return {VCPU: node['vcpus_used'],
            MEMORY_MB: max(0, node['memory_mb_used'] - RESERVED_MEMORY_MB),
            DISK_GB: node['local_gb_used']}


def load(db_url, pairs):
    """Write ``pairs`` as providers, inventories and usage into Placement's (synced, empty)
    database at ``db_url``."""
    import sqlalchemy as sa
    from sqlalchemy import pool

    from placement.db.sqlalchemy import models
    now = datetime.datetime.utcnow()
    tables = models.BASE.metadata.tables
    providers, inventories, consumers, allocations = [], [], [], []
    traits = []
    cpu, ram, disk = RATIOS
    for index, (service, node) in enumerate(pairs):
        rp_id = index + 1
        providers.append({'id': rp_id, 'uuid': node['uuid'], 'name': node['hypervisor_hostname'],
                          'generation': 1, 'root_provider_id': rp_id,
                          'parent_provider_id': None, 'created_at': now})
        for rc, total, reserved, ratio in ((VCPU, node['vcpus'], 0, cpu),
                                           (MEMORY_MB, node['memory_mb'],
                                            RESERVED_MEMORY_MB, ram),
                                           (DISK_GB, node['local_gb'], 0, disk)):
            inventories.append({'resource_provider_id': rp_id, 'resource_class_id': rc,
                                'total': total, 'reserved': reserved, 'min_unit': 1,
                                'max_unit': total, 'step_size': 1, 'allocation_ratio': ratio,
                                'created_at': now})
        traits += [{'resource_provider_id': rp_id, 'trait_id': trait_id, 'created_at': now}
                   for trait_id in (1, 2, 3)[:3 if service['disabled'] else 2]]
        consumer = usage_consumer(node)
        consumers.append({'uuid': consumer, 'project_id': 1, 'user_id': 1, 'generation': 1,
                          'created_at': now})
        allocations += [{'resource_provider_id': rp_id, 'consumer_id': consumer,
                         'resource_class_id': rc, 'used': used, 'created_at': now}
                        for rc, used in usage(node).items() if used]
    engine = sa.create_engine(db_url, poolclass=pool.NullPool)
    try:
        with engine.begin() as conn:
            conn.execute(tables['projects'].insert(), [{'id': 1, 'external_id': PROJECT,
                                                        'created_at': now}])
            conn.execute(tables['users'].insert(), [{'id': 1, 'external_id': USER,
                                                     'created_at': now}])
            # Placement adds the other standard traits when it starts.
            conn.execute(tables['traits'].insert(), [
                {'id': index + 1, 'name': name, 'created_at': now}
                for index, name in enumerate(TRAITS)])
            conn.execute(tables['resource_providers'].insert(), providers)
            conn.execute(tables['resource_provider_traits'].insert(), traits)
            conn.execute(tables['inventories'].insert(), inventories)
            conn.execute(tables['consumers'].insert(), consumers)
            conn.execute(tables['allocations'].insert(), allocations)
        synthetic.analyze(engine, *(tables[name] for name in (
            'resource_providers', 'inventories', 'consumers', 'allocations',
            'resource_provider_traits')))
    finally:
        engine.dispose()


def usage_consumer(node):
    """The uuid of the consumer holding a synthetic node's usage (derived from its uuid)."""
    return node['uuid'][:-12] + 'fffffffffff' + node['uuid'][-1]


def request(url, method, path, body=None, version='1.36', raw=False):
    """One call to Placement as the admin (noauth2); ``(status, decoded JSON or None)``
    (``raw``: the body's bytes, undecoded)."""
    from minisched.localcluster import placement
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data=data, method=method, headers={
        'X-Auth-Token': placement.NOAUTH_TOKEN, 'Accept': 'application/json',
        'Content-Type': 'application/json',
        'OpenStack-API-Version': 'placement %s' % version})
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            text = resp.read()
            return resp.status, (text if raw else json.loads(text) if text else None)
    except urllib.error.HTTPError as exc:
        return exc.code, None


def check(url, pairs):
    """What Placement says of the loaded data, checked: every provider there, a sample's
    inventory and usage as written. Raises RuntimeError otherwise."""
    status, body = request(url, 'GET', '/resource_providers')
    if status != 200 or len(body['resource_providers']) != len(pairs):
        raise RuntimeError('Placement lists %s providers, %d were loaded' % (
            len(body['resource_providers']) if body else status, len(pairs)))
    names = {VCPU: 'VCPU', MEMORY_MB: 'MEMORY_MB', DISK_GB: 'DISK_GB'}
    for _service, node in pairs[::max(1, len(pairs) // 5)]:
        _status, inventory = request(url, 'GET', '/resource_providers/%s/inventories'
                                     % node['uuid'])
        _status, used = request(url, 'GET', '/resource_providers/%s/usages' % node['uuid'])
        if inventory['inventories']['VCPU']['total'] != node['vcpus'] or \
                used['usages'] != {names[rc]: n for rc, n in usage(node).items()}:
            raise RuntimeError('provider %s is not as loaded: %s %s' % (
                node['uuid'], inventory, used))


#: The query both schedulers send for the bench's 2 GB flavor (Nova 34's, as it sent it).
CANDIDATES_QUERY = ('/allocation_candidates?limit=%d&resources=DISK_GB%%3A20%%2CMEMORY_MB%%3A'
                    '2048%%2CVCPU%%3A1&root_required=OWNER_NOVA%%2C%%21COMPUTE_STATUS_DISABLED')


def decode_seconds(url, limit, rounds=5):
    """``(median seconds to decode, bytes)`` of Placement's answer to
    :data:`CANDIDATES_QUERY`: scheduler CPU that both schedulers spend on each answer,
    counted in their own time."""
    import statistics
    import time
    status, body = request(url, 'GET', CANDIDATES_QUERY % limit, raw=True)
    if status != 200:
        raise RuntimeError('GET /allocation_candidates answered %s' % status)
    times = []
    for _round in range(rounds):
        start = time.perf_counter()
        json.loads(body)
        times.append(time.perf_counter() - start)
    return statistics.median(times), len(body)


def timed_calls(select, url, warmup, timed, ready, spent=None):
    """``select(request)`` (the chosen host per instance) over ``warmup``, then ``ready()``,
    then over ``timed``, each call timed and its claims given back after it, outside the
    clock. ``spent``: a one-item list summing Placement's seconds, read around each call.
    Returns ``{'total': [s], 'placement': [s] (with spent), 'hosts': [hosts or None],
    'released': claims given back, 'errors': [text]}``."""
    results = {'total': [], 'placement': [], 'hosts': [], 'released': 0, 'errors': []}

    def call(request, record):
        before, start = spent[0] if spent else 0.0, time.perf_counter()
        try:
            chosen = select(request)
        except Exception as exc:  # NoValidHost: counted, not fatal
            chosen = None
            exc = getattr(exc, 'exc_info', (None, exc))[1]  # messaging.ExpectedException
            if record:
                results['errors'].append('%s: %s' % (type(exc).__name__, exc))
        seconds = time.perf_counter() - start
        placement = spent[0] - before if spent else 0.0
        released = release(url, request[1])
        if record:
            results['total'].append(seconds)
            results['placement'].append(placement)
            results['hosts'].append(chosen)
            results['released'] += released
    for request in warmup:
        call(request, False)
    ready()
    for request in timed:
        call(request, True)
    return results


def release(url, consumers):
    """Delete the allocations of ``consumers`` (a request's instances); how many had some."""
    return sum(request(url, 'DELETE', '/allocations/%s' % consumer)[0] == 204
               for consumer in consumers)


# -- a Placement for the build bench ---------------------------------------------------------

@contextlib.contextmanager
def deployment(enabled):
    """A started Placement on SQLite when ``enabled`` (stopped and removed after), else
    None."""
    if not enabled:
        yield None
        return
    from minisched.localcluster import placement
    directory = tempfile.mkdtemp(prefix='minisched-bench-placement-')
    server = placement.PlacementServer(directory)
    try:
        server.write_config()
        server.db_sync()
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


def sections(enabled, server):
    """The ``[placement]`` section of a deployment: none for None (the default left)."""
    if enabled is None:
        return {}
    if server is None:
        return {'placement': {'enabled': False}}
    from minisched.localcluster import placement
    return {'placement': dict(placement.client_options(server.url), enabled=True)}


def cpu(server):
    """``{'placement': callable}``: the CPU of Placement's uWSGI master and workers so far."""
    if server is None:
        return {}
    pid = server.proc.pid
    return {'placement': lambda: sum(cluster.process_cpu_seconds(p)
                                     for p in [pid] + cluster.children(pid))}


def wait_providers(url, computes, timeout=300):
    """Until Placement lists a provider per compute (the computes report them)."""
    deadline = time.monotonic() + timeout
    while True:
        status, body = request(url, 'GET', '/resource_providers')
        if status == 200 and len(body['resource_providers']) >= computes:
            return
        if time.monotonic() > deadline:
            raise RuntimeError('Placement has %s providers of %d computes' % (
                len(body['resource_providers']) if body else status, computes))
        time.sleep(1)
