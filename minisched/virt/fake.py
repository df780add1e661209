"""A fake hypervisor: resources from ``[fake_driver]`` options, instances kept in memory.

Many fake computes with distinct ``host`` names and sizes run side by side on one machine.
Failure and delay injection (``spawn_failure``, ``spawn_delay_seconds``) drive the reschedule
and timeout paths in tests.
"""
import collections
import threading
import time

from oslo_serialization import jsonutils
from oslo_utils import versionutils

from minisched import exception
from minisched.objects import instance as instance_obj
from minisched.virt import driver

InstanceInfo = collections.namedtuple('InstanceInfo', 'state internal_id')


class FakeDriver(driver.ComputeDriver):
    """Keeps instances in a dict; reports usage of what it runs."""

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
            'numa_topology': None,
        }

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
