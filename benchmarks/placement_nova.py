"""Nova 34's own scheduler beside minisched's in the placement bench.

In a spawned process of its own: Nova's configuration (``nova.config.parse_args``) pointed
at the bench's Placement (``[placement] auth_type = admin_token``, the same token), Nova's
main and API databases (two SQLite files) created by Nova's own migrations
(``nova.db.migration.db_sync``) and filled with the very rows of minisched's database (the
same services, now ``nova-compute``, compute nodes with the same uuids, a cell mapping and
a host mapping per host), and the real ``nova.scheduler.manager.SchedulerManager``. Its
``select_destinations`` is called in this process (no RPC: Nova's is not in minisched's
wire format), each call timed, Placement's share measured around Nova's report client's
``get``/``post``/``put``/``delete`` (wrapped here, not changed), and the claims given back
after each call, outside the clock.
"""
import os
import time

from benchmarks import placement_load

#: Nova's default ``[filter_scheduler] enabled_filters`` (Nova 34): both schedulers use them.
FILTERS = ['ComputeFilter', 'ComputeCapabilitiesFilter', 'ImagePropertiesFilter',
           'ServerGroupAntiAffinityFilter', 'ServerGroupAffinityFilter']
CELL_UUID = '7b0bd5c0-1d1b-4c6c-9d1b-5a6f0c1d2e3f'


def write_conf(directory, placement_url, max_results, hosts_seconds=86400):
    from benchmarks import common
    main = 'sqlite:///%s' % os.path.join(directory, 'nova-main.sqlite')
    api = 'sqlite:///%s' % os.path.join(directory, 'nova-api.sqlite')
    path = common.write_conf(os.path.join(directory, 'nova.conf'), {
        'DEFAULT': {'transport_url': 'fake:/', 'service_down_time': hosts_seconds,
                    'state_path': directory, 'debug': False, 'use_stderr': False,
                    'log_file': os.path.join(directory, 'nova-scheduler.log')},
        'database': {'connection': main}, 'api_database': {'connection': api},
        'oslo_messaging_notifications': {'driver': 'noop'},
        'oslo_concurrency': {'lock_path': os.path.join(directory, 'locks')},
        'placement': {'auth_type': 'admin_token', 'endpoint': placement_url,
                      'token': 'admin'},
        'scheduler': {'max_placement_results': max_results,
                      'discover_hosts_in_cells_interval': -1},
        'filter_scheduler': {'enabled_filters': ','.join(FILTERS)}})
    return path, main, api


def fill(main_url, api_url, pairs):
    """Nova's databases: the bench's services and compute nodes, a cell, host mappings."""
    import sqlalchemy as sa
    from sqlalchemy import pool

    from nova.db.api import models as api_models
    from nova.db.main import models
    from nova.objects import service as service_obj
    main_tables, api_tables = models.BASE.metadata.tables, api_models.BASE.metadata.tables
    services = [dict(s, binary='nova-compute', version=service_obj.SERVICE_VERSION)
                for s, _n in pairs]
    nodes = [dict(n) for _s, n in pairs]
    engine = sa.create_engine(main_url, poolclass=pool.NullPool)
    with engine.begin() as conn:
        conn.execute(main_tables['services'].insert(), services)
        conn.execute(main_tables['compute_nodes'].insert(), nodes)
    engine.dispose()
    engine = sa.create_engine(api_url, poolclass=pool.NullPool)
    with engine.begin() as conn:
        cell_id = conn.execute(api_tables['cell_mappings'].insert().values(
            uuid=CELL_UUID, name='cell1', transport_url='fake:/',
            database_connection=main_url, disabled=False)).inserted_primary_key[0]
        conn.execute(api_tables['host_mappings'].insert(),
                     [{'cell_id': cell_id, 'host': s['host'], 'created_at': s['created_at']}
                      for s in services])
    engine.dispose()


def _wrap_report_client(spent, queries):
    """Time every HTTP call of Nova's report client into ``spent[0]``; the allocation
    candidates queries it sends go to ``queries`` (a set)."""
    from nova.scheduler.client import report

    def timed(method):
        def wrapper(self, url, *args, **kwargs):
            if url.startswith('/allocation_candidates?'):
                queries.add(url)
            start = time.perf_counter()
            try:
                return method(self, url, *args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - start
        return wrapper
    for name in ('get', 'post', 'put', 'delete'):
        setattr(report.SchedulerReportClient, name,
                timed(getattr(report.SchedulerReportClient, name)))


def spec(ctxt, request):
    """Nova's RequestSpec of one bench request ``(flavor tuple, instance uuids)``."""
    from nova import objects
    (memory_mb, vcpus, root_gb, ephemeral_gb), uuids = request
    flavor = objects.Flavor(name='bench%d' % memory_mb, flavorid=str(memory_mb),
                            memory_mb=memory_mb, vcpus=vcpus, root_gb=root_gb,
                            ephemeral_gb=ephemeral_gb, swap=0, extra_specs={})
    return objects.RequestSpec(
        ctxt, flavor=flavor, image=objects.ImageMeta.from_dict({'properties': {}}),
        num_instances=len(uuids), project_id='bench', user_id='bench',
        scheduler_hints={}, ignore_hosts=None, force_hosts=None, force_nodes=None,
        retry=None, limits=None, instance_group=None, availability_zone=None,
        requested_destination=None, is_bfv=False, pci_requests=None, numa_topology=None,
        instance_uuid=uuids[0], requested_resources=[])


def work(directory, placement_url, max_results, hosts, warmup, requests, ready):
    """Set Nova up over ``hosts`` synthetic hosts (the seed of minisched's), then time its
    select_destinations over ``requests``; returns
    :func:`benchmarks.placement_load.timed_calls`'s results and ``'queries'``: the
    ``GET /allocation_candidates`` URLs Nova sent."""
    import warnings
    warnings.filterwarnings('ignore')
    from minisched import monkey_patch
    monkey_patch.embed()
    conf_file, main_url, api_url = write_conf(directory, placement_url, max_results)
    from nova import config
    from nova import context as nova_context
    from nova.db import migration
    from nova import objects
    objects.register_all()
    config.parse_args(['nova-scheduler', '--config-file', conf_file])
    migration.db_sync(database='main')
    migration.db_sync(database='api')
    fill(main_url, api_url, placement_load.node_rows(hosts))
    from nova.scheduler import manager
    spent, queries = [0.0], set()
    _wrap_report_client(spent, queries)
    scheduler = manager.SchedulerManager()
    ctxt = nova_context.RequestContext(user_id='bench', project_id='bench', is_admin=True)
    for service, _node in placement_load.node_rows(hosts):
        # What each compute's instance info and periodic sync leave on the scheduler (none
        # of them has an instance; Nova's HostManager.sync_instance_info on a host it
        # knows): without it, Nova reads each candidate's instances from the database, one
        # query per host per request. Its own initial read (a thread) skips known hosts.
        scheduler.host_manager._instance_info[service['host']] = {'instances': {},
                                                                  'updated': True}
    specs = {request[1][0]: spec(ctxt, request) for request in warmup + requests}

    def select(request):
        selections = scheduler.select_destinations(
            ctxt, spec_obj=specs[request[1][0]], instance_uuids=list(request[1]),
            return_objects=True, return_alternates=True)
        return [sel[0].service_host for sel in selections]
    results = placement_load.timed_calls(select, placement_url, warmup, requests, ready,
                                         spent=spent)
    results['queries'] = sorted(queries)
    return results


def run_child(directory, placement_url, max_results, hosts, warmup, requests, queue, start):
    from benchmarks import cluster
    cluster.child_main(queue, start, work, directory, placement_url, max_results, hosts,
                       warmup, requests)
