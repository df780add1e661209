"""The virt driver interface the compute manager talks to, and its loader."""
import abc

from stevedore import driver as stevedore_driver
from stevedore import extension

from minisched import exception

NAMESPACE = 'minisched.compute.driver'


class ComputeDriver(abc.ABC):
    """A hypervisor: reports node resources and runs instances."""

    def __init__(self, conf):
        self.conf = conf

    @abc.abstractmethod
    def init_host(self, host):
        """Prepare the driver for ``host`` (decides the node names)."""

    def check_config(self, host):
        """Raise ConfigInvalid, naming the option, for settings the driver cannot run
        ``host`` with. Called by ``minisched-compute`` before it waits for the conductor, so
        that a bad value stops it at once; must have no side effects."""

    @abc.abstractmethod
    def get_available_nodes(self, refresh=False):
        """Names of the nodes this driver manages."""

    @abc.abstractmethod
    def get_available_resource(self, nodename):
        """Resource dict of ``nodename`` (``{}`` for an unknown node)."""

    @abc.abstractmethod
    def spawn(self, context, instance, image_meta, injected_files, admin_password,
              allocations, network_info=None, block_device_info=None):
        """Create and start ``instance``."""

    @abc.abstractmethod
    def destroy(self, context, instance, network_info=None, block_device_info=None,
                destroy_disks=True):
        """Stop and remove ``instance`` (unknown instances are ignored)."""

    @abc.abstractmethod
    def get_info(self, instance):
        """``InstanceInfo`` with the instance's power state."""

    @abc.abstractmethod
    def list_instances(self):
        """Names (uuids) of the instances the driver runs."""

    def list_instance_uuids(self):
        return self.list_instances()

    def get_num_instances(self):
        return len(self.list_instances())

    def instance_exists(self, instance):
        return instance.uuid in self.list_instance_uuids()

    def reboot(self, context, instance, network_info, reboot_type):
        """Reboot ``instance``; drivers without reboot raise NotImplementedError."""
        raise NotImplementedError()

    def power_off(self, instance, timeout=0, retry_interval=0):
        raise NotImplementedError()

    def power_on(self, context, instance, network_info, block_device_info=None):
        raise NotImplementedError()


def load_compute_driver(conf, name=None):
    """Instantiate the virt driver named by ``[DEFAULT] compute_driver``."""
    name = name or conf.compute_driver
    try:
        mgr = stevedore_driver.DriverManager(NAMESPACE, name, invoke_on_load=True,
                                             invoke_args=(conf,))
    except Exception as exc:
        available = sorted(ext.name for ext in extension.ExtensionManager(NAMESPACE))
        raise exception.VirtDriverNotFound(name=name,
                                           available=', '.join(available) or 'none') from exc
    return mgr.driver
