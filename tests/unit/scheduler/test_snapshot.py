"""The snapshot file: written, read back into a HostManager, anonymized, refused when bad."""
import datetime
import json
import os
import tempfile

from minisched import exception
from minisched.scheduler.replay import offline
from minisched.scheduler.replay import snapshot
from tests.unit import base
from tests.unit.scheduler import replay_hosts


def _write(test, value, text=None):
    handle = tempfile.NamedTemporaryFile('w', suffix='.json', delete=False)
    test.addCleanup(os.unlink, handle.name)
    with handle:
        handle.write(text if text is not None else json.dumps(value))
    return handle.name


class TestSnapshotFile(base.TestCase):

    def _sections(self):
        return {'aggregates': [{'id': 7, 'uuid': base.uuids.agg, 'name': 'fast',
                                'hosts': ['b'], 'metadata': {'ssd': 'true'}}],
                'instances': [{'uuid': base.uuids.vm1, 'host': 'a', 'node': 'a',
                               'project_id': 'p1', 'user_id': 'u1', 'instance_type_id': 1,
                               'memory_mb': 1024, 'vcpus': 1, 'root_gb': 10,
                               'ephemeral_gb': 0, 'vm_state': 'active', 'flavor': 'small'}],
                'server_groups': [{'uuid': base.uuids.group, 'name': 'web',
                                   'policy': 'anti-affinity', 'rules': {},
                                   'members': [base.uuids.vm1], 'hosts': ['a'],
                                   'project_id': 'p1', 'user_id': 'u1'}]}

    def test_round_trip_fills_the_host_states_it_was_taken_from(self):
        taken = replay_hosts.two_hosts(**self._sections())
        path = _write(self, None, text='')
        snapshot.dump(taken, path)
        loaded = snapshot.load(path)
        self.assertEqual(taken, loaded)
        self.assertEqual(replay_hosts.TAKEN, snapshot.taken_at(loaded))

        scheduler = offline.HeldStateScheduler(self.conf)
        hm = scheduler.host_manager
        snapshot.fill(hm, loaded)
        states = [hm.table.states[row] for row in hm.table.rows()]
        self.assertEqual(['a', 'b'], [s.host for s in states])  # the row order kept
        a, b = states
        self.assertEqual((4096, 4, 40 * 1024), (a.free_ram_mb, a.vcpus_total, a.free_disk_mb))
        self.assertEqual(datetime.datetime(2026, 5, 1, 12, 0),
                         a.service['last_seen_up'])
        self.assertEqual([], [agg.name for agg in a.aggregates])
        self.assertEqual(['fast'], [agg.name for agg in b.aggregates])
        self.assertEqual({'ssd': 'true'}, b.aggregates[0].metadata)
        self.assertEqual([base.uuids.vm1], list(a.instances))
        self.assertEqual(1, a.instances[base.uuids.vm1].instance_type_id)
        self.assertEqual({}, b.instances)

    def test_ratios_given_to_fill_replace_the_nodes_own(self):
        hm = offline.HeldStateScheduler(self.conf).host_manager
        snapshot.fill(hm, replay_hosts.two_hosts(), ratios={'cpu_allocation_ratio': 4.0})
        self.assertEqual([4.0, 4.0], [hm.table.states[r].cpu_allocation_ratio
                                      for r in hm.table.rows()])
        self.assertEqual([1.0, 1.0], [hm.table.states[r].ram_allocation_ratio
                                      for r in hm.table.rows()])

    def test_anonymize_replaces_each_name_the_same_way_everywhere(self):
        taken = replay_hosts.two_hosts(**self._sections())
        text = json.dumps(snapshot.anonymize(taken))
        for secret in ('"a"', '"b"', 'p1', 'u1', base.uuids.vm1, base.uuids.group,
                       base.uuids.agg, '"fast"', '"web"', '10.0.0.1',
                       '00000000-0000-0000-0000-000000000001'):
            self.assertNotIn(secret, text)
        out = json.loads(text)
        hosts = [h['service']['host'] for h in out['hosts']]
        self.assertEqual(2, len(set(hosts)))
        host_a, host_b = hosts
        self.assertEqual(host_a, out['hosts'][0]['node']['host'])
        self.assertEqual(host_a, out['hosts'][0]['node']['hypervisor_hostname'])
        self.assertEqual([host_b], out['aggregates'][0]['hosts'])
        instance, group = out['instances'][0], out['server_groups'][0]
        self.assertEqual((host_a, host_a), (instance['host'], instance['node']))
        self.assertEqual([host_a], group['hosts'])
        self.assertEqual([instance['uuid']], group['members'])
        self.assertEqual(instance['project_id'], group['project_id'])
        # Still a snapshot the replay reads.
        hm = offline.HeldStateScheduler(self.conf).host_manager
        snapshot.fill(hm, snapshot.check(out))
        self.assertEqual([instance['uuid']], list(hm.host_state_map[(host_a, host_a)].instances))

    def test_anonymize_gives_the_same_file_for_the_same_input(self):
        taken = replay_hosts.two_hosts(**self._sections())
        self.assertEqual(snapshot.anonymize(taken), snapshot.anonymize(taken))

    def test_a_cut_short_file_is_refused(self):
        text = json.dumps(replay_hosts.two_hosts())
        path = _write(self, None, text=text[:len(text) // 2])
        error = self.assertRaises(exception.InvalidSnapshot, snapshot.load, path)
        self.assertIn('cut short', error.format_message())

    def test_another_version_is_refused(self):
        path = _write(self, dict(replay_hosts.two_hosts(), version=99))
        error = self.assertRaises(exception.InvalidSnapshot, snapshot.load, path)
        self.assertIn('version 99, this minisched reads version 1', error.format_message())

    def test_a_file_of_another_format_is_refused(self):
        path = _write(self, {'hosts': []})
        error = self.assertRaises(exception.InvalidSnapshot, snapshot.load, path)
        self.assertIn('not a scheduler snapshot', error.format_message())

    def assertRaises(self, exc_class, fn, *args):
        with super().assertRaises(exc_class) as caught:
            fn(*args)
        return caught.exception
