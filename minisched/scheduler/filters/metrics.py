"""Drop hosts lacking a metric that ``[metrics] weight_setting`` weighs.

MetricsWeigher needs every configured metric on every host it weighs; this filter removes
the hosts that would make it fail.
"""
import logging

from minisched.scheduler import filters
from minisched.scheduler import utils as scheduler_utils

LOG = logging.getLogger(__name__)


class MetricsFilter(filters.BaseHostFilter):
    """Passes hosts reporting every metric named in ``[metrics] weight_setting``."""

    RUN_ON_REBUILD = False

    def __init__(self, conf):
        super().__init__(conf)
        # Read once, as Nova does.
        self.keys = {name for name, _ratio in scheduler_utils.parse_options(
            conf.metrics.weight_setting, converter=float, name='metrics.weight_setting')}

    def host_passes(self, host_state, spec_obj):
        on_host = {metric.name for metric in host_state.metrics}
        if not self.keys.issubset(on_host):
            LOG.debug('%(host)s does not have the following metrics: %(metrics)s',
                      {'host': host_state, 'metrics': ', '.join(sorted(self.keys - on_host))})
            return False
        return True

    def is_noop(self, spec_obj):
        return not self.keys
