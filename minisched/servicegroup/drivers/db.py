"""Database servicegroup driver: the state report timer and the up/down rule."""
import logging

import oslo_messaging as messaging
from oslo_utils import timeutils

from minisched.messaging import bus_errors
from minisched import exception
from minisched.servicegroup import outages as outages_mod

LOG = logging.getLogger(__name__)

#: Seconds before the first state report after a service joins.
INITIAL_REPORTING_DELAY = 5


def _get(member, key):
    if hasattr(member, 'obj_attr_is_set'):
        return getattr(member, key) if member.obj_attr_is_set(key) else None
    return member.get(key)


def is_up(member, service_down_time, now=None, outages=None):
    """Nova's rule: forced down first, then ``last_seen_up or created_at`` vs the down time;
    less, when ``outages`` (:class:`~minisched.servicegroup.outages.Outages`) are given, the
    time the observer was itself cut off since that heartbeat."""
    if _get(member, 'forced_down'):
        return False
    last_heartbeat = _get(member, 'last_seen_up') or _get(member, 'created_at')
    if last_heartbeat is None:
        return False
    if isinstance(last_heartbeat, str):
        last_heartbeat = timeutils.parse_strtime(last_heartbeat)
    last_heartbeat = timeutils.normalize_time(last_heartbeat)
    now = timeutils.normalize_time(now or timeutils.utcnow())
    elapsed = abs((now - last_heartbeat).total_seconds())
    if outages is not None and elapsed > service_down_time:
        elapsed -= outages.unheard_seconds(last_heartbeat, now)
    return elapsed <= service_down_time


class DbDriver:
    """Reports through ``Service.save`` (remoted via the conductor where DB access is blocked).

    A service is up when it reported within ``service_down_time`` of the time this process
    could hear it (``outages``: its own outages do not count as the others' silence).
    """

    def __init__(self, conf, outages=None):
        self.conf = conf
        self.outages = outages or outages_mod.OWN
        outages_mod.watch_the_bus(self.outages)
        self._last_report = None

    def join(self, member, group, service=None):
        LOG.debug('DB_Driver: join new ServiceGroup member %(member)s to the %(group)s group, '
                  'service = %(service)s', {'member': member, 'group': group,
                                            'service': service})
        if service is None:
            raise RuntimeError('service is a mandatory argument for DB based ServiceGroup driver')
        report_interval = service.report_interval
        if report_interval:
            service.tg.add_timer_args(report_interval, self._report_state, args=[service],
                                      initial_delay=INITIAL_REPORTING_DELAY)

    def is_up(self, service_ref):
        if _get(service_ref, 'forced_down'):
            return False  # an operator's decision, not news worth a log line (as in Nova)
        up = is_up(service_ref, self.conf.service_down_time, outages=self.outages)
        if not up:
            LOG.debug('Seems service %(binary)s on host %(host)s is down.',
                      {'binary': _get(service_ref, 'binary'), 'host': _get(service_ref, 'host')})
        return up

    def updated_time(self, service_ref):
        return _get(service_ref, 'updated_at')

    def _report_state(self, service):
        """Bump ``report_count`` and save; errors are logged and never stop the timer.

        An outage (of the message bus, or of the database: the conductor's, or this
        service's own when it has database access) is logged in one line when it starts
        and once when it ends, not with a traceback every ``report_interval``.
        """
        try:
            service.service_ref.report_count += 1
            service.service_ref.save()
            self._last_report = timeutils.utcnow()
            self.outages.end(outages_mod.REPORT)
            if getattr(service, 'model_disconnected', False):
                service.model_disconnected = False
                LOG.info('Recovered from being unable to report status.')
        except Exception as exc:
            # Logged outside the except block: oslo.log would append the traceback.
            error = exc
        else:
            return
        reason = _outage(error)
        if reason is None:
            LOG.error('Unexpected error while reporting service status', exc_info=error)
            service.model_disconnected = True
        else:
            # Cut off since the last report that went through (or since now).
            self.outages.begin(outages_mod.REPORT, self._last_report)
            if not getattr(service, 'model_disconnected', False):
                service.model_disconnected = True
                LOG.warning(reason)


def _outage(error):
    """The line saying which outage ``error`` is part of; None for any other error."""
    if isinstance(error, messaging.MessagingTimeout):
        return 'Lost connection to minisched-conductor for reporting service status.'
    if bus_errors.is_unreachable(error):
        return 'Cannot report service status: the message bus is unreachable: %s' % (
            bus_errors.describe(error))
    if isinstance(error, exception.DBTransientError):
        return 'Cannot report service status: %s' % error.format_message()
    from minisched.conductor import db_errors  # the conductor's rules; imported when needed
    if db_errors.is_transient(error):
        return 'Cannot report service status: the database is unavailable: %s' % (
            db_errors.reason(error))
    return None
