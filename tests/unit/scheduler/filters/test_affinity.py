"""Server group (anti-)affinity, same/different host hints and the CIDR hint."""
from minisched.scheduler.filters import affinity
from tests.unit import base, fakes
from tests.unit.base import uuids


def _host(name='host1', instances=(), host_ip='10.0.0.5'):
    return fakes.fake_host_state(name, instances={u: fakes.fake_instance(u) for u in instances},
                                 host_ip=host_ip)


class TestServerGroupAntiAffinityFilter(base.TestCase):
    def test_anti_affinity_table(self):
        cases = [  # (policy, members, rules, instances on host, spec instance, passes)
            (None, [], {}, [uuids.a], uuids.new, True),               # no group at all
            ('affinity', [uuids.a], {}, [uuids.a], uuids.new, True),  # other policy
            ('soft-anti-affinity', [uuids.a], {}, [uuids.a], uuids.new, True),
            ('anti-affinity', [uuids.a], {}, [], uuids.new, True),
            ('anti-affinity', [uuids.a], {}, [uuids.b], uuids.new, True),   # not a member
            ('anti-affinity', [uuids.a], {}, [uuids.a], uuids.new, False),
            ('anti-affinity', [uuids.a, uuids.b], {'max_server_per_host': 2},
             [uuids.a], uuids.new, True),
            ('anti-affinity', [uuids.a, uuids.b], {'max_server_per_host': 2},
             [uuids.a, uuids.b], uuids.new, False),                  # at the maximum
            ('anti-affinity', [uuids.a], {}, [uuids.a, uuids.new], uuids.new, True),  # move
        ]
        flt = affinity.ServerGroupAntiAffinityFilter(self.conf)
        for policy, members, rules, on_host, instance, passes in cases:
            with self.subTest(policy=policy, rules=rules, on_host=on_host):
                group = policy and fakes.fake_group(policy, members=members, rules=rules)
                spec = fakes.fake_spec(instance_group=group or None, instance_uuid=instance)
                self.assertIs(passes, flt.host_passes(_host(instances=on_host), spec))
                if policy != 'anti-affinity':
                    self.assertTrue(flt.is_noop(spec))


class TestServerGroupAffinityFilter(base.TestCase):
    def test_affinity_table(self):
        cases = [  # (policy, group hosts, host, passes)
            (None, [], 'host1', True),
            ('anti-affinity', ['host2'], 'host1', True),
            ('affinity', [], 'host1', True),              # first member goes anywhere
            ('affinity', ['host1'], 'host1', True),
            ('affinity', ['host2'], 'host1', False),
            ('affinity', ['host2', 'host1'], 'host1', True),
        ]
        flt = affinity.ServerGroupAffinityFilter(self.conf)
        for policy, hosts, host, passes in cases:
            with self.subTest(policy=policy, hosts=hosts, host=host):
                group = policy and fakes.fake_group(policy, hosts=hosts)
                spec = fakes.fake_spec(instance_group=group or None)
                self.assertIs(passes, flt.host_passes(_host(host), spec))
        self.assertFalse(flt.run_filter_once_per_request)
        self.assertFalse(flt.RUN_ON_REBUILD)


class TestInstanceHintFilters(base.TestCase):
    def test_same_and_different_host_table(self):
        cases = [  # (hint value, instances on host, same passes, different passes)
            (None, [uuids.a], True, True),
            ([], [uuids.a], True, True),
            ([uuids.a], [uuids.a], True, False),          # one-element list is unwrapped
            ([uuids.a], [uuids.b], False, True),
            ([uuids.x, uuids.b], [uuids.b], True, False),
            ([uuids.a], [], False, True),
        ]
        same = affinity.SameHostFilter(self.conf)
        different = affinity.DifferentHostFilter(self.conf)
        for value, on_host, same_passes, different_passes in cases:
            with self.subTest(value=value, on_host=on_host):
                hints = {} if value is None else {'same_host': value, 'different_host': value}
                spec = fakes.fake_spec(scheduler_hints=hints)
                self.assertIs(same_passes, same.host_passes(_host(instances=on_host), spec))
                self.assertIs(different_passes,
                              different.host_passes(_host(instances=on_host), spec))
                self.assertIs(not value, same.is_noop(spec))
        self.assertTrue(same.run_filter_once_per_request)
        self.assertTrue(different.run_filter_once_per_request)

    def test_cidr_table(self):
        cases = [  # (hints, host_ip, passes)
            ({}, '10.0.0.5', True),
            ({'build_near_host_ip': ['10.0.0.1']}, '10.0.0.5', True),     # default /24
            ({'build_near_host_ip': ['10.0.0.1']}, '10.0.1.5', False),
            ({'build_near_host_ip': ['10.0.0.1'], 'cidr': ['/16']}, '10.0.1.5', True),
            ({'build_near_host_ip': ['10.0.0.1'], 'cidr': ['/32']}, '10.0.0.5', False),
            ({'build_near_host_ip': ['fd00::1'], 'cidr': ['/64']}, 'fd00::5', True),
        ]
        flt = affinity.SimpleCIDRAffinityFilter(self.conf)
        for hints, host_ip, passes in cases:
            with self.subTest(hints=hints, host_ip=host_ip):
                spec = fakes.fake_spec(scheduler_hints=hints)
                self.assertIs(passes, flt.host_passes(_host(host_ip=host_ip), spec))
        self.assertTrue(flt.is_noop(fakes.fake_spec()))
