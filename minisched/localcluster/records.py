"""What ``minisched-cluster`` reads from and writes to its cluster's databases.

The services as the servicegroup API judges them (``wait_until_up`` and ``status``), beside
whether the process that runs each one is alive; and the instances an earlier run of a state
directory left on its fake computes, which no compute runs any more. Call these once the
cluster's config is loaded into this process (objects registered, engines configured).
"""
from oslo_utils import timeutils

from minisched import context
from minisched import objects
from minisched.objects import cell_mapping
from minisched.objects import instance as instance_obj
from minisched.objects import instance_fault
from minisched import servicegroup


def service_name(svc):
    """The name ``minisched-cluster`` gives a service: its host for a compute, else its
    binary's (``conductor``, ``scheduler``)."""
    if svc.binary == 'minisched-compute':
        return svc.host
    return svc.binary.replace('minisched-', '')


def services():
    """``[(Service, up?)]`` from the database, as the servicegroup API judges them."""
    from minisched.config import CONF
    group = servicegroup.API(CONF)
    return [(svc, group.service_is_up(svc))
            for svc in objects.ServiceList.get_all(context.get_admin_context())]


def service_rows(pids, alive):
    """``[binary, host, enabled|disabled, up|down, last report, process]`` of every service
    recorded in the database; the process column says whether the PID recorded for it
    (``pids``: ``{service name: pid}``) still runs (``alive(pid)``)."""
    rows = []
    for svc, is_up in sorted(services(), key=lambda item: (item[0].binary, item[0].host)):
        pid = pids.get(service_name(svc))
        if pid is None:
            process = 'stopped'
        elif alive(pid):
            process = 'running (pid %d)' % pid
        else:
            process = 'stopped (pid %d exited)' % pid
        reported = svc.last_seen_up or svc.updated_at or svc.created_at
        age = ('%d s ago' % timeutils.delta_seconds(reported.replace(tzinfo=None),
                                                    timeutils.utcnow())
               if reported else 'never')
        rows.append([svc.binary, svc.host, 'disabled' if svc.disabled else 'enabled',
                     'up' if is_up else 'down', age, process])
    return rows


def retire_lost_instances():
    """Set ERROR, with a fault, the instances an earlier run left on its fake computes, and
    take them off their hosts; returns how many.

    Called before the services start: every instance then in the databases is an earlier
    run's, and the fake driver keeps none across a restart, so none of them runs anywhere
    (left alone they were listed ACTIVE, and their hosts' usage counted them). With
    Placement their allocations go too: they hold nothing on any host now.
    """
    from minisched.config import CONF
    ctxt = context.get_admin_context()
    placement = None
    if CONF.placement.enabled:
        from minisched.scheduler.client import report
        placement = report.SchedulerReportClient(CONF)
    count = 0
    for cell in cell_mapping.CellMappingList.get_all(ctxt):
        if cell.is_cell0():
            continue
        with context.target_cell(ctxt, cell) as cctxt:
            for inst in instance_obj.InstanceList.get_by_filters(cctxt, {'deleted': False}):
                if not inst.host:
                    continue
                instance_fault.InstanceFault(
                    cctxt, instance_uuid=inst.uuid, code=500, host=inst.host,
                    message='Lost when its fake compute %s stopped (a fake compute keeps no '
                            'instance across a restart)' % inst.host).create()
                inst.vm_state = instance_obj.ERROR
                inst.task_state = None
                inst.power_state = instance_obj.NOSTATE
                inst.host = inst.node = None
                inst.save()
                if placement is not None:
                    placement.delete_allocation_for_instance(ctxt, inst.uuid, force=True)
                count += 1
    return count


#: The cell ``minisched-cluster`` maps its database to (``cell simple_cell_setup``'s name).
CLUSTER_CELL = 'cell1'


def align_cells(transport_url):
    """Point the cluster's cells at what this run starts; ``[line]`` saying what changed.

    The cell mappings live in the API database, which outlives a run: a cell named after
    the vhost of an earlier run (deleted when it stopped), or after the databases of a state
    directory since moved, would send every build where nobody listens. ``cell1`` gets this
    run's ``transport_url`` and the local ``[database]``, cell0 the database beside it (URLs
    compared once formatted: a template that comes out the same is kept). Cells an
    operator added under other names are left alone (``status`` checks their buses).
    """
    from minisched.cmd import manage_cell
    from minisched.db import engines
    ctxt = context.get_admin_context()
    lines = []
    for cell in cell_mapping.CellMappingList.get_all(ctxt):
        if cell.is_cell0():  # its transport URL is never used
            mq, db = None, manage_cell._cell0_default_connection()
        elif cell.name == CLUSTER_CELL:
            mq, db = transport_url, engines.configured_url(engines.MAIN)
        else:
            continue
        changed = []
        if mq and cell.transport_url != mq and manage_cell._mq_url_of(cell) != mq:
            changed.append('transport URL %s (was %s)' % (
                cell_mapping.mask_url(mq), cell_mapping.mask_url(cell.transport_url)))
            cell.transport_url = mq
        if manage_cell._db_url_of(cell) != db:
            changed.append('database %s (was %s)' % (
                cell_mapping.mask_url(db), cell_mapping.mask_url(cell.database_connection)))
            cell.database_connection = db
        if changed:
            cell.save()
            lines.append('Pointed %s at this run: %s.' % (cell.name, '; '.join(changed)))
    return lines
