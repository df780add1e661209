"""The servicegroup API: join a service to its group, ask whether a service is up."""
import logging

from minisched.servicegroup.drivers import db

LOG = logging.getLogger(__name__)

_DRIVERS = {'db': db.DbDriver}


class API:
    """Facade over the configured driver (``[DEFAULT] servicegroup_driver``)."""

    def __init__(self, conf):
        report_interval = conf.report_interval
        if conf.service_down_time <= report_interval:
            new_down_time = int(report_interval * 2.5)
            LOG.warning('Report interval must be less than service down time. Current config: '
                        '<service_down_time: %(service_down_time)s, report_interval: '
                        '%(report_interval)s>. Setting service_down_time to: %(new)s',
                        {'service_down_time': conf.service_down_time,
                         'report_interval': report_interval, 'new': new_down_time})
            conf.set_override('service_down_time', new_down_time)
        self._driver = _DRIVERS[conf.servicegroup_driver](conf)

    def join(self, member, group, service=None):
        """Start reporting ``service``'s state (``member`` is its host, ``group`` its topic)."""
        return self._driver.join(member, group, service)

    def service_is_up(self, member):
        """True if the service (object or mapping) reported recently and is not forced down."""
        return self._driver.is_up(member)

    def get_updated_time(self, member):
        return self._driver.updated_time(member)
