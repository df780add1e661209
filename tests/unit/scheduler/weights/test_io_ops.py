"""IoOpsWeigher: num_io_ops, minval 0, multiplier -1.0 by default."""
from minisched.scheduler.weights import io_ops
from tests.unit.scheduler.weights import helpers

FS = 'filter_scheduler'

CASES = [
    ('default multiplier prefers idle hosts', {},
     [{'num_io_ops': 8}, {'num_io_ops': 0}, {'num_io_ops': 4}],
     [('host2', 0.0), ('host3', -0.5), ('host1', -1.0)]),
    ('equal non-zero values all weigh -1.0', {},
     [{'num_io_ops': 3}, {'num_io_ops': 3}], [('host1', -1.0), ('host2', -1.0)]),
    ('all idle weigh 0', {},
     [{'num_io_ops': 0}, {'num_io_ops': 0}], [('host1', 0.0), ('host2', 0.0)]),
    ('positive multiplier prefers busy hosts', {FS: {'io_ops_weight_multiplier': 1.0}},
     [{'num_io_ops': 2}, {'num_io_ops': 8}], [('host2', 1.0), ('host1', 0.25)]),
]


class TestIoOpsWeigher(helpers.WeigherTestCase):
    def test_cases(self):
        self.check_cases([io_ops.IoOpsWeigher], CASES)
