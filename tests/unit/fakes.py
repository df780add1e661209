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
