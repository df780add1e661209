"""A fake hypervisor: resources from ``[fake_driver]`` options, instances kept in memory.

Many fake computes with distinct ``host`` names and sizes run side by side on one machine.
A fake host can also report a NUMA topology (cells, CPUs and their siblings, memory, huge
pages; ``[compute] cpu_dedicated_set``/``cpu_shared_set`` split the CPUs as on libvirt) and
PCI devices, so that pinned, huge-page and PCI-passthrough flavors can be scheduled and
claimed. Failure and delay injection (``spawn_failure``, ``spawn_delay_seconds``) drive the
reschedule and timeout paths in tests.
"""
import collections
import threading
import time

import os_resource_classes as orc
from oslo_serialization import jsonutils
from oslo_utils import versionutils

from minisched import exception
from minisched import objects
from minisched.objects import instance as instance_obj
from minisched.virt import driver
from minisched.virt import hardware

#: Size of a small (regular) memory page, in KB.
SMALL_PAGE_KB = 4

InstanceInfo = collections.namedtuple('InstanceInfo', 'state internal_id')


class FakeDriver(driver.ComputeDriver):
    """Keeps instances in a dict; reports usage of what it runs."""

    #: Nova's FakeDriver's, except ``supports_pcpus``: this one splits its CPUs into shared
    #: (VCPU) and dedicated (PCPU) ones as the libvirt driver does.
    capabilities = {
        'has_imagecache': True,
        'supports_evacuate': True,
        'supports_migrate_to_same_host': False,
        'supports_attach_interface': True,
        'supports_device_tagging': True,
        'supports_tagged_attach_interface': True,
        'supports_tagged_attach_volume': True,
        'supports_extend_volume': True,
        'supports_multiattach': True,
        'supports_trusted_certs': True,
        'supports_pcpus': True,
        'supports_accelerators': True,
        'supports_remote_managed_ports': True,
        'supports_address_space_passthrough': True,
        'supports_address_space_emulated': True,
        'supports_stateless_firmware': True,
        'supports_virtio_fs': True,
        'supports_mem_backing_file': True,
        'supports_image_type_raw': True,
        'supports_image_type_vhd': False,
    }

    def __init__(self, conf):
        super().__init__(conf)
        self.instances = {}
        self._nodes = []
        self._sizes = (conf.fake_driver.vcpus, conf.fake_driver.memory_mb,
                       conf.fake_driver.local_gb)
        self._spawned_once = set()
        self._lock = threading.Lock()

    def init_host(self, host):
        opts = self.conf.fake_driver
        self._nodes = list(opts.nodes) or ['fake-mini' if host == 'compute' else host]
        self._sizes = (opts.vcpus, opts.memory_mb, opts.local_gb)
        if host in opts.host_sizes:
            try:
                self._sizes = tuple(int(x) for x in opts.host_sizes[host].split('/'))
                assert len(self._sizes) == 3
            except (ValueError, AssertionError):
                raise exception.ConfigInvalid(reason='[fake_driver] host_sizes for %s must be '
                                              'vcpus/memory_mb/local_gb, got %r' %
                                              (host, opts.host_sizes[host]))
        # Checked now, so that a bad value stops the service at start-up with its reason.
        self._numa_json = self._numa_topology_json()
        self._pci_json = jsonutils.dumps(pci_devices(opts.pci_devices))

    def check_config(self, host):
        # init_host only reads options into this object: a throwaway copy checks them.
        type(self)(self.conf).init_host(host)

    def get_available_nodes(self, refresh=False):
        return list(self._nodes)

    def _node_usage(self, nodename):
        used = {'vcpus': 0, 'memory_mb': 0, 'local_gb': 0}
        for instance in self.instances.values():
            if instance['node'] != nodename:
                continue
            used['vcpus'] += instance['vcpus']
            used['memory_mb'] += instance['memory_mb']
            used['local_gb'] += instance['local_gb']
        return used

    def get_available_resource(self, nodename):
        if nodename not in self._nodes:
            return {}
        opts = self.conf.fake_driver
        vcpus, memory_mb, local_gb = self._sizes
        used = self._node_usage(nodename)
        cpu_info = {'arch': opts.cpu_arch, 'model': 'Nehalem', 'vendor': 'Intel',
                    'features': ['pge', 'clflush'],
                    'topology': {'cores': 1, 'threads': 1, 'sockets': vcpus}}
        return {
            'vcpus': vcpus,
            'memory_mb': memory_mb,
            'local_gb': local_gb,
            'vcpus_used': used['vcpus'],
            'memory_mb_used': used['memory_mb'],
            'local_gb_used': used['local_gb'],
            'hypervisor_type': opts.hypervisor_type,
            'hypervisor_version': versionutils.convert_version_to_int(opts.hypervisor_version),
            'hypervisor_hostname': nodename,
            'cpu_info': jsonutils.dumps(cpu_info),
            # Unlike Nova's fake (always 0), report real free disk so disk rules mean something.
            'disk_available_least': local_gb - used['local_gb'],
            'supported_instances': [(opts.cpu_arch, opts.hypervisor_type, 'hvm')],
            # Without usage: the resource tracker adds its instances' (as with libvirt).
            'numa_topology': self._numa_json,
            'pci_passthrough_devices': self._pci_json,
        }

    def update_provider_tree(self, provider_tree, nodename, allocations=None):
        """VCPU, MEMORY_MB and DISK_GB as Nova's fake driver reports them, with VCPU and PCPU
        split as the libvirt driver splits them: VCPU from ``[compute] cpu_shared_set`` (all
        CPUs when neither set is configured, none with ``cpu_dedicated_set`` alone), PCPU
        from ``cpu_dedicated_set`` (ratio 1, nothing reserved)."""
        vcpus, memory_mb, local_gb = self._sizes
        inventory = provider_tree.data(nodename).inventory
        ratios = self._get_allocation_ratios(inventory)
        compute = self.conf.compute
        shared, dedicated = _cpu_sets(compute, set(range(vcpus)))
        shared_count = len(shared) if (compute.cpu_shared_set or compute.cpu_dedicated_set) \
            else vcpus
        pcpus = len(dedicated) if compute.cpu_dedicated_set else 0
        result = {}

        def add(rc, total, ratio, reserved):
            result[rc] = {'total': total, 'min_unit': 1, 'max_unit': total, 'step_size': 1,
                          'allocation_ratio': ratio, 'reserved': reserved}
        if shared_count:
            add(orc.VCPU, shared_count, ratios[orc.VCPU], self.conf.reserved_host_cpus)
        if pcpus:
            add(orc.PCPU, pcpus, 1.0, 0)
        if memory_mb:
            add(orc.MEMORY_MB, memory_mb, ratios[orc.MEMORY_MB],
                self.conf.reserved_host_memory_mb)
        if local_gb:
            add(orc.DISK_GB, local_gb, ratios[orc.DISK_GB],
                self._get_reserved_host_disk_gb_from_config())
        provider_tree.update_inventory(nodename, result)

    def _numa_topology_json(self):
        vcpus, memory_mb, _ = self._sizes
        topology = numa_topology(self.conf, vcpus, memory_mb)
        return topology._to_json() if topology is not None else None

    def spawn(self, context, instance, image_meta, injected_files, admin_password,
              allocations, network_info=None, block_device_info=None):
        opts = self.conf.fake_driver
        if opts.spawn_delay_seconds:
            time.sleep(opts.spawn_delay_seconds)
        self._inject_failure(instance, opts.spawn_failure)
        flavor = instance.flavor
        with self._lock:
            self.instances[instance.uuid] = {
                'state': instance_obj.RUNNING, 'node': instance.node,
                'vcpus': flavor.vcpus, 'memory_mb': flavor.memory_mb,
                'local_gb': flavor.root_gb + flavor.ephemeral_gb,
            }

    def _inject_failure(self, instance, mode):
        if mode == 'abort':
            raise exception.BuildAbortException(instance_uuid=instance.uuid,
                                                reason='fake driver told to abort')
        first_time = instance.uuid not in self._spawned_once
        self._spawned_once.add(instance.uuid)
        if mode == 'reschedule' or (mode == 'first_reschedule' and first_time):
            raise exception.ComputeResourcesUnavailable(reason='fake driver told to fail spawn')

    def destroy(self, context, instance, network_info=None, block_device_info=None,
                destroy_disks=True):
        with self._lock:
            self.instances.pop(instance.uuid, None)

    def get_info(self, instance):
        entry = self.instances.get(instance.uuid)
        if entry is None:
            raise exception.InstanceNotFound(instance_id=instance.uuid)
        return InstanceInfo(state=entry['state'], internal_id=instance.uuid)

    def list_instances(self):
        return list(self.instances)

    def power_off(self, instance, timeout=0, retry_interval=0):
        if instance.uuid in self.instances:
            self.instances[instance.uuid]['state'] = instance_obj.SHUTDOWN

    def power_on(self, context, instance, network_info, block_device_info=None):
        if instance.uuid in self.instances:
            self.instances[instance.uuid]['state'] = instance_obj.RUNNING

    def reboot(self, context, instance, network_info, reboot_type):
        self.power_on(context, instance, network_info)


def numa_topology(conf, vcpus, memory_mb):
    """The host NUMA topology ``[fake_driver]`` and ``[compute]`` describe (no usage), or
    None with ``numa_nodes = 0``. Raises ConfigInvalid for sizes that cannot be split."""
    opts = conf.fake_driver
    nodes, threads = opts.numa_nodes, opts.cpu_threads
    if not nodes:
        return None
    if vcpus % (nodes * threads) or memory_mb % nodes:
        raise exception.ConfigInvalid(reason=(
            '[fake_driver] vcpus (%d) must be a multiple of numa_nodes * cpu_threads (%d) '
            'and memory_mb (%d) a multiple of numa_nodes (%d)' % (
                vcpus, nodes * threads, memory_mb, nodes)))
    shared, dedicated = _cpu_sets(conf.compute, set(range(vcpus)))
    hugepages = _hugepages(opts.hugepages)
    if memory_mb // nodes * 1024 < sum(size * count for size, count in hugepages):
        raise exception.ConfigInvalid(reason=(
            '[fake_driver] hugepages %s need more than the %d MB of a NUMA node' % (
                ','.join(opts.hugepages), memory_mb // nodes)))
    return build_numa_topology(nodes, threads, vcpus, memory_mb, shared, dedicated, hugepages)


def build_numa_topology(nodes, threads, vcpus, memory_mb, shared, dedicated, hugepages=()):
    """A host NUMA topology without usage: ``vcpus`` CPUs and ``memory_mb`` split evenly over
    ``nodes`` cells (CPUs numbered cell by cell, siblings in consecutive groups of
    ``threads``), ``shared``/``dedicated`` the host CPUs of the cells' ``cpuset`` and
    ``pcpuset``, ``hugepages`` ``[(size_kb, count)]`` on every cell out of its memory."""
    per_node, node_mb = vcpus // nodes, memory_mb // nodes
    small_kb = node_mb * 1024 - sum(size * count for size, count in hugepages)
    cells = []
    for node in range(nodes):
        cpus = set(range(node * per_node, (node + 1) * per_node)) & (shared | dedicated)
        siblings = [set(range(first, first + threads)) & cpus
                    for first in range(node * per_node, (node + 1) * per_node, threads)]
        mempages = [objects.NUMAPagesTopology(size_kb=SMALL_PAGE_KB,
                                              total=small_kb // SMALL_PAGE_KB, used=0,
                                              reserved=0)]
        mempages += [objects.NUMAPagesTopology(size_kb=size, total=count, used=0, reserved=0)
                     for size, count in hugepages]
        cells.append(objects.NUMACell(
            id=node, socket=node, cpuset=cpus & shared, pcpuset=cpus & dedicated,
            memory=node_mb, cpu_usage=0, memory_usage=0, pinned_cpus=set(),
            siblings=[sib for sib in siblings if sib], mempages=mempages,
            network_metadata=objects.NetworkMetadata(physnets=set(), tunneled=False)))
    return objects.NUMATopology(cells=cells)


def _cpu_sets(compute_opts, online):
    """``(shared, dedicated)`` host CPUs, as Nova's libvirt driver splits them."""
    def parse(name):
        spec = getattr(compute_opts, name)
        if not spec:
            return None
        try:
            cpus = hardware.parse_cpu_spec(spec)
        except exception.Invalid as exc:
            raise exception.ConfigInvalid(reason='[compute] %s: %s' % (
                name, exc.format_message()))
        if not cpus <= online:
            raise exception.ConfigInvalid(reason=(
                '[compute] %s names CPUs the host does not have: %s (it has 0-%d)' % (
                    name, sorted(cpus - online), max(online))))
        return cpus

    shared, dedicated = parse('cpu_shared_set'), parse('cpu_dedicated_set')
    if shared is None:
        shared = set() if dedicated is not None else set(online)
    if dedicated is None:
        # Neither set: every CPU serves pinned instances too (Nova's upgrade behaviour).
        dedicated = set(shared) if compute_opts.cpu_shared_set is None else set()
    if shared & dedicated and compute_opts.cpu_shared_set and compute_opts.cpu_dedicated_set:
        raise exception.ConfigInvalid(reason=(
            '[compute] cpu_shared_set and cpu_dedicated_set overlap: %s' %
            sorted(shared & dedicated)))
    return shared, dedicated


def _hugepages(items):
    """``[(size_kb, count)]`` of ``[fake_driver] hugepages``."""
    pages = []
    for item in items:
        try:
            size, count = (int(part) for part in item.split(':'))
            if size <= SMALL_PAGE_KB or count < 0:
                raise ValueError()
        except ValueError:
            raise exception.ConfigInvalid(reason=(
                '[fake_driver] hugepages: %r is not size_kb:count with size_kb > %d' % (
                    item, SMALL_PAGE_KB)))
        pages.append((size, count))
    return pages


def pci_devices(entries):
    """The device dicts a libvirt host would report for ``[fake_driver] pci_devices`` (each
    entry a JSON object, or a list of them)."""
    devices = []
    for position, spec in enumerate(_pci_device_specs(entries)):
        vendor, product, count, numa_node = spec
        for index in range(count):
            address = '0000:%02x:%02x.%d' % (0x81 + position, index // 8, index % 8)
            devices.append({
                'dev_id': 'pci_' + address.replace(':', '_').replace('.', '_'),
                'address': address, 'vendor_id': vendor, 'product_id': product,
                'numa_node': numa_node, 'label': 'label_%s_%s' % (vendor, product),
                'dev_type': 'type-PCI', 'parent_addr': None})
    return devices


def _pci_device_specs(entries):
    """``(vendor_id, product_id, count, numa_node)`` of each device object of ``entries``."""
    for entry in entries:
        try:
            specs = jsonutils.loads(entry)
            for spec in specs if isinstance(specs, list) else [specs]:
                yield _pci_device_spec(spec)
        except (ValueError, KeyError, TypeError) as exc:
            raise exception.ConfigInvalid(reason='[fake_driver] pci_devices %r: %s' % (
                entry, exc))


def _pci_device_spec(spec):
    if not isinstance(spec, dict):
        raise ValueError('not a JSON object')
    unknown = set(spec) - {'vendor_id', 'product_id', 'count', 'numa_node'}
    if unknown:
        raise ValueError('unknown keys %s' % ', '.join(sorted(unknown)))
    count = int(spec.get('count', 1))
    if count < 0:
        raise ValueError('count must not be negative')
    numa_node = spec.get('numa_node')
    return (spec['vendor_id'], spec['product_id'], count,
            None if numa_node is None else int(numa_node))
