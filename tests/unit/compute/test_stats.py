"""Per-node instance statistics, keyed as Nova's compute/stats.py keys them."""
from minisched.compute import stats
from minisched import objects
from minisched.objects import instance as instance_obj
from tests.unit import base

uuids = base.uuids


def _instance(name='a', vm_state=instance_obj.ACTIVE, task_state=None, os_type='linux',
              project_id='p1'):
    return objects.Instance(uuid=getattr(uuids, name), vm_state=vm_state,
                            task_state=task_state, os_type=os_type, project_id=project_id)


class TestStats(base.TestCase):

    def setUp(self):
        super().setUp()
        self.stats = stats.Stats()

    def test_empty(self):
        self.assertEqual((0, 0, 0), (self.stats.num_instances, self.stats.io_workload,
                                     self.stats.calculate_workload()))
        self.assertEqual({}, self.stats.to_node_stats())

    def test_instance_is_counted_under_every_key(self):
        self.stats.update_stats_for_instance(_instance(task_state='spawning'))
        self.assertEqual({'num_instances': 1, 'num_vm_active': 1, 'num_task_spawning': 1,
                          'num_os_type_linux': 1, 'num_proj_p1': 1}, dict(self.stats))

    def test_state_change_moves_the_counts(self):
        self.stats.update_stats_for_instance(_instance(vm_state=instance_obj.BUILDING,
                                                       task_state='spawning'))
        self.stats.update_stats_for_instance(_instance(vm_state=instance_obj.ACTIVE))
        self.assertEqual(1, self.stats.num_instances)
        self.assertEqual((0, 1, 0, 1), (self.stats['num_vm_building'],
                                        self.stats['num_vm_active'],
                                        self.stats['num_task_spawning'],
                                        self.stats['num_task_None']))
        self.assertEqual(0, self.stats.io_workload)

    def test_repeated_update_does_not_double_count(self):
        for _ in range(3):
            self.stats.update_stats_for_instance(_instance())
        self.assertEqual(1, self.stats.num_instances)
        self.assertEqual(1, self.stats['num_proj_p1'])

    def test_removal_takes_the_instance_out(self):
        self.stats.update_stats_for_instance(_instance('a'))
        self.stats.update_stats_for_instance(_instance('b', project_id='p2'))
        self.stats.update_stats_for_instance(_instance('a'), is_removed=True)
        self.assertEqual(1, self.stats.num_instances)
        self.assertEqual((0, 1), (self.stats['num_proj_p1'], self.stats['num_proj_p2']))

    def test_deleted_or_offloaded_instances_leave_the_counts(self):
        self.stats.update_stats_for_instance(_instance('a'))
        self.stats.update_stats_for_instance(_instance('a', vm_state=instance_obj.DELETED))
        self.stats.update_stats_for_instance(
            _instance('b', vm_state=instance_obj.SHELVED_OFFLOADED))
        self.assertEqual(0, self.stats.num_instances)
        self.assertEqual(0, self.stats['num_vm_active'])
        self.assertNotIn('num_vm_deleted', self.stats)

    def test_io_workload_counts_building_and_io_heavy_tasks(self):
        self.stats.update_stats_for_instance(_instance('a', vm_state=instance_obj.BUILDING))
        for name, task in (('b', 'resize_migrating'), ('c', 'rebuilding'), ('d', 'resize_prep'),
                           ('e', 'image_snapshot'), ('f', 'image_backup'), ('g', 'rescuing'),
                           ('h', 'unshelving')):
            self.stats.update_stats_for_instance(_instance(name, task_state=task))
        self.stats.update_stats_for_instance(_instance('i', task_state='rebooting'))
        self.assertEqual(8, self.stats.io_workload)

    def test_workload_counts_tasks_in_progress_only(self):
        self.stats.update_stats_for_instance(_instance('a', task_state=None))
        self.stats.update_stats_for_instance(_instance('b', task_state='rebooting'))
        self.stats.update_stats_for_instance(_instance('c', task_state='spawning'))
        self.assertEqual(2, self.stats.calculate_workload())

    def test_failed_builds_count_and_reset(self):
        self.stats.build_failed()
        self.stats.build_failed()
        self.assertEqual(2, self.stats['failed_builds'])
        self.stats.build_succeeded()
        self.assertEqual(0, self.stats['failed_builds'])

    def test_clear_keeps_failed_builds_only(self):
        self.stats.update_stats_for_instance(_instance())
        self.stats.build_failed()
        self.stats.clear()
        self.assertEqual({'failed_builds': 1}, dict(self.stats))
        self.assertEqual({}, self.stats.states)
        # a cleared instance counts again as new
        self.stats.update_stats_for_instance(_instance())
        self.assertEqual(1, self.stats.num_instances)

    def test_node_stats_are_strings(self):
        self.stats.update_stats_for_instance(_instance())
        node_stats = self.stats.to_node_stats()
        self.assertEqual('1', node_stats['num_instances'])
        self.assertTrue(all(isinstance(v, str) for v in node_stats.values()))
        objects.ComputeNode(stats=node_stats)  # a valid DictOfNullableStrings value
