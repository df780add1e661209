"""What the objects alone cost per ``select_destinations``: CPU in this process, no broker.

The objects are on the hot path of every boot: the API builds a RequestSpec, the conductor
serializes it, the scheduler deserializes it, and the Selections come back the same way.
This bench times each of those steps for two requests, a plain one (a flavor without extra
specs, an image with a few properties) and a NUMA/PCI one (two NUMA nodes, dedicated CPUs, a
PCI alias, an image with ``hw_*`` properties), each for one instance, answered with
``[scheduler] max_attempts`` (3) Selections, NUMA limits included in the NUMA/PCI case. It
also gives the sizes of the primitives, JSON-encoded as the bus carries them (the encoding
is in the serialize and deserialize steps). The wire
profile's renaming is apart (``wire-profile`` bench): this one runs the process's profile,
minisched's by default.
"""
import time

from benchmarks import common

#: Requests timed per figure (after WARMUP).
ROUNDS = 1000
WARMUP = 100
#: Selections per instance: the chosen host and its alternates (``max_attempts``' default).
SELECTIONS = 3
IMAGE_ID = '155d900f-4e14-4e4c-a73d-069cbf4541e6'
#: ``(name, flavor extra specs, image properties)`` of the two requests.
REQUESTS = (
    ('plain', {}, {'os_distro': 'ubuntu', 'os_type': 'linux'}),
    ('NUMA/PCI', {'hw:numa_nodes': '2', 'hw:cpu_policy': 'dedicated',
                  'pci_passthrough:alias': 'nic:1'},
     {'os_distro': 'ubuntu', 'os_type': 'linux', 'hw_architecture': 'x86_64',
      'hw_machine_type': 'q35', 'hw_disk_bus': 'virtio', 'hw_vif_model': 'virtio',
      'hw_rng_model': 'virtio', 'hw_qemu_guest_agent': 'yes'}),
)


def _image(properties):
    return {'id': IMAGE_ID, 'name': 'bench', 'status': 'active', 'container_format': 'bare',
            'disk_format': 'qcow2', 'min_ram': 0, 'min_disk': 0, 'size': 1 << 30,
            'properties': dict(properties)}


def _flavor(extra_specs):
    from minisched.objects import flavor as flavor_obj
    return flavor_obj.Flavor(id=7, name='bench', flavorid='7', memory_mb=4096, vcpus=4,
                             root_gb=40, ephemeral_gb=0, swap=0, rxtx_factor=1.0,
                             vcpu_weight=0, disabled=False, is_public=True,
                             extra_specs=dict(extra_specs))


def _security_groups():
    from minisched.objects import security_group as security_group_obj
    return security_group_obj.SecurityGroupList(objects=[])


def build_spec(context, conf, flavor, image):
    """A RequestSpec as ``minisched.compute.api.API.create`` builds one for one instance:
    the image checked and read into an ImageMeta, the NUMA and PCI constraints of flavor and
    image, then the spec."""
    from minisched.api.validation import images as images_validation
    from minisched.objects import image_meta as image_meta_obj
    from minisched.objects import request_spec as request_spec_obj
    from minisched.pci import request as pci_request
    from minisched.virt import hardware
    image = dict(images_validation.check_image(image))
    image_meta = image_meta_obj.ImageMeta.from_dict(image)
    numa_topology = hardware.numa_get_constraints(flavor, image_meta)
    policy = hardware.get_pci_numa_policy_constraint(flavor, image_meta)
    pci_requests = pci_request.get_pci_requests_from_flavor(flavor, affinity_policy=policy,
                                                            conf=conf)
    return request_spec_obj.RequestSpec(
        context, flavor=flavor, image=image_meta, num_instances=1,
        numa_topology=numa_topology, pci_requests=pci_requests,
        project_id=context.project_id, user_id=context.user_id, availability_zone=None,
        scheduler_hints={}, instance_uuid='00000000-0000-4000-8000-00000000beef',
        ignore_hosts=None, force_hosts=None, force_nodes=None, retry=None, limits=None,
        requested_destination=None, is_bfv=False, security_groups=_security_groups(),
        instance_group=None)


class _HostState:
    """What ``Selection.from_host_state`` reads of a host state."""

    def __init__(self, index, limits):
        self.uuid = '00000000-0000-4000-8000-%012x' % index
        self.host = self.nodename = 'host%d' % index
        self.cell_uuid = '00000000-0000-4000-8000-000000000000'
        self.limits = limits


def selections(spec):
    """The scheduler's answer for one instance: the host and its alternates, with the
    limits the filters set (the NUMA limits when the spec has a NUMA topology)."""
    from minisched import objects
    from minisched.objects import selection as selection_obj
    answer = []
    for index in range(SELECTIONS):
        limits = {'vcpu': 64, 'memory_mb': 98304, 'disk_gb': 2000}
        if spec.numa_topology:
            limits['numa_topology'] = objects.NUMATopologyLimits(
                cpu_allocation_ratio=16.0, ram_allocation_ratio=1.5)
        answer.append(selection_obj.Selection.from_host_state(_HostState(index, limits)))
    return [answer]


def _cpu(function, rounds):
    """CPU microseconds per call of ``function()`` over ``rounds`` calls; its last result."""
    start = time.process_time()
    for _ in range(rounds):
        result = function()
    return (time.process_time() - start) / rounds * 1e6, result


def measure(context, conf, extra_specs, properties, rounds):
    """``{step: CPU us per request}`` and ``{message: bytes}`` of one request."""
    from oslo_serialization import jsonutils

    from minisched import rpc
    client, server = rpc.get_serializer(), rpc.get_serializer(server_side=True)
    flavor, image = _flavor(extra_specs), _image(properties)
    steps = (
        ('build the RequestSpec (API)', lambda prior: build_spec(context, conf, flavor, image)),
        ('serialize it (client)', lambda spec: jsonutils.dumps(
            client.serialize_entity(context, spec))),
        ('deserialize it (scheduler)', lambda text: server.deserialize_entity(
            context, jsonutils.loads(text))),
        ('build the Selections (scheduler)', selections),
        ('serialize them (scheduler)', lambda answer: jsonutils.dumps(
            server.serialize_entity(context, answer))),
        ('deserialize them (client)', lambda text: client.deserialize_entity(
            context, jsonutils.loads(text))),
    )
    costs, sizes, value = {}, {}, None
    for name, step in steps:
        prior = value
        _cpu(lambda: step(prior), WARMUP)
        costs[name], value = _cpu(lambda: step(prior), rounds)
        if name.startswith('serialize it'):
            sizes['RequestSpec'] = len(value)
        elif name.startswith('serialize them'):
            sizes['Selections'] = len(value)
    return costs, sizes


def run(rounds=ROUNDS, out=None):
    """Figures of both requests: each step's CPU, their total, the primitives' sizes. The
    serialize steps end with the JSON text the bus carries, the deserialize steps start
    from it (the encoding grows with the objects, so it is counted)."""
    from benchmarks import pipeline
    from minisched import context as ms_context
    conf = common.in_process_conf()
    context = ms_context.RequestContext(user_id='bench', project_id='bench', is_admin=True)
    figures = []
    with common.overrides(conf, {'pci': pipeline.numa_conf()['pci']}):
        for kind, extra_specs, properties in REQUESTS:
            costs, sizes = measure(context, conf, extra_specs, properties, rounds)
            for step, cost in costs.items():
                figures.append(common.info('objects, %s: %s' % (kind, step), cost, 'us'))
            total = sum(costs.values())
            figures.append(common.info('objects, %s: per select_destinations' % kind, total,
                                       'us', 'CPU, the six steps, %d rounds' % rounds))
            for message, size in sizes.items():
                figures.append(common.info('objects, %s: %s primitive' % (kind, message),
                                           size, 'bytes', 'JSON-encoded'))
            if out:
                out('   %s: %.0f us per select_destinations; RequestSpec %d bytes, '
                    'Selections %d bytes' % (kind, total, sizes['RequestSpec'],
                                             sizes['Selections']))
    return figures
