"""Factories with valid defaults for unit tests: host states, flavors, request specs."""
from oslo_utils import timeutils
from oslo_utils.fixture import uuidsentinel as uuids

from minisched import objects
from minisched.objects import flavor as flavor_obj
from minisched.objects import image_meta
from minisched.objects import instance_group as group_obj
from minisched.objects import request_spec
from minisched.scheduler import host_state

objects.register_all()

_HOST_NUMERIC = {
    'total_usable_ram_mb': 8192, 'free_ram_mb': 8192, 'total_usable_disk_gb': 100,
    'disk_mb_used': 0, 'free_disk_mb': 100 * 1024, 'vcpus_total': 8, 'vcpus_used': 0,
    'num_instances': 0, 'num_io_ops': 0, 'failed_builds': 0,
    'ram_allocation_ratio': 1.5, 'cpu_allocation_ratio': 16.0, 'disk_allocation_ratio': 1.0,
}


def fake_service(**kw):
    """A service record as HostState.service holds it (up, enabled)."""
    now = timeutils.utcnow()
    service = {'id': 1, 'host': 'host1', 'binary': 'minisched-compute', 'topic': 'compute',
               'disabled': False, 'disabled_reason': None, 'forced_down': False,
               'report_count': 1, 'last_seen_up': now, 'created_at': now, 'updated_at': now}
    service.update(kw)
    return service


def fake_host_state(host='host1', node=None, cell_uuid=uuids.cell1, table=None, **kw):
    """A HostState with a healthy 8 vCPU / 8 GiB / 100 GB node; override any attribute."""
    state = host_state.HostState(host, node or host, cell_uuid, table=table)
    state.uuid = kw.pop('uuid', getattr(uuids, 'cn_%s_%s' % (host, node or host)))
    state.service = host_state.ReadOnlyDict(fake_service(host=host, **kw.pop('service', {})))
    state.hypervisor_type = 'fake'
    state.hypervisor_version = 1000
    state.supported_instances = [['x86_64', 'fake', 'hvm']]
    for name, value in _HOST_NUMERIC.items():
        setattr(state, name, value)
    for name, value in kw.items():
        setattr(state, name, value)
    return state


def fake_flavor(**kw):
    values = {'id': 1, 'flavorid': '1', 'name': 'm1.small', 'memory_mb': 512, 'vcpus': 1,
              'root_gb': 1, 'ephemeral_gb': 0, 'swap': 0, 'extra_specs': {}}
    values.update(kw)
    return flavor_obj.Flavor(**values)


def fake_group(policy='anti-affinity', members=(), hosts=(), rules=None):
    group = group_obj.InstanceGroup(uuid=uuids.group, policy=policy, members=list(members),
                                    hosts=list(hosts), policies=[policy])
    group._rules = {k: str(v) for k, v in (rules or {}).items()}
    return group


def fake_spec(memory_mb=512, vcpus=1, root_gb=1, ephemeral_gb=0, swap=0, extra_specs=None,
              image_props=None, image_id=None, **kw):
    """A RequestSpec for one instance of a small flavor; keyword args set other fields."""
    flavor = kw.pop('flavor', None) or fake_flavor(
        memory_mb=memory_mb, vcpus=vcpus, root_gb=root_gb, ephemeral_gb=ephemeral_gb,
        swap=swap, extra_specs=extra_specs or {})
    image = image_meta.ImageMeta.from_dict({'properties': image_props or {}})
    if image_id:
        image.id = image_id
    spec = request_spec.RequestSpec(
        flavor=flavor, image=image, num_instances=kw.pop('num_instances', 1),
        project_id=kw.pop('project_id', 'project1'), user_id=kw.pop('user_id', 'user1'),
        instance_uuid=kw.pop('instance_uuid', uuids.instance),
        scheduler_hints=kw.pop('scheduler_hints', {}), ignore_hosts=None, force_hosts=None,
        force_nodes=None, retry=None, limits=None, instance_group=None,
        availability_zone=None, requested_destination=None)
    for name, value in kw.items():
        setattr(spec, name, value)
    return spec


def fake_aggregate(metadata=None, hosts=(), id=1, name=None):
    """An Aggregate with ``metadata`` (e.g. per-aggregate weight multipliers)."""
    return objects.Aggregate(id=id, uuid=getattr(uuids, 'agg%d' % id), name=name or 'agg%d' % id,
                             hosts=list(hosts), metadata=dict(metadata or {}))


class FakeIndirectionAPI:
    """Stands in for the conductor behind ``MinischedObject.indirection_api``; records calls.

    ``calls`` lists ``(kind, objname, method, args, kwargs)``. ``class_results`` and
    ``action_results`` map ``(objname, method)`` to a value, an exception instance (raised) or
    a callable (called with the same arguments as the API method). An action without an entry
    returns ``(updates, None)`` where updates say "nothing left to save", as the conductor's
    answer to a successful ``create``/``save`` does.
    """

    def __init__(self):
        self.calls = []
        self.class_results = {}
        self.action_results = {}
        self.backport_result = None

    @staticmethod
    def _answer(answer, *args):
        if isinstance(answer, BaseException):
            raise answer
        return answer(*args) if callable(answer) else answer

    def object_class_action_versions(self, context, objname, objmethod, object_versions,
                                     args, kwargs):
        self.calls.append(('class', objname, objmethod, tuple(args), dict(kwargs)))
        result = self._answer(self.class_results.get((objname, objmethod)), context, objname,
                              objmethod, object_versions, args, kwargs)
        if hasattr(result, 'obj_reset_changes'):
            result._context = context  # as the RPC serializer does on the way back
        return result

    def object_action(self, context, objinst, objmethod, args, kwargs):
        self.calls.append(('action', objinst.obj_name(), objmethod, tuple(args), dict(kwargs)))
        key = (objinst.obj_name(), objmethod)
        if key in self.action_results:
            return self._answer(self.action_results[key], context, objinst, objmethod, args,
                                kwargs)
        return {'obj_what_changed': set()}, None

    def object_backport_versions(self, context, objinst, object_versions):
        """Record the request; answer ``backport_result`` (a primitive) as an object.

        Without ``backport_result``, ``objinst`` must be an object and is backported here.
        """
        from minisched.objects import base as objects_base
        name = (objinst['minisched_object.name'] if isinstance(objinst, dict)
                else objinst.obj_name())
        self.calls.append(('backport', name, None, (dict(object_versions),), {}))
        if self.backport_result is not None:
            primitive = self._answer(self.backport_result, context, objinst, object_versions)
        else:
            primitive = objinst.obj_to_primitive(target_version=object_versions[name],
                                                 version_manifest=object_versions)
        # The RPC client's serializer turns the returned primitive into an object.
        return objects_base.MinischedObject.obj_from_primitive(primitive, context=context)

    def methods(self, kind=None):
        """``objname.method`` of each recorded call, optionally only of one ``kind``."""
        return ['%s.%s' % (name, method) for k, name, method, _a, _kw in self.calls
                if kind is None or k == kind]


def fake_indirection(test_case):
    """Install a FakeIndirectionAPI for the test's duration and return it."""
    from minisched.objects import base as objects_base
    fake = FakeIndirectionAPI()
    original = objects_base.MinischedObject.indirection_api
    objects_base.MinischedObject.indirection_api = fake
    test_case.addCleanup(setattr, objects_base.MinischedObject, 'indirection_api', original)
    return fake


def fake_retry(*host_nodes, num_attempts=None):
    """SchedulerRetries listing the (host, node) pairs already tried."""
    from minisched.objects import compute_node
    nodes = [compute_node.ComputeNode(host=host, hypervisor_hostname=node)
             for host, node in host_nodes]
    return request_spec.SchedulerRetries(
        num_attempts=num_attempts or len(nodes) + 1,
        hosts=compute_node.ComputeNodeList(objects=nodes))


def fake_instance(uuid, **kw):
    """A bare Instance as host states hold them (uuid plus whatever ``kw`` sets)."""
    from minisched.objects import instance as instance_obj
    return instance_obj.Instance(uuid=uuid, **kw)


def fake_numa_topology(nodes=2, cpus_per_node=4, threads=1, memory_mb_per_node=4096,
                       hugepages=(), shared=None, dedicated=None):
    """A host NUMA topology without usage, as the fake driver builds it; ``shared`` and
    ``dedicated`` (sets of host CPUs) default to every CPU."""
    from minisched.virt import fake
    cpus = set(range(nodes * cpus_per_node))
    return fake.build_numa_topology(
        nodes, threads, nodes * cpus_per_node, nodes * memory_mb_per_node,
        cpus if shared is None else shared, cpus if dedicated is None else dedicated,
        hugepages)


def fake_pci_stats(numa_topology=None, *pools):
    """Scheduler-side PciDeviceStats of pools given as ``(vendor, product, numa_node,
    count)``."""
    from minisched.pci import stats
    return stats.PciDeviceStats(numa_topology, stats=objects.PciDevicePoolList(objects=[
        objects.PciDevicePool(vendor_id=vendor, product_id=product, numa_node=node, count=count,
                              tags={'dev_type': 'type-PCI'})
        for vendor, product, node, count in pools]))


def fake_numa_spec(extra_specs, image_props=None, pci_aliases=(), conf=None, **kw):
    """A RequestSpec whose NUMA topology and PCI requests come from ``extra_specs`` and
    ``image_props`` as the compute API builds them (``conf`` defines ``[pci] alias``)."""
    from minisched.pci import request as pci_request
    from minisched.virt import hardware
    spec = fake_spec(extra_specs=extra_specs, image_props=image_props, **kw)
    spec.numa_topology = hardware.numa_get_constraints(spec.flavor, spec.image)
    spec.pci_requests = (pci_request.get_pci_requests_from_flavor(spec.flavor, conf=conf)
                         if conf is not None else None)
    return spec
