"""Client side of the scheduler RPC API (topic ``scheduler``)."""
import oslo_messaging as messaging

from minisched import exception
from minisched import rpc

TOPIC = 'scheduler'


class SchedulerAPI:
    """Client side of the scheduler RPC API.

    Version history (Nova's numbering; minisched speaks 4.x):
        4.0 - select_destinations(request_spec, filter_properties) with legacy dicts
        4.1 - update_aggregates, delete_aggregate (fanout casts)
        4.2 - update_instance_info, delete_instance_info, sync_instance_info (fanout casts)
        4.3 - select_destinations takes a RequestSpec (spec_obj)
        4.4 - select_destinations takes instance_uuids
        4.5 - select_destinations takes return_objects and return_alternates

    ``[upgrade_levels] scheduler`` caps the version; the release aliases below map to
    versions.
    """

    VERSION_ALIASES = {
        'grizzly': '2.6', 'havana': '2.9', 'icehouse': '3.0', 'juno': '3.0', 'kilo': '4.2',
        'liberty': '4.2', 'mitaka': '4.3', 'newton': '4.3', 'ocata': '4.3', 'pike': '4.4',
    }

    def __init__(self, conf):
        self.conf = conf
        target = messaging.Target(topic=TOPIC, version='4.0')
        self.client = rpc.get_client(target, version_cap=rpc.version_cap(conf, 'scheduler'))

    def select_destinations(self, ctxt, spec_obj, instance_uuids, return_objects=False,
                            return_alternates=False, dry_run=False):
        """Ask one scheduler worker where to put the instances (a call).

        ``dry_run``: the worker decides as usual but keeps none of the request's
        consumption (``minisched-manage scheduler select``). A minisched extension: sent
        only when True, so that every other call is Nova's message.
        """
        version = '4.5'
        msg_args = {'instance_uuids': instance_uuids, 'spec_obj': spec_obj,
                    'return_objects': return_objects, 'return_alternates': return_alternates}
        if dry_run:
            msg_args['dry_run'] = True
        if not self.client.can_send_version(version):
            if msg_args['return_objects'] or msg_args['return_alternates']:
                raise exception.SelectionObjectsWithOldRPCVersionNotSupported(version=version)
            del msg_args['return_objects']
            del msg_args['return_alternates']
            version = '4.4'
        if not self.client.can_send_version(version):
            del msg_args['instance_uuids']
            version = '4.3'
        if not self.client.can_send_version(version):
            del msg_args['spec_obj']
            msg_args['request_spec'] = spec_obj.to_legacy_request_spec_dict()
            msg_args['filter_properties'] = spec_obj.to_legacy_filter_properties_dict()
            version = '4.0'
        cctxt = self.client.prepare(version=version, timeout=self.conf.long_rpc_timeout,
                                    call_monitor_timeout=self.conf.rpc_response_timeout)
        return cctxt.call(ctxt, 'select_destinations', **msg_args)

    def update_aggregates(self, ctxt, aggregates):
        cctxt = self.client.prepare(fanout=True, version='4.1')
        cctxt.cast(ctxt, 'update_aggregates', aggregates=aggregates)

    def delete_aggregate(self, ctxt, aggregate):
        cctxt = self.client.prepare(fanout=True, version='4.1')
        cctxt.cast(ctxt, 'delete_aggregate', aggregate=aggregate)

    def update_instance_info(self, ctxt, host_name, instance_info):
        cctxt = self.client.prepare(version='4.2', fanout=True)
        cctxt.cast(ctxt, 'update_instance_info', host_name=host_name,
                   instance_info=instance_info)

    def delete_instance_info(self, ctxt, host_name, instance_uuid):
        cctxt = self.client.prepare(version='4.2', fanout=True)
        cctxt.cast(ctxt, 'delete_instance_info', host_name=host_name,
                   instance_uuid=instance_uuid)

    def sync_instance_info(self, ctxt, host_name, instance_uuids):
        cctxt = self.client.prepare(version='4.2', fanout=True)
        cctxt.cast(ctxt, 'sync_instance_info', host_name=host_name,
                   instance_uuids=instance_uuids)
