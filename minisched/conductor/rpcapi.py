"""Client side of the conductor RPC API (topic ``conductor``): remoted object methods."""
import logging

import oslo_messaging as messaging

from minisched import baserpc
from minisched import rpc

LOG = logging.getLogger(__name__)


class ConductorAPI:
    """Client side of the conductor RPC API.

    The version history before 3.0 belongs to Nova; minisched starts at its 3.0 baseline:
        3.0 - object_class_action_versions, object_action, object_backport_versions
    It doubles as ``MinischedObject.indirection_api`` in processes without DB access.
    """

    VERSION_ALIASES = {name: '3.0' for name in ('liberty', 'mitaka', 'newton', 'ocata')}

    def __init__(self, conf):
        self.conf = conf
        target = messaging.Target(topic='conductor', version='3.0')
        self.client = rpc.get_client(target, version_cap=rpc.version_cap(conf, 'conductor'))
        self.base_rpcapi = baserpc.BaseAPI('conductor', rpc.get_client,
                                           version_cap=rpc.version_cap(conf, 'baseapi'))

    def object_class_action_versions(self, context, objname, objmethod, object_versions,
                                     args, kwargs):
        cctxt = self.client.prepare()
        return cctxt.call(context, 'object_class_action_versions', objname=objname,
                          objmethod=objmethod, object_versions=object_versions,
                          args=args, kwargs=kwargs)

    def object_action(self, context, objinst, objmethod, args, kwargs):
        cctxt = self.client.prepare()
        return cctxt.call(context, 'object_action', objinst=objinst, objmethod=objmethod,
                          args=args, kwargs=kwargs)

    def object_backport_versions(self, context, objinst, object_versions):
        cctxt = self.client.prepare()
        return cctxt.call(context, 'object_backport_versions', objinst=objinst,
                          object_versions=object_versions)

    def wait_until_ready(self, context, early_timeout=10, early_attempts=10):
        """Block until a conductor answers ``ping`` (Nova's start-up wait for compute)."""
        attempt = 0
        while True:
            timeout = early_timeout if attempt < early_attempts else None
            attempt += 1
            try:
                self.base_rpcapi.ping(context, '1.21 GigaWatts', timeout=timeout)
                if attempt > 1:
                    LOG.info('minisched-conductor connection established successfully')
                return
            except messaging.MessagingTimeout:
                LOG.warning('Timed out waiting for minisched-conductor. Is it running? Or did '
                            'this service start before minisched-conductor? Reattempting '
                            'establishment of minisched-conductor connection...')


class ComputeTaskAPI:
    """Client side of the conductor's ``compute_task`` namespace.

    Version history (Nova's numbering; the server is at Nova 34's 1.26):
        1.17 - schedule_and_build_instances with tags
        1.19 - build_instances with request_spec and host_lists
        1.20 - 1.26: migrate_server with host_list, cache_images,
               confirm/revert_snapshot_based_resize, rebuild_instance with
               reimage_boot_volume and target_state, attach_volume: the server answers
               each with NotSupported (minisched.conductor.unsupported); this client
               sends none of them
    """

    def __init__(self, conf):
        target = messaging.Target(topic='conductor', namespace='compute_task', version='1.0')
        self.client = rpc.get_client(target, version_cap=rpc.version_cap(conf, 'conductor'))

    def schedule_and_build_instances(self, context, build_requests, request_specs, image,
                                     admin_password, injected_files, requested_networks,
                                     block_device_mapping, tags=None):
        cctxt = self.client.prepare(version='1.17')
        cctxt.cast(context, 'schedule_and_build_instances', build_requests=build_requests,
                   request_specs=request_specs, image=image, admin_password=admin_password,
                   injected_files=injected_files, requested_networks=requested_networks,
                   block_device_mapping=block_device_mapping, tags=tags)

    def build_instances(self, context, instances, image, filter_properties, admin_password,
                        injected_files, requested_networks, security_groups,
                        block_device_mapping, legacy_bdm=True, request_spec=None,
                        host_lists=None):
        cctxt = self.client.prepare(version='1.19')
        cctxt.cast(context, 'build_instances', instances=instances, image=image,
                   filter_properties=filter_properties, admin_password=admin_password,
                   injected_files=injected_files, requested_networks=requested_networks,
                   security_groups=security_groups, block_device_mapping=block_device_mapping,
                   legacy_bdm=legacy_bdm, request_spec=request_spec, host_lists=host_lists)
