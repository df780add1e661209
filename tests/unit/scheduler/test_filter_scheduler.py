"""FilterScheduler: Nova's legacy loop, alternates, limits, forced hosts, NoValidHost.

Host states come from synthetic rows (no database); every scenario runs through both the
vectorised RowPipeline and Nova's per-host ReferencePipeline and must give the same answer.
"""
import random
import sys
import threading

from oslo_utils.fixture import uuidsentinel as uuids

from minisched import context
from minisched import exception
from minisched import objects
from minisched.objects import request_spec
from minisched import rpc
from minisched.scheduler import filter_scheduler
from minisched.scheduler import host_manager
from tests.unit import base
from tests.unit import fakes
from tests.unit import sqlite_databases

_RESOURCE_FILTERS = ['RetryFilter', 'AvailabilityZoneFilter', 'RamFilter', 'CoreFilter',
                     'DiskFilter', 'ComputeFilter']


class _NoRefresh(filter_scheduler.FilterScheduler):
    """The FilterScheduler over host states filled by the test (no database)."""

    def _get_all_host_candidates(self, context, spec_obj):
        return self.pipeline.initial(context, spec_obj)


class SchedulerTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        # Notifications go nowhere, through oslo.messaging's in-memory transport.
        rpc.init(self.conf, url='fake://')
        self.addCleanup(rpc.cleanup)
        self.flags(group='filter_scheduler', enabled_filters=_RESOURCE_FILTERS)
        self.ctxt = context.get_admin_context()

    def _scheduler(self, hosts, pipeline=filter_scheduler.RowPipeline):
        """``hosts``: [(name, free_ram_mb, total_ram_mb[, cell uuid])] on 8-vCPU, 100 GB
        nodes (cell1 unless given)."""
        fs = _NoRefresh(self.conf)
        fs.pipeline = pipeline(fs.host_manager)
        hm = fs.host_manager
        for name, free_ram, total_ram, *cell in hosts:
            state = fakes.fake_host_state(name, table=hm.table, free_ram_mb=free_ram,
                                          total_usable_ram_mb=total_ram,
                                          cell_uuid=cell[0] if cell else uuids.cell1)
            hm.host_state_map[(name, name)] = state
            hm._states_by_host[name].append(state)
        hm.cells = hm.enabled_cells = [None]
        return fs

    def _both(self, hosts, spec, uuids=None, alternates=False, seed=7):
        """Run the request through both pipelines on identical states; return one result."""
        results = []
        for pipeline in (filter_scheduler.RowPipeline, filter_scheduler.ReferencePipeline):
            fs = self._scheduler(hosts, pipeline)
            random.seed(seed)
            try:
                selections = fs._schedule(self.ctxt, spec.obj_clone(), uuids, alternates)
                results.append([[(s.service_host, s.limits.to_dict()) for s in sels]
                                for sels in selections])
            except exception.NoValidHost as exc:
                results.append(exc.format_message())
        self.assertEqual(results[0], results[1])
        return results[0]


class TestSchedule(SchedulerTestCase):
    HOSTS = [('small', 2048, 4096), ('big', 12288, 16384), ('mid', 6144, 8192)]

    def test_picks_the_host_with_most_free_ram(self):
        result = self._both(self.HOSTS, fakes.fake_spec(memory_mb=1024))
        self.assertEqual('big', result[0][0][0])

    def test_limits_travel_with_the_selection(self):
        result = self._both(self.HOSTS, fakes.fake_spec(memory_mb=1024))
        self.assertEqual({'memory_mb': 24576, 'vcpu': 128, 'disk_gb': 100}, result[0][0][1])

    def test_alternates_found_past_the_hosts_weighed_first(self):
        # One instance: only the best few hosts are put in order at first. The alternates
        # must share the chosen host's cell, and the hosts weighed next are in another: the
        # walk goes on past them, through hosts put in order when it gets there.
        hosts = [('a0', 16384, 16384)]
        hosts += [('b%02d' % n, 15360 - 256 * n, 16384, uuids.cell2) for n in range(12)]
        hosts += [('a%d' % n, 4096 + 512 * (n % 3), 16384) for n in range(1, 9)]
        random.Random(3).shuffle(hosts)
        result = self._both(hosts, fakes.fake_spec(memory_mb=1024), uuids=[uuids.inst1],
                            alternates=True)
        names = [name for name, _ in result[0]]
        self.assertEqual('a0', names[0])
        self.assertEqual(2, len(set(names[1:]) & {'a2', 'a5', 'a8'}))  # cell1's next best

    def test_many_hosts_tied_with_the_best_all_take_part_in_the_draw(self):
        self.flags(group='filter_scheduler', host_subset_size=4,
                   shuffle_best_same_weighed_hosts=True)
        hosts = [('t%02d' % n, 8192, 16384) for n in range(30)]
        hosts += [('u%02d' % n, 2048 + 64 * n, 16384) for n in range(20)]
        chosen = set()
        for seed in range(12):
            result = self._both(hosts, fakes.fake_spec(memory_mb=1024), uuids=[uuids.inst1],
                                alternates=True, seed=seed)
            chosen.add(result[0][0][0])
            self.assertTrue(all(name.startswith('t') for name, _ in result[0]))
        self.assertGreater(len(chosen), 4)  # drawn among all 30 ties, not the first few

    def test_multi_instance_consumes_between_picks(self):
        spec = fakes.fake_spec(memory_mb=8192, num_instances=2)
        result = self._both(self.HOSTS, spec)
        # big (12288 free) first; then big has 4096 left and mid (6144) wins.
        self.assertEqual(['big', 'mid'], [sels[0][0] for sels in result])

    def test_alternates_exclude_selected_hosts_and_respect_max_attempts(self):
        self.flags(group='scheduler', max_attempts=3)
        result = self._both(self.HOSTS, fakes.fake_spec(memory_mb=1024), alternates=True)
        self.assertEqual(['big', 'mid', 'small'], [host for host, _ in result[0]])
        self.flags(group='scheduler', max_attempts=2)
        result = self._both(self.HOSTS, fakes.fake_spec(memory_mb=1024), alternates=True)
        self.assertEqual(['big', 'mid'], [host for host, _ in result[0]])

    def test_no_valid_host_explains_rejections_per_filter(self):
        message = self._both(self.HOSTS, fakes.fake_spec(memory_mb=30000))
        self.assertIn('There are not enough hosts available.', message)
        self.assertIn('RamFilter rejected 3 of 3', message)

    def test_no_valid_host_names_the_cells_that_did_not_answer(self):
        """A cell whose database failed its read is not "not enough hosts": the error names
        it and since when (the conductor waits for it), and a cell that answers again is
        not named."""
        cell2 = objects.CellMapping(uuid=uuids.cell2, name='cell2')
        fs = self._scheduler(self.HOSTS)
        hm = fs.host_manager
        hm.cells = hm.enabled_cells = [None, cell2]
        hm._mark_cell_down(uuids.cell2, OSError('refused'))
        since = hm._down_cells[uuids.cell2]
        hm._mark_cell_down(uuids.cell2, OSError('refused again'))  # since the first failure
        with self.assertRaises(exception.CellsUnreachable) as raised:
            fs._schedule(self.ctxt, fakes.fake_spec(memory_mb=30000), None)
        error = raised.exception
        self.assertEqual(['cell2'], error.kwargs['cells'])
        self.assertTrue(error.format_message().startswith(
            'No valid host was found. Cell cell2 unreachable since %s; their hosts could not '
            'be considered. There are not enough hosts available.'
            % since.strftime('%Y-%m-%dT%H:%M:%SZ')), error.format_message())
        hm._down_cells.pop(uuids.cell2)
        with self.assertRaises(exception.NoValidHost) as raised:
            fs._schedule(self.ctxt, fakes.fake_spec(memory_mb=30000), None)
        self.assertNotIsInstance(raised.exception, exception.CellsUnreachable)

    def test_forced_host_skips_filters_and_gets_no_limits(self):
        spec = fakes.fake_spec(memory_mb=30000, force_hosts=['SMALL'])
        result = self._both(self.HOSTS, spec)
        self.assertEqual([('small', {})], result[0])

    def test_forced_host_with_check_type_still_filters(self):
        # (a rebuild would skip RamFilter: it does not run on rebuild)
        spec = fakes.fake_spec(memory_mb=30000, force_hosts=['small'],
                               scheduler_hints={'_nova_check_type': ['resize']})
        self.assertIn('RamFilter', self._both(self.HOSTS, spec))

    def test_ignore_hosts_is_case_insensitive(self):
        spec = fakes.fake_spec(memory_mb=1024, ignore_hosts=['BIG'])
        self.assertEqual('mid', self._both(self.HOSTS, spec)[0][0][0])

    def test_requested_destination_narrows_to_that_host(self):
        spec = fakes.fake_spec(memory_mb=1024)
        spec.requested_destination = request_spec.Destination(host='small', node=None)
        self.assertEqual('small', self._both(self.HOSTS, spec)[0][0][0])

    def test_instance_uuids_are_set_on_the_spec_in_turn(self):
        fs = self._scheduler(self.HOSTS)
        spec = fakes.fake_spec(memory_mb=512, num_instances=1)
        fs._schedule(self.ctxt, spec, [base.uuids.a, base.uuids.b])
        self.assertEqual(base.uuids.b, spec.instance_uuid)

    def test_group_members_are_added_to_the_chosen_hosts(self):
        fs = self._scheduler(self.HOSTS)
        spec = fakes.fake_spec(memory_mb=512, instance_group=fakes.fake_group())
        fs._schedule(self.ctxt, spec, [base.uuids.a])
        self.assertEqual(['big'], spec.instance_group.hosts)
        big = fs.host_manager.host_state_map[('big', 'big')]
        self.assertIn(base.uuids.a, big.instances)

    def test_subset_size_picks_among_the_best(self):
        self.flags(group='filter_scheduler', host_subset_size=2)
        chosen = set()
        for seed in range(20):
            fs = self._scheduler(self.HOSTS)
            random.seed(seed)
            chosen.add(fs._schedule(self.ctxt, fakes.fake_spec(memory_mb=512),
                                    None)[0][0].service_host)
        self.assertEqual({'big', 'mid'}, chosen)

    def test_shuffled_ties_and_subsets_choose_alike_in_both_pipelines(self):
        # a, b, c and f tie for the best weight (f comes later in the candidate order).
        hosts = [('a', 8192, 16384), ('b', 8192, 16384), ('c', 8192, 16384),
                 ('d', 4096, 16384), ('e', 2048, 16384), ('f', 8192, 16384)]
        self.flags(group='filter_scheduler', shuffle_best_same_weighed_hosts=True)
        for subset in (1, 2, 3, 5, 6):
            self.flags(group='filter_scheduler', host_subset_size=subset)
            firsts = set()
            for num in (1, 3):
                for seed in range(40):
                    with self.subTest(subset=subset, num=num, seed=seed):
                        result = self._both(hosts, fakes.fake_spec(memory_mb=512,
                                                                   num_instances=num),
                                            alternates=True, seed=seed)
                        firsts.add(result[0][0][0])
            # Any of the tied best, shuffled; then the next best as the subset grows.
            self.assertEqual({'a', 'b', 'c', 'f', 'd', 'e'}, firsts | {'d', 'e'}, subset)
            self.assertEqual(subset >= 5, 'd' in firsts, subset)
            self.assertEqual(subset >= 6, 'e' in firsts, subset)

    def test_failed_request_gives_back_exactly_what_it_took(self):
        fs = self._scheduler(self.HOSTS)
        big = fs.host_manager.host_state_map[('big', 'big')]
        fs._schedule(self.ctxt, fakes.fake_spec(memory_mb=1000), None)  # an earlier claim
        self.assertEqual(12288 - 1000, big.free_ram_mb)
        # big fits one 12000 MB instance even after overcommit; nobody fits a second.
        spec = fakes.fake_spec(memory_mb=12000, num_instances=3)
        self.assertRaises(exception.NoValidHost, fs._schedule, self.ctxt, spec, None)
        self.assertEqual(12288 - 1000, big.free_ram_mb)
        self.assertEqual(1, big.num_instances)


class TestLimitsUnderConcurrentRequests(SchedulerTestCase):
    """Host states are shared by the requests a worker's threads schedule at once: each
    selection must carry the limits its host passed with, whatever the others do."""

    FULL = {'memory_mb': 12288.0, 'vcpu': 128.0, 'disk_gb': 100.0}  # 8 GiB x 1.5, 8 x 16

    def test_a_host_filled_after_filtering_keeps_the_limits_it_passed_with(self):
        # Another request fills the host between this one's filtering and its selection
        # (a weigher stands in for that other thread): re-filtering it then would pass
        # nothing, and the compute's claim would get no limit at all.
        fs = self._scheduler([('only', 8192, 8192)])
        state = fs.host_manager.host_state_map[('only', 'only')]
        weigh = fs.pipeline.weigh

        def weigh_then_fill(*args, **kwargs):
            state.consume_from_request(fakes.fake_spec(memory_mb=12288, vcpus=128,
                                                       root_gb=100))
            return weigh(*args, **kwargs)

        fs.pipeline.weigh = weigh_then_fill
        selections = fs._schedule(self.ctxt, fakes.fake_spec(memory_mb=1024), None,
                                  return_alternates=False)
        self.assertEqual(self.FULL, selections[0][0].limits.to_dict())

    def test_concurrent_requests_never_send_a_selection_without_limits(self):
        fs = self._scheduler([('h%d' % n, 8192, 8192) for n in range(4)])
        seen, errors = [], []
        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
        self.addCleanup(sys.setswitchinterval, interval)

        def schedule():
            for _ in range(60):
                try:
                    spec = fakes.fake_spec(memory_mb=16, vcpus=1, root_gb=0)
                    for per_instance in fs._schedule(self.ctxt, spec, None, True):
                        seen.extend(s.limits.to_dict() for s in per_instance)
                except Exception as exc:  # pragma: no cover - reported below
                    errors.append(exc)

        threads = [threading.Thread(target=schedule) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        self.assertEqual([], errors)
        self.assertEqual(6 * 60 * 3, len(seen))  # each with two alternates
        self.assertEqual([], [limits for limits in seen if limits != self.FULL])


class TestHostManagerInstanceInfo(base.TestCase):

    def setUp(self):
        super().setUp()
        self.hm = host_manager.HostManager(self.conf)
        self.hm.cells = self.hm.enabled_cells = [None]
        self.ctxt = context.get_admin_context()
        self.recreated = []
        self.hm._recreate_instance_info = lambda ctxt, host: self.recreated.append(host)

    def _instances(self, *uuids):
        from minisched.objects import instance
        return instance.InstanceList(objects=[instance.Instance(uuid=u) for u in uuids])

    def test_update_for_a_known_host_upserts(self):
        self.hm._set_host_instances('h1', {}, False)
        self.hm.update_instance_info(self.ctxt, 'h1', self._instances(base.uuids.a))
        self.assertEqual({base.uuids.a}, set(self.hm._instance_info['h1']['instances']))
        self.assertTrue(self.hm._instance_info['h1']['updated'])

    def test_unknown_host_with_one_instance_is_rebuilt_from_the_db(self):
        self.hm.update_instance_info(self.ctxt, 'h2', self._instances(base.uuids.a))
        self.assertEqual(['h2'], self.recreated)

    def test_unknown_host_with_several_instances_is_stored(self):
        self.hm.update_instance_info(self.ctxt, 'h3', self._instances(base.uuids.a,
                                                                      base.uuids.b))
        self.assertEqual(2, len(self.hm._instance_info['h3']['instances']))
        self.assertEqual([], self.recreated)

    def test_delete_pops_the_instance(self):
        self.hm._set_host_instances('h1', {base.uuids.a: None}, False)
        self.hm.delete_instance_info(self.ctxt, 'h1', base.uuids.a)
        self.assertEqual({}, self.hm._instance_info['h1']['instances'])

    def test_sync_match_marks_updated_mismatch_rebuilds(self):
        self.hm._set_host_instances('h1', {base.uuids.a: None}, False)
        self.hm.sync_instance_info(self.ctxt, 'h1', [base.uuids.a])
        self.assertTrue(self.hm._instance_info['h1']['updated'])
        self.hm.sync_instance_info(self.ctxt, 'h1', [base.uuids.a, base.uuids.b])
        self.assertEqual(['h1'], self.recreated)

    def test_host_states_see_the_instance_dict(self):
        state = fakes.fake_host_state('h1', table=self.hm.table)
        self.hm._states_by_host['h1'].append(state)
        self.hm.update_instance_info(self.ctxt, 'h1', self._instances(base.uuids.a,
                                                                      base.uuids.b))
        self.assertEqual({base.uuids.a, base.uuids.b}, set(state.instances))


class TestHostManagerAggregates(base.TestCase):

    def test_update_and_delete_aggregates_follow_hosts(self):
        hm = host_manager.HostManager(self.conf)
        state = fakes.fake_host_state('h1', table=hm.table)
        hm._states_by_host['h1'].append(state)
        agg = fakes.fake_aggregate(metadata={'availability_zone': 'az1'}, hosts=['h1'])
        hm.update_aggregates([agg])
        self.assertEqual(['az1'], [a.metadata['availability_zone'] for a in state.aggregates])
        moved = fakes.fake_aggregate(metadata={'availability_zone': 'az1'}, hosts=['h2'])
        hm.update_aggregates([moved])
        self.assertEqual([], state.aggregates)
        hm.update_aggregates([agg])
        hm.delete_aggregate(agg)
        self.assertEqual([], state.aggregates)


class TestNotifications(SchedulerTestCase):

    def _select_with_notification_driver(self, driver):
        from oslo_messaging.notify import _impl_test
        self.flags(group='oslo_messaging_notifications', driver=driver)
        rpc.cleanup()
        rpc.init(self.conf, url='fake://')
        _impl_test.reset()
        fs = self._scheduler(TestSchedule.HOSTS)
        selections = fs.select_destinations(self.ctxt, fakes.fake_spec(memory_mb=1024), None,
                                            None, None)
        self.assertEqual('big', selections[0][0].service_host)
        return [(message['event_type'], priority)
                for _ctxt, message, priority, _retry in _impl_test.NOTIFICATIONS]

    def test_start_and_end_are_emitted_with_a_driver(self):
        self.assertEqual([('scheduler.select_destinations.start', 'INFO'),
                          ('scheduler.select_destinations.end', 'INFO')],
                         self._select_with_notification_driver(['test']))

    def test_nothing_is_emitted_without_one(self):
        self.assertEqual([], self._select_with_notification_driver(['noop']))


class TestInstanceInfoRebuiltAsTheScheduler(sqlite_databases.SqliteDatabases, base.TestCase):
    """Whoever's context an update carries, a host's cache is rebuilt with every project's
    instances (the database hides other projects' instances from a user's context)."""

    def test_user_context_update_still_reads_every_project(self):
        from minisched.db.main import api as db
        self.use_databases()
        for name, project in (('a', 'p1'), ('b', 'p2')):
            db.instance_create(self.ctxt, {'uuid': getattr(base.uuids, name), 'host': 'h1',
                                           'project_id': project, 'vm_state': 'active'})
        hm = host_manager.HostManager(self.conf)
        hm.cells = hm.enabled_cells = [None]
        user = context.RequestContext(user_id='u1', project_id='p1')
        self.assertEqual(1, len(db.instance_get_all_by_host(user, 'h1')))
        hm.delete_instance_info(user, 'h1', base.uuids.gone)  # unknown host: rebuilt
        self.assertEqual({base.uuids.a, base.uuids.b}, set(hm._instance_info['h1']['instances']))
