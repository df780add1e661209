"""Recording requests, and replaying them over a snapshot: the figures, checked by hand."""
import errno
import json
import os
import shutil
import subprocess
import tempfile

from minisched.cmd import manage_scheduler_replay as replay_cmd
from minisched import context
from minisched import exception
from minisched import rpc
from minisched.objects import request_spec
from minisched.scheduler import manager
from minisched.scheduler.replay import files
from minisched.scheduler.replay import offline
from minisched.scheduler.replay import recorder
from minisched.scheduler.replay import run as replay
from minisched.scheduler.replay import snapshot
from minisched.scheduler.replay import trace
from tests.unit import base
from tests.unit.scheduler import replay_hosts


class _Case(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.flags(group='filter_scheduler', enabled_filters=replay_hosts.FILTERS,
                   weight_classes=['RAMWeigher'])
        self.snapshot = replay_hosts.two_hosts()

    def _mix(self, *entries):
        path = os.path.join(self.tmp, 'mix.json')
        with open(path, 'w') as handle:
            json.dump([{'flavor': name, 'count': count} for name, count in entries], handle)
        return trace.described_requests(self.snapshot, mix=path)

    def _replay(self, requests, name='spread'):
        return replay.replay(self.snapshot, requests, replay.scheduler_for(self.conf, name),
                             name)


class TestReplayFigures(_Case):
    """Two empty hosts of 4 GB, 4 vCPUs, 40 GB (ratios 1.0); three small (1 GB, 1 vCPU,
    10 GB) then a big (4 GB) request."""

    def _requests(self):
        smalls = trace.described_requests(self.snapshot, flavor='small', count=3)
        return smalls + trace.described_requests(self.snapshot, flavor='big', count=1)

    def test_spreading_places_small_ones_alternately_and_the_big_one_nowhere(self):
        outcome = self._replay(self._requests())
        # Tie first (row order: a), then the host with more free RAM.
        self.assertEqual([[('a', 'a')], [('b', 'b')], [('a', 'a')], None], outcome.placements)
        self.assertEqual({'RamFilter': 1}, dict(outcome.emptied_by))
        # Filter runs: 2 hosts each, 4 runs; RamFilter rejected both hosts for the big one.
        self.assertEqual(2, outcome.rejected['RamFilter'])
        self.assertEqual(0, outcome.rejected['ComputeFilter'])
        self.assertEqual((0, 2), outcome.hosts_used)
        ram = outcome.utilization['ram']
        self.assertEqual([50.0, 25.0], ram['hosts'])  # 2 GB and 1 GB of 4 GB
        self.assertEqual((27.5, 37.5, 47.5, 50.0), (ram['p10'], ram['p50'], ram['p90'],
                                                     ram['p100']))
        self.assertEqual((37.5, 12.5), (ram['mean'], ram['stdev']))
        self.assertEqual([50.0, 25.0], outcome.utilization['vcpu']['hosts'])
        # Small: 4 + 4 before; a holds 2 more, b 3 after. Big: 1 + 1 before, none after.
        self.assertEqual({'small': (8, 5), 'big': (2, 0)}, outcome.fits)

    def test_stacking_fills_one_host_and_leaves_the_other_for_the_big_one(self):
        self.flags(group='filter_scheduler', ram_weight_multiplier=-1.0)
        outcome = self._replay(self._requests(), 'stack')
        self.assertEqual([[('a', 'a')]] * 3 + [[('b', 'b')]], outcome.placements)
        self.assertEqual({}, dict(outcome.emptied_by))
        self.assertEqual((0, 2), outcome.hosts_used)
        self.assertEqual([75.0, 100.0], outcome.utilization['ram']['hosts'])
        self.assertEqual({'small': (8, 1), 'big': (2, 0)}, outcome.fits)

    def test_the_report_sets_configurations_side_by_side_with_their_differences(self):
        requests = self._requests()
        spread = self._replay(requests)
        self.flags(group='filter_scheduler', ram_weight_multiplier=-1.0)
        stack = self._replay(requests, 'stack')
        columns, rows = replay_cmd.report([spread, stack], requests)
        self.assertEqual(['Figure', 'spread', 'stack'], columns)
        table = {row[0]: row[1:] for row in rows}
        self.assertEqual([3, 4], table['instances placed'])
        self.assertEqual([1, 0], table['NoValidHost'])
        self.assertEqual([1, 0], table['NoValidHost: emptied by RamFilter'])
        self.assertEqual(['8 -> 5', '8 -> 1'], table['small that still fit (before -> after)'])
        self.assertEqual(['37.5 (12.5)', '87.5 (12.5)'],
                         table['RAM used % of allocatable mean (stdev)'])
        self.assertEqual([2, 2], table['requests placed differently'])
        self.assertEqual(['b', 'a'], table['request #2 (small)'])
        self.assertEqual(['NoValidHost', 'b'], table['request #4 (big)'])

    def test_a_down_service_is_down_as_at_the_snapshot_not_as_now(self):
        late = replay_hosts.TAKEN.replace(hour=11)  # an hour before the snapshot
        self.snapshot = snapshot.from_rows(
            [replay_hosts.pair(1, 'a', beat=late), replay_hosts.pair(2, 'b')],
            taken=replay_hosts.TAKEN, flavors=[replay_hosts.SMALL])
        outcome = self._replay(trace.described_requests(self.snapshot, flavor='small',
                                                          count=5))
        # b reported at the snapshot's time, however long ago that is now: it is up.
        self.assertEqual([[('b', 'b')]] * 4 + [None], outcome.placements)
        self.assertEqual(5, outcome.rejected['ComputeFilter'])


class TestRecording(_Case):

    def setUp(self):
        super().setUp()
        rpc.init(self.conf, url='fake://')
        self.addCleanup(rpc.cleanup)

    def _manager(self):
        mgr = manager.SchedulerManager(self.conf, host='sched1')
        mgr.driver = offline.HeldStateScheduler(self.conf)
        snapshot.fill(mgr.driver.host_manager, self.snapshot)
        return mgr

    def _select(self, mgr, spec, count):
        uuids = [getattr(base.uuids, 'vm%d' % n) for n in range(count)]
        with offline.clock_at(replay_hosts.TAKEN):
            return mgr.select_destinations(context.get_admin_context(), spec_obj=spec,
                                           instance_uuids=uuids, return_objects=True)

    def _specs(self, *entries):
        from minisched.objects import request_spec
        return [request_spec.RequestSpec.obj_from_primitive(r.spec)
                for name, count in entries
                for r in trace.described_requests(self.snapshot, flavor=name, count=count)]

    def test_recorded_requests_replay_to_the_same_answers(self):
        self.flags(group='scheduler', record_requests_to=os.path.join(self.tmp, 'rec'))
        mgr = self._manager()
        specs = self._specs(('small', 5), ('big', 1))
        for spec in specs[:5]:
            self._select(mgr, spec, 1)
        self.assertRaises(Exception, self._select, mgr, specs[5], 1)  # NoValidHost
        self._select(mgr, self._specs(('small', 1))[0], 1)
        requests = trace.load_trace(os.path.join(self.tmp, 'rec'))
        self.assertEqual(7, len(requests))
        self.assertEqual('NoValidHost', requests[5].recorded)
        self.assertEqual([('b', 'b')], requests[1].recorded)
        outcome = self._replay(requests)
        self.assertEqual((7, 7), outcome.reproduced)
        self.assertEqual([r.recorded if r.recorded != 'NoValidHost' else None
                          for r in requests], outcome.placements)

    def _small_filesystem(self, size='64k'):
        """A tmpfs of ``size`` mounted in the test's directory (root only), unmounted after."""
        point = os.path.join(self.tmp, 'small')
        os.mkdir(point)
        self.addCleanup(subprocess.run, replay_hosts.need_tmpfs(point, 'size=' + size),
                        check=True)
        return point

    def test_a_full_disk_leaves_whole_lines_and_the_trace_replays(self):
        point = self._small_filesystem()
        rec_dir = os.path.join(point, 'rec')
        self.flags(group='scheduler', record_requests_to=rec_dir)
        mgr = self._manager()
        specs = self._specs(('small', 7))
        for spec in specs[:2]:
            self._select(mgr, spec, 1)
        (trace_path,) = [os.path.join(rec_dir, n) for n in os.listdir(rec_dir)]
        size = os.path.getsize(trace_path)
        line = max(len(x) for x in open(trace_path, 'rb'))
        filler = replay_hosts.fill(point)
        with self.assertRaises(OSError) as full:
            with open(os.path.join(point, 'more'), 'wb', buffering=0) as handle:
                handle.write(b'x' * 4096)
        self.assertEqual(errno.ENOSPC, full.exception.errno)
        # The trace's last page has room for part of a line, not a whole one: the next
        # record is written part way before ENOSPC.
        self.assertTrue(0 < 4096 - size % 4096 < line, (size, line))
        with self.assertLogs(recorder.LOG, 'WARNING') as logs:
            for spec in specs[2:5]:
                self.assertEqual(1, len(self._select(mgr, spec, 1)))  # answered as usual
        self.assertIn('No space left on device', logs.output[0])
        self.assertEqual(size, os.path.getsize(trace_path))  # the part written, cut off
        os.unlink(filler)
        for spec in specs[5:]:
            self._select(mgr, spec, 1)
        skipped = []
        requests = trace.load_trace(rec_dir, skipped)
        self.assertEqual([], skipped)
        self.assertEqual(4, len(requests))  # the 2 before and the 2 after the full disk
        with open(trace_path, 'rb') as handle:
            self.assertEqual(4, sum(1 for x in handle if x.endswith(b'\n')))
        self.assertEqual(4, len(self._replay(requests).placements))

    def test_a_line_cut_by_a_killed_writer_is_dropped_when_recording_resumes(self):
        rec_dir = os.path.join(self.tmp, 'rec')
        self.flags(group='scheduler', record_requests_to=rec_dir)
        mgr = self._manager()
        self._select(mgr, self._specs(('small', 1))[0], 1)
        (trace_path,) = [os.path.join(rec_dir, n) for n in os.listdir(rec_dir)]
        with open(trace_path, 'rb') as handle:
            whole = handle.read()
        with open(trace_path, 'ab') as handle:
            handle.write(whole[:len(whole) // 2])  # what a process killed mid-write leaves
        mgr = self._manager()  # a new process: the recorder opens the file again
        self._select(mgr, self._specs(('small', 1))[0], 1)
        skipped = []
        self.assertEqual(2, len(trace.load_trace(trace_path, skipped)))
        self.assertEqual([], skipped)

    def test_an_unwritable_directory_warns_once_and_fails_no_request(self):
        blocker = os.path.join(self.tmp, 'a-file')
        open(blocker, 'w').close()
        self.flags(group='scheduler', record_requests_to=os.path.join(blocker, 'rec'))
        mgr = self._manager()
        with self.assertLogs(recorder.LOG, 'DEBUG') as logs:
            for spec in self._specs(('small', 3)):
                self.assertEqual(1, len(self._select(mgr, spec, 1)))
        warnings = [r for r in logs.records if r.levelname == 'WARNING']
        self.assertEqual(1, len(warnings), logs.output)
        self.assertIn('Cannot record scheduler requests to %s' % blocker,
                      warnings[0].getMessage())

    def test_files_rotate_past_their_size_and_keep_so_many(self):
        rec = recorder.RequestRecorder(self.tmp, max_bytes=4000, backups=2)  # 2 a file
        spec = self._specs(('small', 1))[0]
        for _ in range(12):
            rec.finish(rec.start(spec, [base.uuids.vm], False), error=exception.NoValidHost(
                reason='none'))
        names = sorted(os.listdir(self.tmp))
        current = 'requests-%d.jsonl' % os.getpid()
        self.assertEqual([current, current + '.1', current + '.2'], names)
        for name in names:
            self.assertLessEqual(os.path.getsize(os.path.join(self.tmp, name)), 4000)
        # The newest request is in the current file, the older ones in .1 then .2.
        sequences = [[json.loads(line)['sequence'] for line in open(
            os.path.join(self.tmp, name))] for name in (current + '.2', current + '.1', current)]
        flat = [s for chunk in sequences for s in chunk]
        self.assertEqual(sorted(flat), flat)
        self.assertEqual(11, flat[-1])


class TestBadInput(_Case):

    def _file(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as handle:
            handle.write(text)
        return path

    def _recorded(self, count=2):
        """A trace file of ``count`` recorded requests (NoValidHost answers); its lines."""
        rec = recorder.RequestRecorder(os.path.join(self.tmp, 'rec'))
        spec = request_spec.RequestSpec.obj_from_primitive(
            trace.described_requests(self.snapshot, flavor='small', count=1)[0].spec)
        for _ in range(count):
            rec.finish(rec.start(spec, [base.uuids.vm], False),
                       error=exception.NoValidHost(reason='none'))
        path = rec._path()
        with open(path) as handle:
            return path, handle.read().splitlines()

    def test_a_trace_line_cut_short_is_skipped_and_named(self):
        path, lines = self._recorded(2)
        self._file(path, lines[0] + '\n' + lines[1][:40])
        skipped = []
        requests = trace.load_trace(path, skipped)
        self.assertEqual(1, len(requests))
        self.assertEqual([(path, 2)], [(p, n) for p, n, _why in skipped])
        self.assertIn('not JSON (cut short?)', skipped[0][2])
        self.assertEqual(['line 2 of %s skipped: %s' % (path, skipped[0][2])],
                         trace.describe_skipped(skipped))

    def test_hostile_trace_lines_are_skipped_each_with_its_reason(self):
        path, lines = self._recorded(1)
        good = json.loads(lines[0])
        flavor = good['request_spec']['minisched_object.data']['flavor']
        huge = json.loads(json.dumps(good))
        huge['request_spec']['minisched_object.data']['flavor']['minisched_object.data'][
            'memory_mb'] = 2 ** 40
        cases = [
            (dict(good, answer=5), 'answer must be array'),
            (dict(good, instance_uuids='x'), 'instance_uuids must be array or null'),
            (dict(good, request_spec=flavor), 'request_spec.minisched_object.name must be '
                                              'same as const definition'),
            (huge, 'memory_mb 1099511627776 is out of 0..2147483647'),
            ('[' * 5000 + ']' * 5000, 'nested deeper than 32 levels'),
            ('{"version": 1, "x": NaN}', 'NaN is not a JSON number'),
            (dict(good, version=7), 'version 7, this minisched reads version 1'),
            ('\x1b[31m', 'not JSON'),
        ]
        self._file(path, '\n'.join([lines[0]] + [
            case if isinstance(case, str) else json.dumps(case) for case, _ in cases]) + '\n')
        skipped = []
        self.assertEqual(1, len(trace.load_trace(path, skipped)))
        self.assertEqual(list(range(2, 2 + len(cases))), [n for _p, n, _why in skipped])
        for (_case, reason), (_p, _n, why) in zip(cases, skipped):
            self.assertIn(reason, why)

    def test_a_trace_with_no_line_left_is_refused_with_the_first_reason(self):
        path = self._file('requests-1.jsonl', json.dumps({'version': 7, 'request_spec': {}}))
        with self.assertRaises(exception.InvalidTrace) as caught:
            trace.load_trace(path)
        self.assertIn('no request in it; line 1 of %s skipped: version 7, this minisched '
                      'reads version 1' % path, caught.exception.format_message())

    def test_trace_files_larger_than_a_replay_reads_are_refused_unread(self):
        path = self._file('requests-1.jsonl', '')
        os.truncate(path, files.MAX_TRACE_BYTES + 1)  # sparse: nothing to read
        with self.assertRaises(exception.InvalidTrace) as caught:
            trace.load_trace(self.tmp)
        self.assertIn('%d bytes in 1 files, more than the %d a replay reads' % (
            files.MAX_TRACE_BYTES + 1, files.MAX_TRACE_BYTES),
            caught.exception.format_message())

    def test_a_directory_without_recordings_is_refused(self):
        with self.assertRaises(exception.InvalidTrace) as caught:
            trace.load_trace(self.tmp)
        self.assertIn('no requests-*.jsonl files', caught.exception.format_message())

    def test_a_recorded_spec_that_is_no_request_spec_names_the_request(self):
        good = trace.described_requests(self.snapshot, flavor='small', count=1)[0]
        flavor = good.spec['minisched_object.data']['flavor']
        for spec, why in ((dict(flavor, **{'minisched_object.version': '9.9'}),
                           'IncompatibleObjectVersion'), (flavor, 'Flavor')):
            with self.assertRaises(exception.InvalidTrace) as caught:
                self._replay([good, trace.Request(spec, None, 1)])
            self.assertIn('(request #2): not a RequestSpec: %s' % why,
                          caught.exception.format_message())

    def test_an_unknown_filter_names_the_configuration(self):
        self.flags(group='filter_scheduler', enabled_filters=['RamFilter', 'NoSuchFilter'])
        with self.assertRaises(exception.InvalidReplayConfig) as caught:
            replay.scheduler_for(self.conf, 'bad.conf')
        self.assertIn('bad.conf', caught.exception.format_message())
        self.assertIn('NoSuchFilter', caught.exception.format_message())

    def test_an_unknown_flavor_names_those_there_are(self):
        with self.assertRaises(exception.InvalidTrace) as caught:
            trace.described_requests(self.snapshot, flavor='huge', count=1)
        self.assertIn("no flavor 'huge' in the snapshot (it has: big, small)",
                      caught.exception.format_message())
