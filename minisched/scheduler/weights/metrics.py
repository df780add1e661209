"""Weigh hosts by their metrics: sum of ``value * ratio`` over ``[metrics] weight_setting``.

Bounds from the host list; malformed ``name=ratio`` items are ignored with a warning. A metric
missing on a host raises ComputeHostMetricNotFound when ``[metrics] required``, else the
host's value is ``[metrics] weight_of_unavailable`` (unless ``ratio * multiplier`` is 0).
Multiplier ``[metrics] weight_multiplier``, aggregate metadata key ``metrics_weight_multiplier``.
"""
from minisched import exception
from minisched.scheduler import utils as scheduler_utils
from minisched.scheduler import weights


class MetricsWeigher(weights.BaseHostWeigher):
    multiplier_name = 'metrics_weight_multiplier'

    def __init__(self, conf):
        super().__init__(conf)
        self._parse_setting()

    def _parse_setting(self):
        """(Re)read ``[metrics] weight_setting`` into ``self.setting`` (Nova's method: the
        option is read once, when the weigher is made)."""
        self.setting = scheduler_utils.parse_options(
            self.conf.metrics.weight_setting, converter=float, name='metrics.weight_setting')

    def _config(self):
        return self.conf.metrics.weight_multiplier

    def _weigh_object(self, host_state, weight_properties):
        value = 0.0
        metrics = {m.name: m for m in host_state.metrics or []}
        for name, ratio in self.setting:
            if name in metrics:
                value += metrics[name].value * ratio
            elif self.conf.metrics.required:
                raise exception.ComputeHostMetricNotFound(
                    host=host_state.host, node=host_state.nodename, name=name)
            elif ratio * self.weight_multiplier(host_state) != 0:
                # The most negative factor: the host goes to the end of the list.
                return self.conf.metrics.weight_of_unavailable
        return value

    def weigh_rows(self, view, weight_properties):
        return None if self.setting else 0.0
