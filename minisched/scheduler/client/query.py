"""Query client: what the conductor and compute use to talk to the schedulers."""
from minisched.scheduler import rpcapi


class SchedulerQueryClient:
    """Thin wrapper over :class:`~minisched.scheduler.rpcapi.SchedulerAPI`."""

    def __init__(self, conf):
        self.scheduler_rpcapi = rpcapi.SchedulerAPI(conf)

    def select_destinations(self, context, spec_obj, instance_uuids, return_objects=False,
                            return_alternates=False):
        return self.scheduler_rpcapi.select_destinations(
            context, spec_obj, instance_uuids, return_objects, return_alternates)

    def update_aggregates(self, context, aggregates):
        self.scheduler_rpcapi.update_aggregates(context, aggregates=aggregates)

    def delete_aggregate(self, context, aggregate):
        self.scheduler_rpcapi.delete_aggregate(context, aggregate=aggregate)

    def update_instance_info(self, context, host_name, instance_info):
        self.scheduler_rpcapi.update_instance_info(context, host_name, instance_info)

    def delete_instance_info(self, context, host_name, instance_uuid):
        self.scheduler_rpcapi.delete_instance_info(context, host_name, instance_uuid)

    def sync_instance_info(self, context, host_name, instance_uuids):
        self.scheduler_rpcapi.sync_instance_info(context, host_name, instance_uuids)
