"""The build floor's endpoints (``benchmarks.floor_server``): a build's messages, no work.

Each stands where a service of the build path stands, on its topic, with Nova's RPC methods
and arguments, and answers at once: the conductor's ``schedule_and_build_instances`` asks the
scheduler for hosts, writes the instance, its ``create`` action and ``schedule`` event, maps
it and drops its build request (one statement each, in the two transactions the conductor
uses), then casts ``build_and_run_instance`` to the chosen host; the compute sends the calls a
build sends (its event's start, the claim's save, the ACTIVE save, its event's finish) and the
scheduler its instance update; the conductor answers each object call with one statement and a
reply of the real size; the scheduler answers ``select_destinations`` with one list of
Selections per instance built once (``echo_endpoints.WireFloorEndpoint``), round the computes.
No checks, no retries, no admission: what is left is what the messages and the rows cost.
"""
import itertools
import threading

import oslo_messaging as messaging
import sqlalchemy as sa
from oslo_serialization import jsonutils
from oslo_utils import timeutils

from benchmarks import echo_endpoints

#: The compute's event of a build (``minisched.compute.build.EVENT``).
BUILD_EVENT = 'compute_build_and_run_instance'


class FloorScheduler(echo_endpoints.WireFloorEndpoint):
    """``select_destinations`` answered with hosts in turn; the instance updates dropped."""

    def __init__(self, conf, hosts):
        super().__init__(conf)
        self._lists = [[self._selection(hosts[(first + n) % len(hosts)], selection)
                        for n, selection in enumerate(self._selections)]
                       for first in range(len(hosts))]
        self._next = itertools.cycle(self._lists).__next__
        self._lock = threading.Lock()

    @staticmethod
    def _selection(host, template):
        chosen = template.obj_clone()
        chosen.service_host = chosen.nodename = host
        return chosen

    def select_destinations(self, ctxt, request_spec=None, filter_properties=None,
                            spec_obj=None, instance_uuids=None, return_objects=False,
                            return_alternates=False):
        count = len(instance_uuids) if instance_uuids else spec_obj.num_instances
        with self._lock:
            lists = [self._next() for _ in range(count)]
        return [chosen if return_alternates else chosen[:1] for chosen in lists]

    def update_instance_info(self, context, host_name, instance_info):
        pass

    def delete_instance_info(self, context, host_name, instance_uuid):
        pass

    def sync_instance_info(self, context, host_name, instance_uuids):
        pass


class Tables:
    """The tables of the floor, and the id of the cell its instances go to (the one cell
    that is not cell0, read once: the conductor remembers a host's cell)."""

    def __init__(self):
        from minisched.db.api import models as api_models
        from minisched.db.main import models
        self.instances = models.instances
        self.nodes = models.compute_nodes
        self.actions = models.instance_actions
        self.events = models.instance_actions_events
        self.mappings = api_models.instance_mappings
        self.build_requests = api_models.build_requests
        self._cells = api_models.cell_mappings
        self._cell_id = None

    def cell_id(self):
        from minisched.db import engines
        from minisched.objects import cell_mapping
        if self._cell_id is None:
            with engines.api_engine().connect() as conn:
                self._cell_id = conn.execute(sa.select(sa.func.min(self._cells.c.id)).where(
                    self._cells.c.uuid != cell_mapping.CELL0_UUID)).scalar()
        return self._cell_id

    def action_id(self, uuid, request_id):
        return sa.select(self.actions.c.id).where(
            self.actions.c.instance_uuid == uuid,
            self.actions.c.request_id == request_id).scalar_subquery()


class FloorComputeTask:
    """The conductor's ``compute_task`` namespace: place, record, cast."""

    target = messaging.Target(namespace='compute_task', version='1.20')

    def __init__(self, conf, tables):
        from minisched.compute import rpcapi as compute_rpcapi
        from minisched.scheduler.client import query
        self.conf = conf
        self.tables = tables
        self.query_client = query.SchedulerQueryClient(conf)
        self.compute_rpcapi = compute_rpcapi.ComputeAPI(conf)

    def schedule_and_build_instances(self, context, build_requests, request_specs, image,
                                     admin_password, injected_files, requested_networks,
                                     block_device_mapping, tags=None):
        from minisched.db import engines
        from minisched.scheduler import utils as scheduler_utils
        started = timeutils.utcnow()
        uuids = [spec.instance_uuid for spec in request_specs]
        host_lists = self.query_client.select_destinations(
            context, request_specs[0], uuids, return_objects=True, return_alternates=True)
        t = self.tables
        for build_request, spec, host_list in zip(build_requests, request_specs, host_lists):
            instance = build_request.instance
            now = timeutils.utcnow()
            values = instance._db_values(instance.obj_get_changes())
            with engines.main_engine().begin() as conn:
                conn.execute(sa.insert(t.instances).values(values))
                action_id = conn.execute(sa.insert(t.actions).values(
                    action='create', instance_uuid=instance.uuid,
                    request_id=context.request_id, user_id=context.user_id,
                    project_id=context.project_id,
                    start_time=now)).inserted_primary_key[0]
                conn.execute(sa.insert(t.events).values(
                    event='schedule', action_id=action_id, start_time=started,
                    finish_time=now, host=self.conf.host, result='Success'))
            with engines.api_engine().begin() as conn:
                conn.execute(sa.update(t.mappings).where(
                    t.mappings.c.instance_uuid == instance.uuid,
                    t.mappings.c.cell_id.is_(None)).values(cell_id=t.cell_id()))
                conn.execute(sa.delete(t.build_requests).where(
                    t.build_requests.c.instance_uuid == instance.uuid))
            instance._context = context
            host_list = list(host_list)
            selection = host_list.pop(0)
            filter_props = spec.to_legacy_filter_properties_dict()
            scheduler_utils.populate_retry(filter_props, instance.uuid,
                                           self.conf.scheduler.max_attempts)
            scheduler_utils.populate_filter_properties(filter_props, selection)
            self.compute_rpcapi.build_and_run_instance(
                context, instance=instance, host=selection.service_host, image=image,
                request_spec=spec, filter_properties=filter_props, admin_password=None,
                injected_files=[], requested_networks=None, security_groups=[],
                block_device_mapping=[], node=selection.nodename, limits=selection.limits,
                host_list=host_list)


class FloorConductor:
    """The conductor's object calls of a build, one statement each."""

    target = messaging.Target(version='3.0')

    def __init__(self, tables):
        self.tables = tables

    def object_class_action_versions(self, context, objname, objmethod, object_versions,
                                     args, kwargs):
        from minisched.db import engines
        t = self.tables
        uuid, event = args[0], args[1]
        now = timeutils.utcnow()
        action_id = t.action_id(uuid, context.request_id)
        if objmethod == 'event_start':
            stmt = sa.insert(t.events).from_select(
                ['event', 'action_id', 'start_time', 'host', 'created_at'],
                sa.select(sa.literal(event), action_id, sa.literal(now),
                          sa.literal(kwargs.get('host')), sa.literal(now)))
        else:
            stmt = sa.update(t.events).where(
                t.events.c.action_id == action_id, t.events.c.event == event,
                t.events.c.host == kwargs.get('host')).values(
                finish_time=now, result='Error' if kwargs.get('exc_val') else 'Success')
        with engines.main_engine().begin() as conn:
            conn.execute(stmt)
        return None

    def object_action(self, context, objinst, objmethod, args, kwargs):
        from minisched.db import engines
        now = timeutils.utcnow()
        if objinst.obj_name() == 'Instance':
            stmt = self._instance_save(objinst, kwargs or {}, now)
        else:  # the claim's ComputeNode.save
            values = {name: jsonutils.dumps(value) if isinstance(value, dict) else value
                      for name, value in objinst.obj_get_changes().items()}
            values['updated_at'] = now
            stmt = sa.update(self.tables.nodes).where(
                self.tables.nodes.c.id == objinst.id).values(values)
        with engines.main_engine().begin() as conn:
            conn.execute(stmt)
        field = objinst.fields['updated_at']
        return {'updated_at': field.to_primitive(objinst, 'updated_at', now),
                'obj_what_changed': set()}, None

    def _instance_save(self, objinst, expected, now):
        t = self.tables
        values = objinst._db_values(objinst.obj_get_changes())
        values['updated_at'] = now
        where = [t.instances.c.uuid == objinst.uuid, t.instances.c.deleted == 0]
        for column in ('vm_state', 'task_state'):
            wanted = expected.get('expected_' + column)
            if isinstance(wanted, (list, tuple)):
                where.append(sa.or_(*[t.instances.c[column].is_(None) if value is None
                                      else t.instances.c[column] == value
                                      for value in wanted]))
            elif wanted is not None:
                where.append(t.instances.c[column] == wanted)
        return sa.update(t.instances).where(*where).values(values)


class FloorCompute:
    """One compute host: a build is its calls and its instance update, sent at once."""

    target = messaging.Target(version='5.0')

    def __init__(self, conf, host, size, node_id):
        from minisched.scheduler.client import query
        self.host = host
        self.query_client = query.SchedulerQueryClient(conf)
        self.node = _node(host, size, node_id)
        self._lock = threading.Lock()

    def build_and_run_instance(self, context, instance, image, request_spec,
                               filter_properties, admin_password=None, injected_files=None,
                               requested_networks=None, security_groups=None,
                               block_device_mapping=None, node=None, limits=None,
                               host_list=None):
        from minisched.objects import instance as instance_obj
        from minisched.objects import instance_action
        events = instance_action.InstanceActionEvent
        events.event_start(context, instance.uuid, BUILD_EVENT, want_result=False,
                           host=self.host)
        instance.host = instance.launched_on = self.host
        instance.node = node
        instance.vm_state = instance_obj.BUILDING
        instance.task_state = instance_obj.SPAWNING
        instance.save(expected_vm_state=instance_obj.BUILDING,
                      expected_task_state=[instance_obj.SCHEDULING, None])
        self._claim(instance.flavor)
        instance.power_state = instance_obj.RUNNING
        instance.vm_state = instance_obj.ACTIVE
        instance.task_state = None
        instance.launched_at = timeutils.utcnow()
        instance.save(expected_task_state=instance_obj.SPAWNING)
        self.query_client.update_instance_info(
            context.elevated(), self.host, instance_obj.InstanceList(objects=[instance]))
        events.event_finish_with_failure(context, instance.uuid, BUILD_EVENT, exc_val=None,
                                         exc_tb=None, want_result=False, host=self.host)

    def _claim(self, flavor):
        """The claim's write of the node: its usage, as the resource tracker's save sends."""
        with self._lock:
            node = self.node
            node.vcpus_used += flavor.vcpus
            node.memory_mb_used += flavor.memory_mb
            node.local_gb_used += flavor.root_gb
            node.free_ram_mb = node.memory_mb - node.memory_mb_used
            node.free_disk_gb = node.local_gb - node.local_gb_used
            node.running_vms += 1
            node.stats = dict(node.stats, num_instances=str(node.running_vms),
                              num_vm_building=str(node.running_vms))
            node.save()


def _node(host, size, node_id):
    """The ComputeNode of a floor compute, with the fields a compute's record has."""
    from minisched import context
    from minisched.objects import compute_node
    from minisched.objects import hv_spec
    from minisched.objects import pci_device_pool
    vcpus, memory_mb, local_gb = size
    node = compute_node.ComputeNode(
        context.get_admin_context(), id=node_id,
        uuid='00000000-0000-4000-8000-%012x' % node_id, service_id=node_id,
        host=host, hypervisor_hostname=host, vcpus=vcpus, memory_mb=memory_mb,
        local_gb=local_gb, vcpus_used=0, memory_mb_used=0, local_gb_used=0,
        hypervisor_type='fake', hypervisor_version=1000, free_ram_mb=memory_mb,
        free_disk_gb=local_gb, current_workload=0, running_vms=0, cpu_info='{}',
        disk_available_least=local_gb, metrics='[]', host_ip='127.0.0.1',
        stats={'num_instances': '0', 'num_proj_bench': '0', 'io_workload': '0'},
        numa_topology=None, cpu_allocation_ratio=16.0, ram_allocation_ratio=1.5,
        disk_allocation_ratio=1.0, mapped=1,
        supported_hv_specs=[hv_spec.HVSpec(arch='x86_64', hv_type='fake', vm_mode='hvm')],
        pci_device_pools=pci_device_pool.PciDevicePoolList(objects=[]))
    node.obj_reset_changes(recursive=True)
    return node
