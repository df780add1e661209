"""Client side of the compute RPC API (topic ``compute``, directed to ``compute.<host>``)."""
import oslo_messaging as messaging

from minisched import rpc


class ComputeAPI:
    """Client side of the compute RPC API.

    minisched speaks Nova's 5.0 baseline for the methods it implements:
        build_and_run_instance, terminate_instance (casts to the instance's host)
    """

    def __init__(self, conf):
        target = messaging.Target(topic='compute', version='5.0')
        self.router = rpc.ClientRouter(target, version_cap=rpc.version_cap(conf, 'compute'))

    def build_and_run_instance(self, ctxt, instance, host, image, request_spec,
                               filter_properties, admin_password=None, injected_files=None,
                               requested_networks=None, security_groups=None,
                               block_device_mapping=None, node=None, limits=None,
                               host_list=None):
        if limits is not None and hasattr(limits, 'to_dict'):
            limits = limits.to_dict()
        cctxt = self.router.client(ctxt).prepare(server=host, version='5.0')
        cctxt.cast(ctxt, 'build_and_run_instance', instance=instance, image=image,
                   request_spec=request_spec, filter_properties=filter_properties,
                   admin_password=admin_password, injected_files=injected_files,
                   requested_networks=requested_networks, security_groups=security_groups,
                   block_device_mapping=block_device_mapping, node=node, limits=limits,
                   host_list=host_list)

    def terminate_instance(self, ctxt, instance, bdms):
        cctxt = self.router.client(ctxt).prepare(server=instance.host, version='5.0')
        cctxt.cast(ctxt, 'terminate_instance', instance=instance, bdms=bdms)

    def soft_delete_instance(self, ctxt, instance):
        cctxt = self.router.client(ctxt).prepare(server=instance.host, version='5.0')
        cctxt.cast(ctxt, 'soft_delete_instance', instance=instance)
