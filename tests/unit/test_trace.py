"""minisched.messaging.trace: records per message, statement and task; files; aggregation; off
is inert.

RPC runs on oslo.messaging's in-memory ``fake://`` transport, the database is a SQLite file.
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from unittest import mock

import oslo_messaging as messaging
import sqlalchemy as sa

from minisched import context
from minisched.db import engines
from minisched import rpc
from minisched.messaging import trace
from minisched.messaging import trace_db
from minisched.messaging import trace_files
from tests.unit import base


class _Endpoint:
    """Echoes, runs a statement, fails, or calls another method of its own topic."""

    target = messaging.Target(version='1.0')

    def __init__(self, db_url=None):
        self.db_url = db_url

    def echo(self, ctxt, value):
        return value

    def query(self, ctxt):
        with engines.engine_for_url(self.db_url).begin() as conn:
            return conn.execute(sa.text('SELECT count(*) FROM sqlite_master')).scalar()

    def fail(self, ctxt):
        raise ValueError('no')

    def relay(self, ctxt):
        client = rpc.get_client(messaging.Target(topic='echo', version='1.0'))
        return client.prepare(timeout=5).call(ctxt, 'echo', value=1)


class TraceTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.directory = tempfile.mkdtemp(prefix='minisched-trace-')
        self.addCleanup(_remove_tree, self.directory)
        self.addCleanup(trace.disable)

    def enable(self):
        trace.enable(self.directory, 'unit')

    def serve(self, endpoint=None):
        """An echo server on the fake transport; returns a client of it."""
        rpc.init(self.conf, url='fake://')
        self.addCleanup(rpc.cleanup)
        server = rpc.get_server(messaging.Target(topic='echo', server='here', version='1.0'),
                                [endpoint or _Endpoint()])
        server.start()
        self.addCleanup(server.wait)
        self.addCleanup(server.stop)
        return rpc.get_client(messaging.Target(topic='echo', version='1.0')).prepare(timeout=5)

    def sqlite_url(self):
        directory = tempfile.mkdtemp(prefix='minisched-trace-db-')
        self.addCleanup(_remove_tree, directory)
        self.addCleanup(engines.dispose_all)
        return 'sqlite:///%s' % os.path.join(directory, 'db.sqlite')

    def rows(self, section, **match):
        return [r for r in trace.snapshot()[section]
                if all(r.get(k) == v for k, v in match.items())]


def _remove_tree(directory):
    for name in os.listdir(directory):
        os.unlink(os.path.join(directory, name))
    os.rmdir(directory)


def _wait_for(predicate, timeout=5):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError('timed out')
        time.sleep(0.01)


class TestOff(TraceTestCase):

    def test_off_records_nothing_and_writes_no_file(self):
        self.assertFalse(trace.ENABLED)
        client = self.serve(_Endpoint(self.sqlite_url()))
        ctxt = context.get_admin_context()
        with trace.task('client.create'):
            self.assertEqual(3, client.call(ctxt, 'echo', value=3))
            client.call(ctxt, 'query')
            client.cast(ctxt, 'echo', value=4)
        self.assertEqual({section: {} for section in trace.KEYS}, trace._data)
        self.assertEqual([], os.listdir(self.directory))
        self.assertIsNone(trace.flush())
        self.assertIs(threading.Thread.start, trace._original_start)

    def test_off_context_carries_no_trace_fields(self):
        values = rpc.RequestContextSerializer().serialize_context(context.get_admin_context())
        self.assertFalse([k for k in values if k.startswith('trace_')])

    def test_disable_stops_recording_and_restores_threads(self):
        self.enable()
        self.assertIsNot(threading.Thread.start, trace._original_start)
        trace.disable()
        self.assertIs(threading.Thread.start, trace._original_start)
        with trace.task('x'):
            pass
        self.assertEqual([], trace.snapshot()['handled'])


class TestRecords(TraceTestCase):

    def test_calls_casts_and_their_senders_are_recorded_with_the_task_as_cause(self):
        self.enable()
        client = self.serve()
        ctxt = context.get_admin_context()
        with trace.task('client.create'):
            for value in range(3):
                client.call(ctxt, 'echo', value=value)
            client.cast(ctxt, 'echo', value=9)
            self.assertRaises(ValueError, client.call, ctxt, 'fail')
        _wait_for(lambda: self.rows('handled', kind='cast'))
        call, = self.rows('handled', method='echo.echo', kind='call')
        self.assertEqual(('client.create', 3, 0, 3), (call['cause'], call['count'],
                                                      call['errors'], call['queued_count']))
        self.assertEqual(3, sum(call['hist'].values()))
        self.assertEqual(3, sum(call['queued_hist'].values()))
        self.assertGreaterEqual(call['cpu_s'], 0.0)
        cast, = self.rows('handled', method='echo.echo', kind='cast')
        self.assertEqual(1, cast['count'])
        failed, = self.rows('handled', method='echo.fail')
        self.assertEqual((1, 1), (failed['count'], failed['errors']))
        sent = {(r['target'], r['kind']): r for r in self.rows('outgoing')}
        self.assertEqual({('echo.echo', 'call'), ('echo.echo', 'cast'), ('echo.fail', 'call')},
                         set(sent))
        self.assertEqual(3, sent['echo.echo', 'call']['count'])
        self.assertEqual(1, sent['echo.fail', 'call']['errors'])
        self.assertTrue(all(r['cause'] == 'client.create' and r['handler'] == 'client.create'
                            for r in sent.values()))
        task, = self.rows('handled', kind='task')
        self.assertEqual(('client.create', 'client.create', 1),
                         (task['cause'], task['method'], task['count']))

    def test_a_message_sent_outside_any_work_is_its_own_cause_down_the_chain(self):
        self.enable()
        client = self.serve()
        client.call(context.get_admin_context(), 'relay')
        relay, = self.rows('handled', method='echo.relay')
        echo, = self.rows('handled', method='echo.echo')
        self.assertEqual('echo.relay', relay['cause'])
        self.assertEqual('echo.relay', echo['cause'])  # sent while handling relay
        inner, = self.rows('outgoing', target='echo.echo')
        self.assertEqual(('echo.relay', 'echo.relay'), (inner['cause'], inner['handler']))
        outer, = self.rows('outgoing', target='echo.relay')
        self.assertEqual(('echo.relay', trace.NONE), (outer['cause'], outer['handler']))

    def test_fanout_casts_are_told_apart(self):
        self.enable()
        self.serve()
        client = rpc.get_client(messaging.Target(topic='echo', version='1.0'))
        client.prepare(fanout=True).cast(context.get_admin_context(), 'echo', value=1)
        _wait_for(lambda: self.rows('handled', method='echo.echo'))
        handled, = self.rows('handled', method='echo.echo')
        sent, = self.rows('outgoing', target='echo.echo')
        self.assertEqual(('fanout', 'fanout'), (handled['kind'], sent['kind']))

    def test_statements_and_transactions_go_to_the_message_being_handled(self):
        self.enable()
        client = self.serve(_Endpoint(self.sqlite_url()))
        ctxt = context.get_admin_context()
        with trace.task('client.create'):
            client.call(ctxt, 'query')
            client.call(ctxt, 'query')
        statements = {r['statement']: r for r in self.rows('db', handler='echo.query')}
        self.assertEqual(2, statements['SELECT sqlite_master']['count'])
        self.assertEqual({'client.create'}, {r['cause'] for r in statements.values()})
        tx, = self.rows('transactions', handler='echo.query')
        self.assertEqual((2, 2, 0), (tx['begins'], tx['commits'], tx['rollbacks']))
        self.assertGreaterEqual(tx['checkouts'], 2)

    def test_periodic_tasks_are_recorded_apart_and_cause_what_they_send(self):
        self.enable()
        client = self.serve()
        calls = []

        def update_available_resource(manager, ctxt):
            calls.append(manager)
            client.cast(ctxt, 'echo', value=1)
        update_available_resource._periodic_enabled = True
        (name, wrapped), = trace.traced_periodic_tasks(
            'compute', [('update_available_resource', update_available_resource)])
        self.assertTrue(wrapped._periodic_enabled)  # oslo.service reads these attributes
        again, = trace.traced_periodic_tasks('compute', [(name, wrapped)])
        self.assertIs(wrapped, again[1])  # a service started twice: not wrapped twice
        wrapped('manager', context.get_admin_context())
        self.assertEqual(['manager'], calls)
        task, = self.rows('handled', kind='periodic')
        self.assertEqual(('compute.update_available_resource',) * 2,
                         (task['cause'], task['method']))
        sent, = self.rows('outgoing')
        self.assertEqual('compute.update_available_resource', sent['cause'])

    def test_threads_minisched_code_starts_work_for_the_message_rpc_layer_threads_do_not(self):
        self.enable()
        done = []
        namespace = {'__name__': 'minisched.compute.fake', 'threading': threading,
                     'done': done}
        exec('def start():\n'
             '    thread = threading.Thread(target=lambda: done.append(sum(range(10000))))\n'
             '    thread.start()\n'
             '    thread.join()\n', namespace)
        with trace.task('client.create'):
            namespace['start']()
            thread = threading.Thread(target=lambda: done.append(1))  # a test's: not minisched
            thread.start()
            thread.join()
        self.assertEqual(2, len(done))
        inherited, = self.rows('handled', kind='thread')
        self.assertEqual(('client.create', 'client.create', 1, 0),
                         (inherited['cause'], inherited['method'], inherited['count'],
                          inherited['errors']))

    def test_work_spawned_on_a_pool_works_for_the_message_that_spawned_it(self):
        from minisched import thread_pool_factory
        self.enable()
        self.addCleanup(thread_pool_factory.reset_all)
        with trace.task('compute.build_and_run_instance'):
            future = thread_pool_factory.spawn_on(
                self.conf, thread_pool_factory.ExecutorType.LONG_TASK,
                lambda n: sum(range(n)), 10000)
        self.assertEqual(sum(range(10000)), future.result(10))
        _wait_for(lambda: self.rows('handled', kind='thread'))
        carried, = self.rows('handled', kind='thread')
        self.assertEqual(('compute.build_and_run_instance', 1, 0),
                         (carried['cause'], carried['count'], carried['errors']))
        # Outside every record, the pool's work is nobody's.
        thread_pool_factory.spawn_on(self.conf, thread_pool_factory.ExecutorType.LONG_TASK,
                                     int).result(10)
        self.assertEqual(1, len(self.rows('handled', kind='thread')))

    def test_object_calls_are_named_by_object_and_method(self):
        from minisched.objects import instance
        primitive = {'minisched_object.name': 'Instance', 'minisched_object.data': {}}
        self.assertEqual('conductor.object_action(Instance.save)', trace.label_of(
            'conductor', None, 'object_action', {'objinst': primitive, 'objmethod': 'save'}))
        self.assertEqual('conductor.object_action(Instance.save)', trace.label_of(
            'conductor', None, 'object_action',
            {'objinst': instance.Instance(), 'objmethod': 'save'}))
        self.assertEqual(
            'conductor.object_class_action_versions(ComputeNode.get_by_host)',
            trace.label_of('conductor', None, 'object_class_action_versions',
                           {'objname': 'ComputeNode', 'objmethod': 'get_by_host'}))
        self.assertEqual('conductor.compute_task.schedule_and_build_instances',
                         trace.label_of('conductor', 'compute_task',
                                        'schedule_and_build_instances', {}))
        self.assertEqual('compute.(malformed)', trace.label_of('compute', None, 'a b' * 99, {}))

    def test_statement_kinds_name_the_verb_and_first_table(self):
        for statement, kind in (
                ('SELECT instances.uuid FROM instances WHERE x = ?', 'SELECT instances'),
                ('SELECT anon_1.id FROM (SELECT id FROM "Compute_Nodes") AS anon_1',
                 'SELECT compute_nodes'),
                ('  insert into instance_actions (a) values (?)', 'INSERT instance_actions'),
                ('UPDATE services SET report_count=? WHERE id=?', 'UPDATE services'),
                ('DELETE FROM build_requests WHERE id = ?', 'DELETE build_requests'),
                ('SELECT 1', 'SELECT'), ('SAVEPOINT sa_1', 'SAVEPOINT'), ('', '?')):
            self.assertEqual(kind, trace_db.statement_kind(statement), statement)


class TestFiles(TraceTestCase):

    def test_flush_writes_one_file_per_process_named_after_the_service(self):
        self.enable()
        with trace.task('t'):
            pass
        path = trace.flush()
        self.assertEqual('unit-%d.json' % os.getpid(), os.path.basename(path))
        trace.set_service('minisched-compute')
        renamed = trace.flush()
        self.assertEqual(['minisched-compute-%d.json' % os.getpid()],
                         os.listdir(self.directory))
        data, = trace_files.read_dir(self.directory)
        self.assertEqual(('minisched-compute', os.getpid(), 1), (
            data['service'], data['pid'], data['handled'][0]['count']))
        self.assertGreater(data['cpu_user_s'] + data['cpu_sys_s'], 0)
        self.assertEqual(renamed, os.path.join(self.directory, os.listdir(self.directory)[0]))

    def test_the_writer_rewrites_the_file_every_few_seconds(self):
        with mock.patch.object(trace, 'WRITE_SECONDS', 0.05):
            self.enable()
            with trace.task('t'):
                pass
            _wait_for(lambda: trace_files.read_dir(self.directory))
            first = trace_files.read_dir(self.directory)[0]['written']
            _wait_for(lambda: trace_files.read_dir(self.directory)[0]['written'] > first)

    def test_a_forked_child_starts_from_zero_in_a_file_of_its_own(self):
        self.enable()
        with trace.task('parent'):
            pass
        pid = os.fork()
        if pid == 0:  # the child: record, write, leave at once
            try:
                with trace.task('child'):
                    pass
                trace.flush()
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        trace.flush()
        files = {p['pid']: p for p in trace_files.read_dir(self.directory)}
        self.assertEqual({os.getpid(), pid}, set(files))
        self.assertEqual(['child'], [r['method'] for r in files[pid]['handled']])
        self.assertEqual(['parent'], [r['method'] for r in files[os.getpid()]['handled']])

    def test_the_environment_variable_turns_it_on_in_a_new_process(self):
        script = ('from minisched.messaging import trace\n'
                  'assert trace.ENABLED\n'
                  'with trace.task("t"):\n'
                  '    pass\n')
        subprocess.run([sys.executable, '-c', script], check=True, timeout=60,
                       env=dict(os.environ, MINISCHED_TRACE_DIR=self.directory))
        data, = trace_files.read_dir(self.directory)  # written at exit
        self.assertEqual(['t'], [r['method'] for r in data['handled']])


#: Two green threads burn CPU in turns; only one works for a task: its CPU must be its own.
_GREEN_SCRIPT = """
import eventlet
eventlet.monkey_patch()
import json, sys, time
from minisched.messaging import trace
trace.enable(sys.argv[1], 'green')
def burn(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
def worker():
    with trace.task('mine'):
        for _ in range(5):
            burn(0.02)
            eventlet.sleep(0)
def other():
    for _ in range(5):
        burn(0.04)
        eventlet.sleep(0)
a, b = eventlet.spawn(worker), eventlet.spawn(other)
a.wait(); b.wait()
row, = trace.snapshot()['handled']
print(json.dumps([trace.snapshot()['cpu_accounting'], row['cpu_s'], row['total_s']]))
"""


class TestGreenThreads(base.TestCase):

    def test_a_green_thread_is_charged_its_own_cpu_not_that_of_the_others(self):
        with tempfile.TemporaryDirectory() as directory:
            done = subprocess.run([sys.executable, '-W', 'ignore', '-c', _GREEN_SCRIPT,
                                   directory], capture_output=True, text=True, timeout=60)
        self.assertEqual(0, done.returncode, done.stderr[-2000:])
        accounting, cpu, wall = json.loads(done.stdout.strip().splitlines()[-1])
        self.assertEqual('greenlet', accounting)
        # Its own 0.1 s, not the 0.2 s of the other green thread that ran meanwhile.
        self.assertGreater(cpu, 0.09)
        self.assertLess(cpu, 0.15)
        self.assertGreater(wall, 0.25)


def _process(pid, started, written, cpu, handled=(), db=()):
    return {'format': trace.FORMAT, 'service': 'minisched-conductor', 'pid': pid,
            'started': started, 'written': written, 'cpu_user_s': cpu, 'cpu_sys_s': 0.0,
            'handled': [dict(cause=c, method=m, kind='call', count=n, errors=0, total_s=t,
                             cpu_s=t / 2, queued_count=n, queued_total_s=t,
                             hist=h, queued_hist=h) for c, m, n, t, h in handled],
            'outgoing': [], 'db': [dict(cause=c, handler=h, statement=s, count=n, errors=0,
                                        total_s=t) for c, h, s, n, t in db],
            'transactions': []}


class TestAggregation(base.TestCase):

    def test_delta_subtracts_snapshots_of_the_same_process_and_merge_adds_processes(self):
        before = [_process(1, 100.0, 110.0, 5.0, handled=[('c', 'm', 2, 0.2, {'80': 2})],
                           db=[('c', 'm', 'SELECT x', 4, 0.04)])]
        after = [_process(1, 100.0, 130.0, 7.0,
                          handled=[('c', 'm', 5, 0.5, {'80': 3, '90': 2})],
                          db=[('c', 'm', 'SELECT x', 4, 0.04), ('c', 'm', 'UPDATE y', 1, 0.1)]),
                 _process(2, 120.0, 130.0, 1.0, handled=[('c', 'm', 1, 0.1, {'90': 1})])]
        delta = trace_files.delta(after, before)
        first, second = delta
        self.assertAlmostEqual(2.0, first['cpu_user_s'])
        self.assertAlmostEqual(20.0, first['window_s'])
        row, = first['handled']
        self.assertEqual((3, {'80': 1, '90': 2}), (row['count'], row['hist']))
        self.assertAlmostEqual(0.3, row['total_s'])
        self.assertEqual(['UPDATE y'], [r['statement'] for r in first['db']])  # no change: out
        self.assertIs(after[1], second)  # new since: whole
        merged = trace_files.merge(delta)
        self.assertEqual(2, merged['processes'])
        self.assertAlmostEqual(3.0, merged['cpu_user_s'])
        self.assertAlmostEqual(20.0, merged['window_s'])
        row, = merged['handled']
        self.assertEqual((4, {'80': 1, '90': 3}), (row['count'], row['hist']))
        self.assertAlmostEqual(0.2, row['cpu_s'])

    def test_percentiles_read_the_histogram(self):
        hist = {}
        for seconds in [0.001] * 90 + [0.1] * 10:
            bucket = str(trace._bucket(seconds))
            hist[bucket] = hist.get(bucket, 0) + 1
        self.assertAlmostEqual(0.001, trace_files.percentile(hist, 50), delta=0.0001)
        self.assertAlmostEqual(0.1, trace_files.percentile(hist, 99), delta=0.01)
        self.assertNotEqual(trace_files.percentile({}, 50), trace_files.percentile({}, 50))  # NaN
        self.assertAlmostEqual(1e-6, trace_files.percentile({'0': 1}, 50))
