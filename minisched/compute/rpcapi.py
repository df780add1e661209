"""Client side of the compute RPC API (topic ``compute``, directed to ``compute.<host>``)."""
import logging
import threading

import oslo_messaging as messaging

from minisched import context as ms_context
from minisched.objects import service as service_obj
from minisched import rpc
from minisched import version

LOG = logging.getLogger(__name__)

TOPIC = 'compute'
#: The compute's second RPC server (Nova's compute RPC 6.5): see ComputeManager.
TOPIC_ALT = 'compute-alt'


class ComputeAPI:
    """Client side of the compute RPC API.

    Version history (Nova's numbering; the server speaks Nova 34's 6.5 and keeps 5.x
    through a second endpoint, as Nova's compute does):
        5.0  - the baseline of the methods minisched implements:
               build_and_run_instance, terminate_instance, soft_delete_instance,
               set_host_enabled
        5.11 - build_and_run_instance takes accel_uuids
        6.0  - 5.x compatibility removed from the client (the same messages at 6.0)
        6.5  - the compute listens on a second topic, ``compute-alt``

    Messages go at 6.0 as Nova 34 sends them, or at the 5.x version of the same message
    when ``[upgrade_levels] compute`` caps the version below 6.0. That option takes a
    version, a release name of :attr:`VERSION_ALIASES`, or ``auto``: the compute RPC
    version of the oldest compute's service version (``minisched.version``), read once
    there is a compute.
    """

    VERSION_ALIASES = {
        'icehouse': '3.23', 'juno': '3.35', 'kilo': '4.0', 'liberty': '4.5',
        'mitaka': '4.11', 'newton': '4.13', 'ocata': '4.13', 'pike': '4.17',
        'queens': '5.0', 'rocky': '5.0', 'stein': '5.1', 'train': '5.3', 'ussuri': '5.11',
        'victoria': '5.12', 'wallaby': '6.0', 'xena': '6.0', 'yoga': '6.0', 'zed': '6.1',
        'antelope': '6.2', 'bobcat': '6.2', 'caracal': '6.3', 'dalmatian': '6.3',
        'epoxy': '6.4', 'flamingo': '6.4', 'gazpacho': '6.5', 'hibiscus': '6.5',
    }

    def __init__(self, conf):
        self.conf = conf
        self._router = None
        self._lock = threading.Lock()

    @property
    def router(self):
        """The clients, made at first use: ``auto`` reads the computes' service versions."""
        if self._router is None:
            with self._lock:
                if self._router is None:
                    target = messaging.Target(topic=TOPIC, version='6.0')
                    self._router = rpc.ClientRouter(target, version_cap=self._version_cap())
        return self._router

    def _version_cap(self):
        level = self.conf.upgrade_levels.compute
        if level != 'auto':
            return self.VERSION_ALIASES.get(level, level) or None
        oldest = service_obj.Service.get_minimum_version(ms_context.get_admin_context(),
                                                         'minisched-compute')
        if not oldest:
            # No compute yet: the current version, not kept (a compute may come).
            return version.compute_rpc_version(version.SERVICE_VERSION)
        cap = version.compute_rpc_version(oldest)
        LOG.info('Automatically selected compute RPC version %s from minimum service '
                 'version %d', cap, oldest)
        return cap

    def _ver(self, ctxt, old):
        """6.0 when the cap allows it, else ``old``: the same message under 5.x."""
        return '6.0' if self.router.client(ctxt).can_send_version('6.0') else old

    def build_and_run_instance(self, ctxt, instance, host, image, request_spec,
                               filter_properties, admin_password=None, injected_files=None,
                               requested_networks=None, security_groups=None,
                               block_device_mapping=None, node=None, limits=None,
                               host_list=None, accel_uuids=None):
        if limits is not None and hasattr(limits, 'to_dict'):
            limits = limits.to_dict()
        kwargs = dict(instance=instance, image=image, request_spec=request_spec,
                      filter_properties=filter_properties, admin_password=admin_password,
                      injected_files=injected_files, requested_networks=requested_networks,
                      security_groups=security_groups,
                      block_device_mapping=block_device_mapping, node=node, limits=limits,
                      host_list=host_list, accel_uuids=accel_uuids)
        client = self.router.client(ctxt)
        version = self._ver(ctxt, '5.11')
        if not client.can_send_version(version):
            kwargs.pop('accel_uuids')
            version = '5.0'
        client.prepare(server=host, version=version).cast(ctxt, 'build_and_run_instance',
                                                          **kwargs)

    def terminate_instance(self, ctxt, instance, bdms):
        cctxt = self.router.client(ctxt).prepare(server=instance.host,
                                                 version=self._ver(ctxt, '5.0'))
        cctxt.cast(ctxt, 'terminate_instance', instance=instance, bdms=bdms)

    def soft_delete_instance(self, ctxt, instance):
        cctxt = self.router.client(ctxt).prepare(server=instance.host,
                                                 version=self._ver(ctxt, '5.0'))
        cctxt.cast(ctxt, 'soft_delete_instance', instance=instance)

    def set_host_enabled(self, ctxt, host, enabled):
        """Tell ``host``'s compute that its service was enabled or disabled (it syncs the
        COMPUTE_STATUS_DISABLED trait); its answer, ``'enabled'`` or ``'disabled'``."""
        cctxt = self.router.client(ctxt).prepare(
            server=host, version=self._ver(ctxt, '5.0'),
            call_monitor_timeout=self.conf.rpc_response_timeout,
            timeout=self.conf.long_rpc_timeout)
        return cctxt.call(ctxt, 'set_host_enabled', enabled=enabled)
