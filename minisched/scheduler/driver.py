"""Scheduler driver base class: what every ``[scheduler] driver`` plugin provides."""
import abc

from minisched.objects import service as service_obj
from minisched.scheduler import plugins
from minisched import servicegroup


class Scheduler(abc.ABC):
    """The base class that all scheduler drivers inherit from."""

    #: minisched has no Placement: every driver takes Nova's non-Placement path.
    USES_ALLOCATION_CANDIDATES = False

    def __init__(self, conf):
        self.conf = conf
        self.host_manager = plugins.load_driver(plugins.HOST_MANAGERS,
                                                conf.scheduler.host_manager, conf)
        self.servicegroup_api = servicegroup.API(conf)

    def run_periodic_tasks(self, context):
        """Manager-driven periodic work (the caching scheduler refreshes its cache here)."""

    def hosts_up(self, context, topic):
        """Hosts of enabled ``topic`` services whose state reports are current."""
        services = service_obj.ServiceList.get_by_topic(context, topic)
        return [svc.host for svc in services if self.servicegroup_api.service_is_up(svc)]

    @abc.abstractmethod
    def select_destinations(self, context, spec_obj, instance_uuids, alloc_reqs_by_rp_uuid,
                            provider_summaries, allocation_request_version=None,
                            return_alternates=False, dry_run=False):
        """Return, per instance, a list of Selections: the chosen host first, then alternates.

        :param spec_obj: the RequestSpec
        :param instance_uuids: uuids of the instances being scheduled (may be None)
        :param alloc_reqs_by_rp_uuid: always None in minisched (no Placement)
        :param provider_summaries: always None in minisched (no Placement)
        :param return_alternates: add up to ``max_attempts - 1`` alternates per instance
        :param dry_run: decide as usual, but keep nothing the request consumed once it is
            answered (a minisched extension)
        :raises NoValidHost: when fewer hosts than instances fit
        """
