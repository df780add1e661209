"""MetricsWeigher: weight_setting parsing, sums, and the missing-metric rules."""
from minisched import exception
from minisched.scheduler import host_state
from minisched.scheduler import utils as scheduler_utils
from minisched.scheduler.weights import metrics
from tests.unit import fakes
from tests.unit.scheduler.weights import helpers

M = 'metrics'


def having(**values):
    return {'metrics': [host_state.Metric(name, value, None, 'fake')
                        for name, value in values.items()]}


CASES = [
    ('sum of value * ratio, list-bounded', {M: {'weight_setting': ['foo=1.0', 'bar=-1.0']}},
     [having(foo=10, bar=2), having(foo=4, bar=4), having(foo=6, bar=1)],
     [('host1', 1.0), ('host3', 0.625), ('host2', 0.0)]),
    ('no setting: all 0', {},
     [having(foo=1), having(foo=2)], [('host1', 0.0), ('host2', 0.0)]),
    ('malformed items are ignored', {M: {'weight_setting': ['foo', '=2', 'x=y', 'bar=2']}},
     [having(bar=1, foo=99), having(bar=3)], [('host2', 1.0), ('host1', 0.0)]),
    ('missing metric, not required: weight_of_unavailable',
     {M: {'weight_setting': ['foo=1'], 'required': False}},
     [having(foo=5), {}, having(foo=10000)],
     [('host3', 1.0), ('host1', 0.50025), ('host2', 0.0)]),
    ('missing metric with ratio 0 is skipped',
     {M: {'weight_setting': ['foo=1', 'bar=0'], 'required': False}},
     [having(foo=5), having(foo=3, bar=7)], [('host1', 1.0), ('host2', 0.0)]),
    ('multiplier scales', {M: {'weight_setting': ['foo=1'], 'weight_multiplier': -2.0}},
     [having(foo=5), having(foo=3)], [('host2', 0.0), ('host1', -2.0)]),
]


class TestMetricsWeigher(helpers.WeigherTestCase):
    def test_cases(self):
        self.check_cases([metrics.MetricsWeigher], CASES)

    def test_required_metric_missing_raises(self):
        self.flags(group=M, weight_setting=['foo=1'], required=True)
        hosts = self.hosts(having(foo=1), having(bar=1))
        with self.assertRaises(exception.ComputeHostMetricNotFound):
            self.handler.get_weighed_objects([metrics.MetricsWeigher(self.conf)], hosts,
                                             fakes.fake_spec())

    def test_missing_metric_with_zero_multiplier_is_skipped(self):
        self.flags(group=M, weight_setting=['foo=1'], required=False)
        host = self.hosts({}, having(foo=3))[0]
        host.aggregates = [fakes.fake_aggregate({'metrics_weight_multiplier': '0'})]
        self.assertEqual(0.0, metrics.MetricsWeigher(self.conf)._weigh_object(host, None))

    def test_setting_keeps_the_valid_items(self):
        self.flags(group=M, weight_setting=['a=1.5', 'b=-2', 'c=', '=1', 'd', 'e=1=2', ' f =3'])
        with self.assertLogs(scheduler_utils.LOG, 'WARNING') as logs:
            weigher = metrics.MetricsWeigher(self.conf)
        self.assertEqual([('a', 1.5), ('b', -2.0), (' f ', 3.0)], weigher.setting)
        self.assertIn('metrics.weight_setting: c=, =1, d, e=1=2', logs.output[0])

    def test_parse_setting_rereads_the_option(self):
        # Nova's _parse_setting(): the setting is read when the weigher is made, and again
        # only when asked.
        self.flags(group=M, weight_setting=['foo=1'])
        weigher = metrics.MetricsWeigher(self.conf)
        self.flags(group=M, weight_setting=['bar=2', 'baz=-1'])
        self.assertEqual([('foo', 1.0)], weigher.setting)
        weigher._parse_setting()
        self.assertEqual([('bar', 2.0), ('baz', -1.0)], weigher.setting)
