"""Soft (anti-)affinity weighers: group members on the host, for the weigher's own policy."""
from minisched.scheduler.weights import affinity
from tests.unit import fakes
from tests.unit.scheduler.weights import helpers

FS = 'filter_scheduler'
A, B, C, OTHER = 'uuid-a', 'uuid-b', 'uuid-c', 'uuid-other'
HOSTS = [{'instances': {A: None, OTHER: None}}, {'instances': {}},
         {'instances': {B: None, C: None}}]


def spec(policy, members=(A, B, C)):
    return fakes.fake_spec(instance_group=fakes.fake_group(policy=policy, members=members))


AFFINITY = affinity.ServerGroupSoftAffinityWeigher
ANTI = affinity.ServerGroupSoftAntiAffinityWeigher
CASES = [
    # (name, weigher, spec, flags, expected)
    ('soft-affinity prefers hosts with more members', AFFINITY, spec('soft-affinity'), {},
     [('host3', 1.0), ('host1', 0.5), ('host2', 0.0)]),
    ('soft-anti-affinity prefers hosts with fewer members', ANTI, spec('soft-anti-affinity'), {},
     [('host2', 1.0), ('host1', 0.5), ('host3', 0.0)]),
    ('other policy: no effect', AFFINITY, spec('soft-anti-affinity'), {},
     [('host1', 0.0), ('host2', 0.0), ('host3', 0.0)]),
    ('hard policy: no effect', ANTI, spec('anti-affinity'), {},
     [('host1', 0.0), ('host2', 0.0), ('host3', 0.0)]),
    ('no group: no effect', AFFINITY, fakes.fake_spec(), {},
     [('host1', 0.0), ('host2', 0.0), ('host3', 0.0)]),
    ('duplicate members count once', AFFINITY, spec('soft-affinity', (A, A, OTHER)), {},
     [('host1', 1.0), ('host2', 0.0), ('host3', 0.0)]),
    ('multiplier scales', ANTI, spec('soft-anti-affinity'),
     {'soft_anti_affinity_weight_multiplier': 2.0},
     [('host2', 2.0), ('host1', 1.0), ('host3', 0.0)]),
]


class TestSoftAffinityWeighers(helpers.WeigherTestCase):
    def test_cases(self):
        for name, weigher, request, flags, expected in CASES:
            with self.subTest(name):
                self.flags(group=FS, soft_affinity_weight_multiplier=1.0,
                           soft_anti_affinity_weight_multiplier=1.0)
                self.flags(group=FS, **flags)
                self.assertEqual(expected, self.weigh([weigher], self.hosts(*HOSTS), request))

    def test_raw_values(self):
        host = self.hosts(*HOSTS)[2]
        self.assertEqual(2, AFFINITY(self.conf)._weigh_object(host, spec('soft-affinity')))
        self.assertEqual(-2, ANTI(self.conf)._weigh_object(host, spec('soft-anti-affinity')))
        self.assertEqual(0, ANTI(self.conf)._weigh_object(host, spec('soft-affinity')))

    def test_aggregate_override(self):
        hosts = self.hosts(*HOSTS)
        hosts[0].aggregates = [fakes.fake_aggregate({'soft_affinity_weight_multiplier': '4'})]
        self.assertEqual([('host1', 2.0), ('host3', 1.0), ('host2', 0.0)],
                         self.weigh([AFFINITY], hosts, spec('soft-affinity')))
