"""MetricsFilter: hosts must report every metric named in [metrics] weight_setting."""
from minisched.scheduler import host_state
from minisched.scheduler.filters import metrics
from tests.unit import base, fakes


def _host(*names):
    return fakes.fake_host_state(
        metrics=[host_state.Metric(name, 1.0, None, 'fake') for name in names])


class TestMetricsFilter(base.TestCase):
    def test_metrics_table(self):
        cases = [  # (weight_setting, metrics on host, passes)
            ([], [], True),
            (['cpu.frequency=1.0'], ['cpu.frequency'], True),
            (['cpu.frequency=1.0'], [], False),
            (['cpu.frequency=1.0', ' cpu.user.time = -2'], ['cpu.frequency'], False),
            (['cpu.frequency=1.0', 'cpu.user.time=-2'],
             ['cpu.frequency', 'cpu.user.time'], True),
            # Names are kept as written, as Nova's parse_options does: ' cpu.user.time '
            # is no metric a host reports.
            (['cpu.frequency=1.0', ' cpu.user.time = -2'],
             ['cpu.frequency', 'cpu.user.time'], False),
            (['cpu.frequency=bad', 'noratio', '=1.0'], [], True),   # invalid entries ignored
        ]
        for setting, names, passes in cases:
            with self.subTest(setting=setting, names=names):
                self.flags(group='metrics', weight_setting=setting)
                flt = metrics.MetricsFilter(self.conf)
                self.assertIs(passes, flt.host_passes(_host(*names), fakes.fake_spec()))

    def test_noop_without_weighed_metrics(self):
        self.assertTrue(metrics.MetricsFilter(self.conf).is_noop(fakes.fake_spec()))
        self.flags(group='metrics', weight_setting=['a=1'])
        self.assertFalse(metrics.MetricsFilter(self.conf).is_noop(fakes.fake_spec()))
