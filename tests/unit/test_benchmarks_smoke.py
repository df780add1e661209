"""The pipeline bench runs and its decisions match the reference (no timing is asserted)."""
import csv
import io
import os
import shutil
import tempfile
import time
from unittest import mock

from benchmarks import __main__ as bench_main
from benchmarks import common
from benchmarks import pipeline
from benchmarks import replay as replay_bench
from minisched import monkey_patch
from tests.unit import base

EXPECTED = ['pipeline p50 @200 hosts', 'pipeline p99 @200 hosts',
            'reference pipeline p50 @200 hosts', 'decisions = reference @200 hosts']
EXPECTED_NUMA = [name.replace('@', 'NUMA/PCI @') for name in EXPECTED]
EXPECTED_SELECTIVE = [name.replace('@', 'NUMA/PCI selective @') for name in EXPECTED]


class TestPipelineBenchSmoke(base.TestCase):

    def test_row_pipeline_decisions_match_reference_at_200_hosts(self):
        figures = pipeline.run([200], lambda size: 3)
        self.assertEqual(EXPECTED, [f.figure for f in figures])
        decisions = figures[-1]
        self.assertEqual('3/3', decisions.value)
        self.assertTrue(decisions.met)

    def test_numa_pci_decisions_match_reference_at_200_hosts(self):
        figures = pipeline.run([], None, numa_sizes=[200], numa_requests_for=lambda size: 12)
        self.assertEqual(EXPECTED_NUMA + EXPECTED_SELECTIVE, [f.figure for f in figures])
        for decisions in (figures[3], figures[-1]):
            self.assertEqual('12/12', decisions.value)
            self.assertTrue(decisions.met)

    def test_numa_pci_requests_ask_for_what_their_extra_specs_say(self):
        conf = common.in_process_conf()
        with common.overrides(conf, pipeline.numa_conf()):
            specs = [pipeline.make_numa_spec(index, conf)[0] for index in range(40)]
        self.assertTrue(any(s.numa_topology for s in specs))
        self.assertTrue(any(s.pci_requests.requests for s in specs))
        self.assertTrue(any(not s.numa_topology and not s.pci_requests.requests
                            for s in specs))
        with common.overrides(conf, pipeline.numa_conf()):
            selective = [pipeline.make_numa_spec(index, conf, selective=True)[0]
                         for index in range(20)]
        # The selective mix pins every guest CPU.
        self.assertTrue(all(cell.cpu_policy == 'dedicated'
                            for s in selective for cell in s.numa_topology.cells))

    def test_command_prints_table_and_csv_with_expected_rows(self):
        out = io.StringIO()
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, 'bench.csv')
            status = bench_main.main(['--sizes', '200', '--requests', '3', '--skip',
                                      'refresh,e2e,memory,build,build-wide,replay,wire-profile,'
                                      'objects,placement',
                                      '--csv', path],
                                     stdout=out)
            with open(path, newline='') as handle:
                rows = list(csv.DictReader(handle))
        self.assertEqual(0, status)
        self.assertEqual(EXPECTED + EXPECTED_NUMA + EXPECTED_SELECTIVE,
                         [row['figure'] for row in rows])
        self.assertEqual(['3/3'] * 3, [rows[3]['value'], rows[7]['value'], rows[-1]['value']])
        text = out.getvalue()
        self.assertIn('SYNTHETIC', text)
        for figure in EXPECTED:
            self.assertIn(figure, text)
        self.assertIn(common.format_table([]).splitlines()[0].split()[0], text)


class TestReplayBenchSmoke(base.TestCase):

    def test_replays_the_pipeline_requests_over_a_snapshot_file(self):
        lines = []
        figures = replay_bench.run(hosts=200, requests=20, out=lines.append)
        self.assertEqual(['replay 20 requests @200 hosts'], [f.figure for f in figures])
        self.assertIsNone(figures[0].met)  # the target is for 10,000 over 10,000 only
        self.assertRegex(figures[0].note, r'^\d+ instances placed, \d+ NoValidHost; ')
        self.assertEqual(1, len(lines))

    def test_only_runs_the_benches_named(self):
        args = bench_main._parser().parse_args(['--only', 'replay'])
        ran = []
        plan = [(name, lambda out, name=name: ran.append(name) or []) for name in
                bench_main.BENCHES]
        with mock.patch.object(bench_main, '_plan', return_value=plan):
            bench_main.run(args, out=lambda message: None)
        self.assertEqual(['replay'], ran)


class TestWireFloorEndpoint(base.TestCase):
    """The e2e bench's wire floor answers as the scheduler does, in shape and on the wire."""

    def test_answers_one_selection_list_per_instance_through_the_rpc_serializer(self):
        from benchmarks import echo_endpoints
        from minisched import context
        from minisched import rpc
        from minisched.objects import selection
        self.flags(max_attempts=4, group='scheduler')
        endpoint = echo_endpoints.WireFloorEndpoint(self.conf)
        spec, uuids = pipeline.make_spec(4, flavors=pipeline.FLAVORS[:1])  # 3 instances
        ctxt = context.get_admin_context()
        client_side, server_side = rpc.get_serializer(), rpc.get_serializer(server_side=True)
        received = server_side.deserialize_entity(
            ctxt, client_side.serialize_entity(ctxt, spec))
        answer = endpoint.select_destinations(ctxt, spec_obj=received, instance_uuids=uuids,
                                              return_objects=True, return_alternates=True)
        wire = client_side.deserialize_entity(ctxt, server_side.serialize_entity(ctxt, answer))
        self.assertEqual([4, 4, 4], [len(per) for per in wire])
        self.assertTrue(all(isinstance(s, selection.Selection) for per in wire for s in per))
        self.assertEqual(['floor0', 'floor1', 'floor2', 'floor3'],
                         [s.service_host for s in wire[0]])
        alone = endpoint.select_destinations(ctxt, spec_obj=received, instance_uuids=None,
                                             return_objects=True, return_alternates=False)
        self.assertEqual([1, 1, 1], [len(per) for per in alone])


class TestBuildFloor(base.TestCase):
    """The build floor's scheduler picks the computes in turn; its compute's node save is the
    claim's usage; the share is the real throughput's of the floor's."""

    def test_scheduler_gives_the_computes_in_turn_with_their_alternates(self):
        from benchmarks import floor_endpoints
        from minisched import context
        self.flags(max_attempts=3, group='scheduler')
        endpoint = floor_endpoints.FloorScheduler(self.conf, ['c0', 'c1', 'c2', 'c3'])
        spec, uuids = pipeline.make_spec(4, flavors=pipeline.FLAVORS[:1])  # 3 instances
        lists = endpoint.select_destinations(context.get_admin_context(), spec_obj=spec,
                                             instance_uuids=uuids, return_objects=True,
                                             return_alternates=True)
        self.assertEqual([['c0', 'c1', 'c2'], ['c1', 'c2', 'c3'], ['c2', 'c3', 'c0']],
                         [[s.service_host for s in per] for per in lists])
        self.assertEqual(['c3'], [s.nodename for s in endpoint.select_destinations(
            None, spec_obj=spec, instance_uuids=uuids[:1], return_alternates=False)[0]])

    def test_compute_saves_the_claimed_usage_of_its_node(self):
        from benchmarks import floor_endpoints
        from minisched.objects import flavor
        self.use_fake_transport()  # the compute's scheduler client
        compute = floor_endpoints.FloorCompute(self.conf, 'c0', (16, 32768, 400), 7)
        with mock.patch.object(compute.node, 'save') as save:
            compute._claim(flavor.Flavor(vcpus=2, memory_mb=4096, root_gb=40))
        save.assert_called_once_with()
        node = compute.node
        self.assertEqual((2, 4096, 40, 28672, 360, 1), (
            node.vcpus_used, node.memory_mb_used, node.local_gb_used, node.free_ram_mb,
            node.free_disk_gb, node.running_vms))
        self.assertEqual('1', node.stats['num_instances'])

    def test_share_is_held_to_seventy_percent(self):
        from benchmarks import build_floor
        self.assertTrue(build_floor.share_figure(14.0, 20.0).met)
        figure = build_floor.share_figure(13.0, 20.0)
        self.assertEqual((65.0, False), (figure.value, figure.met))


class TestIdleCost(base.TestCase):
    """The e2e bench's in-process figure schedules over its database (no timing asserted)."""

    def test_schedules_over_the_synthetic_database_both_ways(self):
        import uuid

        from benchmarks import databases
        from benchmarks import e2e
        from benchmarks import synthetic
        with databases.sqlite_db() as url:
            synthetic.write_db(url, synthetic.node_rows(50, now=synthetic.old_now()),
                               api_url=url, cell_uuid=str(uuid.uuid4()))
            back_to_back, after_idle = e2e.idle_cost(url, calls=3)
        # NoValidHost would have raised: every call chose a host of the 50.
        self.assertGreater(back_to_back, 0)
        self.assertGreater(after_idle, 0)


class TestOverFloor(base.TestCase):
    """The e2e target: select_destinations p50 minus the wire floor's, by cluster size."""

    def test_the_addition_is_held_to_the_target_of_its_size(self):
        from benchmarks import e2e
        times = {'bare': [1.0, 1.2, 1.1], 'payload': [1.2, 1.3, 1.4], 'floor': [1.5, 1.6, 1.7],
                 'select': [1.9, 2.0, 2.2]}
        figure, = e2e.over_floor_figures(times, 1000)
        self.assertEqual('select_destinations p50 over the wire floor @1000 hosts',
                         figure.figure)
        self.assertAlmostEqual(0.4, figure.value)
        self.assertEqual((True, '<= 0.5 ms'), (figure.met, figure.target))
        slower = dict(times, select=[2.0, 2.2, 2.5])
        figure, = e2e.over_floor_figures(slower, 1000)
        self.assertAlmostEqual(0.6, figure.value)
        self.assertIs(False, figure.met)
        figure, = e2e.over_floor_figures(slower, 10000)
        self.assertEqual((True, '<= 3 ms'), (figure.met, figure.target))
        figure, = e2e.over_floor_figures(times, 2000)  # no target at that size
        self.assertIsNone(figure.met)

    def test_the_throughput_is_shown_next_to_the_wire_floors(self):
        from benchmarks import e2e
        scheduler = [{'latencies': [5.0] * 300, 'errors': [], 'elapsed': 1.0},
                     {'latencies': [6.0] * 100, 'errors': ['MessagingTimeout'],
                      'elapsed': 2.0}]
        floor = [{'latencies': [3.0] * 500, 'errors': [], 'elapsed': 1.0},
                 {'latencies': [3.0] * 500, 'errors': [], 'elapsed': 1.0}]
        rate, latencies, errors = e2e._rate(scheduler)  # over the longest client's time
        self.assertEqual((200.0, 400, 1), (rate, len(latencies), errors))
        figure = e2e._floor_rate_figure(floor, 16, 2, 200.0)
        self.assertEqual('select_destinations wire floor throughput, 16 clients, '
                         '2 echo processes', figure.figure)
        self.assertEqual(1000.0, figure.value)
        self.assertIsNone(figure.met)
        self.assertIn('0 errors; the scheduler reaches 20% of it', figure.note)


class TestStopAll(base.TestCase):
    """The bench's services are stopped together: one SIGTERM each, one deadline for all."""

    def test_services_that_ignore_sigterm_are_killed_after_one_deadline(self):
        import signal
        import subprocess
        import sys

        from benchmarks import cluster
        bench = cluster.Cluster('rabbit://unused', 'sqlite://')
        self.addCleanup(shutil.rmtree, bench.workdir, True)
        marks = os.path.join(bench.workdir, 'terms')
        stubborn = ('import signal, sys, time\n'
                    'def term(*_):\n'
                    '    open(sys.argv[1], "a").write(sys.argv[2] + "\\n")\n'
                    'signal.signal(signal.SIGTERM, term)\n'
                    'print("up", flush=True)\n'
                    'while True: time.sleep(1)\n')
        for index in range(4):
            popen = subprocess.Popen([sys.executable, '-c', stubborn, marks, str(index)],
                                     stdout=subprocess.PIPE, start_new_session=True)
            self.assertEqual(b'up\n', popen.stdout.readline())
            popen.stdout.close()
            bench.procs['s%d' % index] = (popen, None, None, 0)
        start = time.monotonic()
        bench.stop_all(timeout=1.5)
        elapsed = time.monotonic() - start
        with open(marks) as handle:
            self.assertEqual(['0', '1', '2', '3'], sorted(handle.read().split()))
        self.assertEqual([-signal.SIGKILL] * 4,
                         [bench.procs['s%d' % i][0].returncode for i in range(4)])
        # One deadline for the four, not 1.5 s each one after the other (6 s).
        self.assertLess(elapsed, 4.5)


class TestReportingRefresh(base.TestCase):
    """The refresh bench's reporting cluster: rows are written while refreshes are timed."""

    def test_refreshes_while_another_process_writes_reports(self):
        from benchmarks import common
        from benchmarks import databases
        from benchmarks import refresh
        with databases.sqlite_db() as url:  # 200 hosts: ~23 rows a second
            result = refresh.run_backend(common.in_process_conf(), url, hosts=200, repeats=1,
                                         live_samples=25)
        timings, rows_per_second = result['live']
        self.assertEqual(25, len(timings))
        self.assertGreater(rows_per_second, 0)
        figure, = [f for f in refresh.figures_for(result, 200, 'sqlite')
                   if f.figure.startswith('refresh, reporting cluster')]
        self.assertIn('rows written/s', figure.note)


class TestServerDatabases(base.TestCase):
    """The benches' throwaway databases on the servers: made with both schemas, then dropped."""

    def test_each_server_gets_a_migrated_database_dropped_after(self):
        import sqlalchemy as sa
        from sqlalchemy import pool

        from benchmarks import databases
        for backend in databases.SERVER_BACKENDS:
            with self.subTest(backend=backend):
                reachable, why = databases.reachable(backend)
                if not reachable:
                    message = '%s server not reachable: %s' % (backend, why)
                    if os.environ.get('CI', '').lower() == 'true':
                        self.fail(message)
                    self.skipTest(message)
                with databases.server_db(backend) as url:
                    engine = sa.create_engine(url, poolclass=pool.NullPool)
                    tables = set(sa.inspect(engine).get_table_names())
                    engine.dispose()
                self.assertTrue({'compute_nodes', 'services', 'host_mappings'} <= tables)
                self.assertNotIn(sa.engine.make_url(url).database, _databases(backend))


def _databases(backend):
    """The names of the databases on ``backend``'s server."""
    import sqlalchemy as sa
    from sqlalchemy import pool

    from benchmarks import databases
    query = ('SELECT datname FROM pg_database' if backend == 'postgresql' else
             'SHOW DATABASES')
    admin = sa.create_engine(databases.admin_url(backend), poolclass=pool.NullPool)
    try:
        with admin.connect() as conn:
            return {name for name, in conn.execute(sa.text(query))}
    finally:
        admin.dispose()


class TestBuildFigures(base.TestCase):
    """The build bench's figures: sub-second times kept, aware times read as UTC, builds
    that ended in ERROR or never reached the database counted apart."""

    def test_sub_second_builds_give_their_own_times(self):
        import datetime

        from benchmarks import build
        t0 = datetime.datetime(2026, 11, 24, 12, 0, 0, 700000)
        ms = datetime.timedelta(milliseconds=1)
        aware = datetime.timezone(datetime.timedelta(hours=2))
        result = {
            'requested': {'a': t0, 'b': t0 + 100 * ms, 'c': t0 + 200 * ms, 'd': t0 + 300 * ms},
            'create_seconds': 0.3,
            'rows': {
                # created_at read back from a timezone-aware column counts as UTC
                'a': ('active', (t0 + 50 * ms).replace(tzinfo=datetime.timezone.utc)
                      .astimezone(aware), t0 + 250 * ms),
                'b': ('active', t0 + 150 * ms, t0 + 500 * ms),
                'c': ('error', t0 + 250 * ms, None),
            },  # 'd' never reached the database
        }
        figures = {f.figure.split(',')[0]: f for f in build.figures_for(result, 4, 2, 1, 'x')}
        # 250 and 400 ms after their requests, although launched_at would be whole seconds
        self.assertAlmostEqual(325.0, figures['request -> ACTIVE p50'].value, places=6)
        self.assertAlmostEqual(400.0, figures['request -> ACTIVE p99'].value, places=6)
        self.assertAlmostEqual((200 + 350) / 2,
                               figures['instance created_at -> ACTIVE p50'].value, places=6)
        throughput = figures['build throughput']
        self.assertAlmostEqual(2 / 0.5, throughput.value, places=6)
        self.assertIn('2 ACTIVE, 1 ERROR, 1 not done', throughput.note)


class _Conductor:
    """What the bench's conductor does for a boot, in miniature: ask the scheduler, write
    to the database, cast the build to the compute; plus a background method."""

    def __init__(self, db_url):
        self.db_url = db_url

    def schedule(self, ctxt):
        from oslo_messaging import Target
        import sqlalchemy as sa

        from minisched.db import engines
        from minisched import rpc
        host = rpc.get_client(Target(topic='scheduler')).prepare(timeout=5).call(
            ctxt, 'select')
        with engines.engine_for_url(self.db_url).begin() as conn:
            conn.execute(sa.text('SELECT count(*) FROM sqlite_master'))
        rpc.get_client(Target(topic='compute', server=host)).cast(ctxt, 'build')

    def save(self, ctxt):
        return True

    def report(self, ctxt):
        return True


class _Scheduler:
    def select(self, ctxt):
        return 'here'


class _Compute:
    def __init__(self):
        self.built = []

    def build(self, ctxt):
        from oslo_messaging import Target

        from minisched import rpc
        rpc.get_client(Target(topic='conductor')).prepare(timeout=5).call(ctxt, 'save')
        self.built.append(True)


class TestBuildTrace(base.TestCase):
    """The build bench's trace of a small in-process run (fake transport, SQLite) adds up
    per build, with the background apart (no timing is asserted)."""

    BOOTS = 4
    #: CPU seconds per message, as ``benchmarks.wire.measure`` gives them.
    WIRE = {'call': {'client': 0.001, 'server': 0.002, 'broker': 0.001, 'total': 0.004},
            'cast': {'client': 0.0005, 'server': 0.001, 'broker': 0.0005, 'total': 0.002}}

    def _serve(self, topic, endpoint):
        from oslo_messaging import Target

        from minisched import rpc
        server = rpc.get_server(Target(topic=topic, server='here'), [endpoint])
        server.start()
        self.addCleanup(server.wait)
        self.addCleanup(server.stop)

    def _run(self, directory, db_url):
        """Boot BOOTS times and run one periodic task between two bench snapshots."""
        from unittest import mock

        from oslo_messaging import Target

        from benchmarks import build
        from minisched import context
        from minisched.db import engines
        from minisched import rpc
        from minisched.messaging import trace
        with mock.patch.object(trace, 'WRITE_SECONDS', 0.05):
            trace.enable(directory, 'minisched-conductor')
            self.addCleanup(trace.disable)
            rpc.init(self.conf, url='fake://')
            self.addCleanup(rpc.cleanup)
            self.addCleanup(engines.dispose_all)
            compute = _Compute()
            for topic, endpoint in (('conductor', _Conductor(db_url)),
                                    ('scheduler', _Scheduler()), ('compute', compute)):
                self._serve(topic, endpoint)
            conductor = rpc.get_client(Target(topic='conductor'))
            ctxt = context.get_admin_context()
            before = build.trace_snapshot(directory)
            for _ in range(self.BOOTS):
                with trace.task(build.BUILD_CAUSE):
                    conductor.cast(ctxt, 'schedule')
            (_, periodic), = trace.traced_periodic_tasks('compute', [
                ('update_available_resource', lambda manager, c: conductor.cast(c, 'report'))])
            periodic(None, ctxt)
            deadline = time.monotonic() + 10
            while sum(r['count'] for r in trace.snapshot()['handled'] if r['method'] in (
                    'compute.build', 'conductor.report')) < self.BOOTS + 1:
                self.assertLess(time.monotonic(), deadline, 'the boots did not finish')
                time.sleep(0.02)
            after = build.trace_snapshot(directory)
        return build.trace_report(before, after, self.BOOTS, wire_costs=self.WIRE)

    def test_in_process_boots_add_up_per_build_with_the_background_apart(self):
        import re

        # Removed after the cleanups _run adds (they run last first): tracing stops, then
        # its directory goes.
        directory = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, directory, True)
        text, figures = self._run(os.path.join(directory, 'trace'),
                                  'sqlite:///%s/db.sqlite' % directory)
        values = {f.figure: f.value for f in figures}
        # schedule (cast), select (call), build (cast), save (call) per boot.
        self.assertEqual(4.0, values['RPC messages sent per build'])
        # Priced at WIRE: 2 calls at 4 ms and 2 casts at 2 ms.
        self.assertAlmostEqual(12.0, values['build CPU per instance, its messages alone'])
        self.assertAlmostEqual(4.0, values['RPC call CPU (caller + server + broker)'])
        self.assertEqual(1.0, values['DB transactions per build'])
        self.assertGreater(values['build CPU per instance, conductor'], 0)
        self.assertIn('build CPU per instance, postgresql', values)
        self.assertIn('Build trace: %d instances booted' % self.BOOTS, text)
        for message, how in (('conductor.schedule', 'cast'), ('scheduler.select', 'call'),
                             ('compute.build', 'cast'), ('conductor.save', 'call'),
                             ('client.create', 'task')):
            self.assertRegex(text, r'%s\s+%s\s+1\.00\s' % (re.escape(message), how))
        self.assertRegex(text, r'conductor\.schedule\s+scheduler\.select\s+call\s+1\.00\s')
        self.assertRegex(text, r'conductor\.schedule\s+SELECT sqlite_master\s+1\.00\s')
        background = text[text.index('Background:'):]
        self.assertIn('compute.update_available_resource', background)
        self.assertRegex(background, r'conductor\.report\s+cast\s')
        self.assertNotIn('conductor.report', text[:text.index('Background:')])


class TestBackends(base.TestCase):
    """``--backend``: the service benches once per backend, shown side by side."""

    def test_backends_are_parsed_in_order_without_repeats(self):
        args = bench_main._parser().parse_args(['--backend', 'eventlet, threading,eventlet'])
        self.assertEqual(['eventlet', 'threading'], args.backend)
        self.assertEqual(['threading'], bench_main._parser().parse_args([]).backend)

    def test_an_unknown_backend_is_a_usage_error(self):
        stderr = io.StringIO()
        with mock.patch('sys.stderr', stderr), self.assertRaises(SystemExit) as exit_:
            bench_main._parser().parse_args(['--backend', 'threading,asyncio'])
        self.assertEqual(2, exit_.exception.code)
        self.assertIn('unknown backend(s) asyncio', stderr.getvalue())

    def test_each_service_bench_runs_once_per_backend_with_the_services_environment(self):
        seen = []

        def bench(out):
            seen.append(os.environ.get(monkey_patch.ENV))
            return [common.info('calls/s', 10.0 * len(seen))]

        args = bench_main._parser().parse_args(['--backend', 'threading,eventlet',
                                                '--skip', 'pipeline,refresh,memory,build,'
                                                          'build-wide'])
        with mock.patch.object(bench_main, '_plan', return_value=[('e2e', bench)]):
            figures, failed = bench_main.run(args, out=lambda message: None)
        self.assertFalse(failed)
        self.assertEqual(['1', '0'], seen)
        self.assertEqual(['calls/s [threading]', 'calls/s [eventlet]'],
                         [f.figure for f in figures])
        table = common.format_side_by_side(figures, args.backend)
        self.assertEqual(['figure', 'threading', 'eventlet'], table.splitlines()[0].split())
        self.assertEqual(['calls/s', '10', '20'], table.splitlines()[2].split())


class TestWireProfileBench(base.TestCase):
    """The wire-profile bench times both profiles on both messages."""

    def test_each_message_gets_both_profiles_and_their_difference(self):
        from benchmarks import wire_profile
        figures = wire_profile.run(rounds=2)
        self.assertEqual(6, len(figures))
        self.assertEqual(['serializers, minisched profile', 'serializers, nova profile',
                          'nova profile adds'] * 2,
                         [f.figure.split(':')[0] for f in figures])
        self.assertTrue(all(f.value > 0 for f in figures if 'serializers' in f.figure))


class TestObjectsBench(base.TestCase):
    """The objects bench times the six steps of both requests and sizes their primitives."""

    def test_each_request_gets_its_steps_total_and_sizes(self):
        from benchmarks import objects
        figures = objects.run(rounds=2)
        names = [f.figure for f in figures]
        self.assertEqual(2 * 9, len(names))
        for kind in ('plain', 'NUMA/PCI'):
            rows = {f.figure.split(': ', 1)[1]: f for f in figures
                    if f.figure.startswith('objects, %s:' % kind)}
            steps = [rows[name].value for name in rows if rows[name].unit == 'us'
                     and name != 'per select_destinations']
            self.assertEqual(6, len(steps))
            self.assertAlmostEqual(sum(steps), rows['per select_destinations'].value)
            self.assertGreater(rows['RequestSpec primitive'].value, 1000)
            self.assertGreater(rows['Selections primitive'].value, 1000)
        sizes = {f.figure: f.value for f in figures if f.unit == 'bytes'}
        # The NUMA/PCI request carries its topology, PCI requests and image properties.
        self.assertGreater(sizes['objects, NUMA/PCI: RequestSpec primitive'],
                           sizes['objects, plain: RequestSpec primitive'])

    def test_the_request_round_trips_to_the_spec_the_api_built(self):
        from oslo_serialization import jsonutils

        from benchmarks import objects
        from minisched import context
        from minisched import rpc
        conf = common.in_process_conf()
        ctxt = context.get_admin_context()
        _, extra_specs, properties = objects.REQUESTS[1]
        with common.overrides(conf, {'pci': pipeline.numa_conf()['pci']}):
            spec = objects.build_spec(ctxt, conf, objects._flavor(extra_specs),
                                      objects._image(properties))
        self.assertEqual(2, len(spec.numa_topology.cells))
        self.assertEqual(['nic'], [r.alias_name for r in spec.pci_requests.requests])
        received = rpc.get_serializer(server_side=True).deserialize_entity(
            ctxt, jsonutils.loads(jsonutils.dumps(
                rpc.get_serializer().serialize_entity(ctxt, spec))))
        self.assertEqual('q35', received.image.properties.hw_machine_type)
        self.assertEqual(2, len(received.numa_topology.cells))
        answer = objects.selections(received)
        self.assertEqual([objects.SELECTIONS], [len(per) for per in answer])
        self.assertIsNotNone(answer[0][0].limits.numa_topology)
