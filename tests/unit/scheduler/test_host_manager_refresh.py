"""HostManager.refresh against real SQLite files: queries skipped only while nothing changed."""
import datetime
import shutil
import tempfile
from unittest import mock

import sqlalchemy as sa
from oslo_utils import timeutils

from minisched import context
from minisched.db.api import api as api_db
from minisched.db import engines
from minisched.db import markers
from minisched.db import migration
from minisched.db import utils as db_utils
from minisched.db.main import api as db
from minisched.scheduler import host_manager
from minisched.scheduler import host_refresh
from tests.unit import base
from tests.unit import fakes


class _RefreshTestCase(base.TestCase):
    """A HostManager over fresh SQLite cell and API databases; statements are counted."""

    def setUp(self):
        super().setUp()
        self.dir = tempfile.mkdtemp(prefix='minisched-refresh-')
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.main_url = 'sqlite:///%s/cell1.sqlite' % self.dir
        self.api_url = 'sqlite:///%s/api.sqlite' % self.dir
        migration.db_sync(self.main_url, 'main')
        migration.db_sync(self.api_url, 'api')
        self.flags(group='database', connection=self.main_url)
        self.flags(group='api_database', connection=self.api_url)
        self.flags(service_down_time=86400)
        engines.dispose_all()
        engines.configure(self.conf)
        self.addCleanup(engines.dispose_all)
        self.addCleanup(markers.forget_all)
        self.ctxt = context.get_admin_context()
        self.statements = []
        for engine in (engines.main_engine(), engines.api_engine()):
            sa.event.listen(engine, 'before_cursor_execute', self._count)
            self.addCleanup(sa.event.remove, engine, 'before_cursor_execute', self._count)

    def _count(self, conn, cursor, statement, *args):
        self.statements.append(statement)

    def _add_host(self, host, free_ram_mb=4096, ctxt=None):
        ctxt = ctxt or self.ctxt
        service = db.service_create(ctxt, {'host': host, 'binary': 'minisched-compute',
                                           'topic': 'compute', 'report_count': 1})
        return db.compute_node_create(ctxt, {
            'host': host, 'hypervisor_hostname': host, 'service_id': service['id'],
            'vcpus': 8, 'memory_mb': 8192, 'local_gb': 100, 'vcpus_used': 0,
            'memory_mb_used': 8192 - free_ram_mb, 'local_gb_used': 0,
            'free_ram_mb': free_ram_mb, 'free_disk_gb': 100, 'disk_available_least': 100,
            'hypervisor_type': 'fake', 'hypervisor_version': 1000, 'cpu_info': '',
            'supported_instances': '[]', 'stats': '{}'})

    def _manager(self):
        hm = host_manager.HostManager(self.conf)
        hm.ensure_initialized(self.ctxt)
        return hm

    def _refresh(self, hm, **kwargs):
        del self.statements[:]
        hm.refresh(self.ctxt, **kwargs)
        return list(self.statements)


class TestRefreshSkipsOnlyUnchangedDatabases(_RefreshTestCase):

    def test_unchanged_database_is_not_queried_and_a_commit_is_seen_next(self):
        node = self._add_host('h1', free_ram_mb=4096)
        hm = self._manager()
        self.assertEqual(4096, hm.host_state_map[('h1', 'h1')].free_ram_mb)
        self.assertEqual([], self._refresh(hm))
        self.assertEqual([], self._refresh(hm))
        db.compute_node_update(self.ctxt, node['id'], {'free_ram_mb': 1024,
                                                        'updated_at': timeutils.utcnow()})
        self.assertNotEqual([], self._refresh(hm))  # the next request sees the report
        self.assertEqual(1024, hm.host_state_map[('h1', 'h1')].free_ram_mb)
        self.assertEqual([], self._refresh(hm))

    def test_rows_are_kept_read_only_with_shared_names(self):
        node = self._add_host('h1')
        hm = self._manager()
        state = hm.host_state_map[('h1', 'h1')]
        for row in (state.last_record, state.service._data):
            self.assertIs(db_utils.FrozenRow, type(row))  # no dict per row (memory)
        self.assertIs(state.last_record['host'], state.service['host'])
        db.compute_node_update(self.ctxt, node['id'], {'free_ram_mb': 2048,
                                                        'updated_at': timeutils.utcnow()})
        self._refresh(hm)  # the incremental read keeps them the same way
        self.assertIs(db_utils.FrozenRow, type(state.last_record))
        self.assertEqual(2048, state.last_record['free_ram_mb'])
        self.assertEqual(2048, state.free_ram_mb)

    def test_new_host_is_seen_by_the_next_refresh(self):
        self._add_host('h1')
        hm = self._manager()
        self._refresh(hm)
        self._add_host('h2')
        self._refresh(hm)
        self.assertEqual({('h1', 'h1'), ('h2', 'h2')}, set(hm.host_state_map))

    def test_periodic_full_read_of_an_unchanged_database_keeps_every_host(self):
        self._add_host('h1')
        self._add_host('h2')
        hm = self._manager()
        for sync in hm._cell_sync.values():
            sync['full_at'] -= host_refresh.FULL_RESYNC_SECONDS + 1  # a full read is due
        self.assertEqual([], self._refresh(hm))
        self.assertEqual({('h1', 'h1'), ('h2', 'h2')}, set(hm.host_state_map))
        self.assertEqual([], self._refresh(hm))  # and it counts as done

    def test_periodic_check_lists_every_row_and_reads_only_those_not_applied(self):
        node = self._add_host('h1')
        hm = self._manager()
        self._add_host('h2')
        self._refresh(hm)  # incremental: h2 arrives
        # A change no window can see (its timestamps are far older than any of them).
        old = timeutils.utcnow() - datetime.timedelta(hours=1)
        db.compute_node_update(self.ctxt, node['id'], {'free_ram_mb': 1024, 'updated_at': old,
                                                        'created_at': old})
        self._refresh(hm)
        self.assertEqual(4096, hm.host_state_map[('h1', 'h1')].free_ram_mb)
        for sync in hm._cell_sync.values():
            sync['full_at'] -= host_refresh.FULL_RESYNC_SECONDS + 1  # the check is due
        statements = self._refresh(hm)
        self.assertEqual(1024, hm.host_state_map[('h1', 'h1')].free_ram_mb)
        self.assertEqual({('h1', 'h1'), ('h2', 'h2')}, set(hm.host_state_map))
        # Every live node listed by version and key; read whole: h1's row only, by id.
        self.assertTrue(any(s.startswith('SELECT compute_nodes.id, compute_nodes.updated_at, '
                                         'compute_nodes.created_at, compute_nodes.host, '
                                         'compute_nodes.hypervisor_hostname \nFROM')
                            and 'updated_at >=' not in s for s in statements), statements)
        whole = [s for s in statements if s.startswith(
            'SELECT compute_nodes.id, compute_nodes.created_at, compute_nodes.updated_at, '
            'compute_nodes.uuid')]
        self.assertEqual(1, len(whole), statements)
        self.assertIn('compute_nodes.id IN (?)', whole[0])

    def test_periodic_check_drops_hosts_whose_rows_are_gone(self):
        self._add_host('h1')
        self._add_host('h2')
        hm = self._manager()
        with engines.main_engine().begin() as conn:  # no soft delete: no window sees it
            conn.execute(sa.delete(db.nodes).where(db.nodes.c.host == 'h2'))
        self._refresh(hm)
        self.assertIn(('h2', 'h2'), hm.host_state_map)
        for sync in hm._cell_sync.values():
            sync['full_at'] -= host_refresh.FULL_RESYNC_SECONDS + 1
        self._refresh(hm)
        self.assertEqual({('h1', 'h1')}, set(hm.host_state_map))

    def test_forced_full_refresh_always_reads(self):
        self._add_host('h1')
        hm = self._manager()
        self.assertNotEqual([], self._refresh(hm, full=True))

    def test_new_host_mapping_is_seen_by_the_next_refresh(self):
        cell = api_db.cell_mapping_create(self.ctxt, {
            'name': 'cell1', 'database_connection': self.main_url,
            'transport_url': 'none:///'})
        self._add_host('h1')
        self._add_host('h2')
        api_db.host_mapping_create(self.ctxt, 'h1', cell['id'])
        hm = self._manager()
        self.assertEqual(['h1'], _schedulable(hm))
        self.assertEqual([], self._refresh(hm))
        api_db.host_mapping_create(self.ctxt, 'h2', cell['id'])
        statements = self._refresh(hm)
        self.assertTrue(any('host_mappings' in s for s in statements), statements)
        self.assertEqual(['h1', 'h2'], _schedulable(hm))

    def test_host_mappings_wait_only_while_every_host_held_is_mapped(self):
        cell = api_db.cell_mapping_create(self.ctxt, {
            'name': 'cell1', 'database_connection': self.main_url,
            'transport_url': 'none:///'})
        node = self._add_host('h1')
        api_db.host_mapping_create(self.ctxt, 'h1', cell['id'])
        hm = self._manager()
        self.assertEqual(['h1'], _schedulable(hm))
        with mock.patch.object(host_refresh, 'MAPPINGS_SECONDS', 3600):  # never due here
            # A commit to the API database (an instance built would make one): every host
            # held is mapped, so nothing the read could find would change what is schedulable.
            api_db.host_mapping_create(self.ctxt, 'not-held-yet', cell['id'])
            self.assertFalse(_read_mappings(self._refresh(hm)))
            self._add_host('h2')  # a host appears: its mapping is looked up at once
            self.assertTrue(_read_mappings(self._refresh(hm)))
            self.assertEqual(['h1'], _schedulable(hm))
            # While a host held is unmapped, every commit to the API database is read.
            api_db.host_mapping_create(self.ctxt, 'elsewhere', cell['id'])
            self.assertTrue(_read_mappings(self._refresh(hm)))
            api_db.host_mapping_create(self.ctxt, 'h2', cell['id'])
            self.assertTrue(_read_mappings(self._refresh(hm)))
            self.assertEqual(['h1', 'h2'], _schedulable(hm))
            db.compute_node_update(self.ctxt, node['id'], {'free_ram_mb': 1,
                                                            'updated_at': timeutils.utcnow()})
            self.assertFalse(_read_mappings(self._refresh(hm)))
            # The mapping created before the host came was kept: it is schedulable at once.
            self._add_host('not-held-yet')
            self._refresh(hm)
            self.assertEqual(['h1', 'h2', 'not-held-yet'], _schedulable(hm))
        hm._host_cells_read_at -= host_refresh.MAPPINGS_SECONDS  # due again
        api_db.host_mapping_create(self.ctxt, 'h3', cell['id'])
        self.assertTrue(_read_mappings(self._refresh(hm)))



class TestLateCommits(_RefreshTestCase):
    """Rows committed after a row with a newer timestamp was read: the next request sees them
    within QUICK_SKEW, the next look-back within SKEW; unchanged rows are not read whole."""

    def setUp(self):
        super().setUp()
        self.statements_params = []
        engine = engines.main_engine()
        sa.event.listen(engine, 'before_cursor_execute', self._params)
        self.addCleanup(sa.event.remove, engine, 'before_cursor_execute', self._params)
        self.start = timeutils.utcnow()
        self.nodes = {host: self._add_host(host, free_ram_mb=4096) for host in ('h1', 'h2')}
        # Both hosts created long ago: only updated_at can bring their rows into a window.
        old = self.start - datetime.timedelta(minutes=10)
        with engines.main_engine().begin() as conn:
            for table in (db.services, db.nodes):
                conn.execute(table.update().values(created_at=old, updated_at=old))
        self.hm = self._manager()

    def _params(self, conn, cursor, statement, parameters, *args):
        self.statements_params.append((statement, parameters))

    def _report(self, host, free_ram_mb, stamp):
        db.compute_node_update(self.ctxt, self.nodes[host]['id'],
                               {'free_ram_mb': free_ram_mb, 'updated_at': stamp})

    def _free(self, host):
        return self.hm.host_state_map[(host, host)].free_ram_mb

    def _look_back_due(self):
        for sync in self.hm._cell_sync.values():
            sync['lookback_at'] -= host_refresh.LOOKBACK_SECONDS

    def test_a_late_commit_within_quick_skew_is_seen_by_the_next_request(self):
        self._report('h2', 2048, self.start)
        self._refresh(self.hm)
        late = self.start - host_refresh.QUICK_SKEW + datetime.timedelta(milliseconds=100)
        self._report('h1', 1024, late)
        self._refresh(self.hm)
        self.assertEqual((1024, 2048), (self._free('h1'), self._free('h2')))

    def test_a_later_commit_is_seen_by_the_next_look_back(self):
        self._report('h2', 2048, self.start)
        self._refresh(self.hm)
        late = self.start - host_refresh.SKEW + datetime.timedelta(milliseconds=100)
        self._report('h1', 1024, late)
        self._refresh(self.hm)  # a quick read: its window ends QUICK_SKEW before h2's report
        self.assertEqual(4096, self._free('h1'))
        self._look_back_due()
        self._refresh(self.hm)
        self.assertEqual(1024, self._free('h1'))

    def test_a_look_back_reaches_before_the_previous_look_back(self):
        # The look-back window starts SKEW before the newest timestamp of the previous
        # look-back, not of the previous read: quick reads in between do not shrink it.
        self._report('h2', 2048, self.start)
        self._look_back_due()
        self._refresh(self.hm)  # a look-back: its newest timestamp is h2's report
        self._report('h2', 1536, self.start + datetime.timedelta(seconds=3))
        self._refresh(self.hm)  # a quick read: the newest timestamp moves 3 s on
        late = self.start - host_refresh.SKEW + datetime.timedelta(milliseconds=100)
        self._report('h1', 1024, late)
        self._look_back_due()
        self._refresh(self.hm)
        self.assertEqual((1024, 1536), (self._free('h1'), self._free('h2')))

    def test_unchanged_rows_in_the_window_are_not_read_whole(self):
        self._report('h1', 3072, self.start)
        self._report('h2', 2048, self.start)
        self._refresh(self.hm)
        self.assertEqual([sorted(n['id'] for n in self.nodes.values())], self._ids_read())
        self._report('h2', 1024, self.start + datetime.timedelta(milliseconds=1))
        del self.statements_params[:]
        self._refresh(self.hm)  # both rows are in the window; only h2's changed
        self.assertEqual([[self.nodes['h2']['id']]], self._ids_read())
        self.assertEqual((3072, 1024), (self._free('h1'), self._free('h2')))

    def test_a_node_read_before_its_service_is_applied_once_the_service_is(self):
        service = db.service_create(self.ctxt, {'host': 'h3', 'binary': 'minisched-compute',
                                                'topic': 'compute', 'report_count': 1})
        node = dict(self.nodes['h1'], host='h3', hypervisor_hostname='h3',
                    service_id=service['id'])
        for key in ('id', 'uuid', 'created_at', 'updated_at', 'deleted_at'):
            node.pop(key)
        db.service_destroy(self.ctxt, service['id'])  # the node comes first, alone
        db.compute_node_create(self.ctxt, dict(node, service_id=None))
        self._refresh(self.hm)
        self.assertNotIn(('h3', 'h3'), self.hm.host_state_map)  # no service: not applied
        db.service_create(self.ctxt, {'host': 'h3', 'binary': 'minisched-compute',
                                      'topic': 'compute', 'report_count': 1})
        self._refresh(self.hm)  # the node row, unchanged, is read whole again and applied
        self.assertIn(('h3', 'h3'), self.hm.host_state_map)

    def test_versions_out_of_every_window_are_forgotten(self):
        # What is remembered of applied rows stays bounded by the windows, not the cluster.
        sync, = self.hm._cell_sync.values()
        recent = sync['recent']['compute_nodes']
        self.assertEqual({}, recent)  # a full read remembers nothing; the windows learn
        self._report('h1', 3072, self.start)
        self._report('h2', 2048, self.start)
        self._refresh(self.hm)
        self.assertEqual(set(n['id'] for n in self.nodes.values()), set(recent))
        self._report('h2', 1024, self.start + datetime.timedelta(seconds=10))
        self._look_back_due()
        self._refresh(self.hm)  # h2's report is the newest; h1's row is out of reach
        self.assertEqual({self.nodes['h2']['id']}, set(recent))

    def _ids_read(self):
        """Ids of the compute node rows read whole since the last reset, per statement."""
        reads = [params for statement, params in self.statements_params
                 if statement.startswith('SELECT compute_nodes.id, compute_nodes.created_at, '
                                         'compute_nodes.updated_at, compute_nodes.uuid')
                 and 'compute_nodes.id IN (' in statement]
        del self.statements_params[:]
        return [sorted(p) if isinstance(p, (list, tuple)) else sorted(p.values())
                for p in reads]


def _read_mappings(statements):
    return any('host_mappings' in statement for statement in statements)


def _schedulable(hm):
    return sorted(hm.table.states[row].host for row in hm.candidate_rows())


class TestConsumptionExpiry(_RefreshTestCase):
    """In-memory consumption no compute report followed is dropped after the TTL, from a
    refresh; a host consumed again keeps its consumption until the TTL of the latest."""

    TTL = datetime.timedelta(seconds=120)  # [filter_scheduler] consumption_ttl_seconds

    def setUp(self):
        super().setUp()
        self.start = timeutils.utcnow(with_timezone=True)
        timeutils.set_time_override(self.start)
        self.addCleanup(timeutils.clear_time_override)

    def _at(self, delta):
        timeutils.set_time_override(self.start + delta)

    def _consume(self, state, memory_mb=1024):
        state.consume_from_request(fakes.fake_spec(memory_mb=memory_mb, vcpus=1, root_gb=1))

    def test_consumption_is_dropped_only_once_its_ttl_passed(self):
        for host in ('h1', 'h2'):
            self._add_host(host, free_ram_mb=4096)
        hm = self._manager()
        h1, h2 = hm.host_state_map[('h1', 'h1')], hm.host_state_map[('h2', 'h2')]
        self._consume(h1)
        self._at(datetime.timedelta(seconds=10))
        self._consume(h2)
        self._at(self.TTL - datetime.timedelta(seconds=1))
        hm.refresh(self.ctxt)
        self.assertEqual((3072, 3072), (h1.free_ram_mb, h2.free_ram_mb))
        self._at(self.TTL + datetime.timedelta(seconds=1))
        hm.refresh(self.ctxt)  # h1's consumption is due, h2's 9 s later
        self.assertEqual((4096, 3072), (h1.free_ram_mb, h2.free_ram_mb))
        self.assertIsNone(h1.consumed_at)
        self._at(self.TTL + datetime.timedelta(seconds=11))
        hm.refresh(self.ctxt)
        self.assertEqual((4096, 4096), (h1.free_ram_mb, h2.free_ram_mb))
        self.assertEqual([None, None], [h1.consumed_at, h2.consumed_at])
        self.assertEqual([], hm.table.consumption_due)

    def test_the_ttl_is_the_option(self):
        self.flags(group='filter_scheduler', consumption_ttl_seconds=30)
        self._add_host('h1', free_ram_mb=4096)
        hm = self._manager()
        h1 = hm.host_state_map[('h1', 'h1')]
        self._consume(h1)
        self._at(datetime.timedelta(seconds=29))
        hm.refresh(self.ctxt)
        self.assertEqual(3072, h1.free_ram_mb)
        self._at(datetime.timedelta(seconds=31))
        hm.refresh(self.ctxt)
        self.assertEqual(4096, h1.free_ram_mb)

    def test_a_host_consumed_again_keeps_both_until_the_later_ttl(self):
        self._add_host('h1', free_ram_mb=4096)
        hm = self._manager()
        h1 = hm.host_state_map[('h1', 'h1')]
        self._consume(h1)
        self._at(datetime.timedelta(seconds=60))
        self._consume(h1)
        self._at(self.TTL + datetime.timedelta(seconds=1))  # the first one's TTL only
        hm.refresh(self.ctxt)
        self.assertEqual(2048, h1.free_ram_mb)
        self._at(self.TTL + datetime.timedelta(seconds=61))
        hm.refresh(self.ctxt)
        self.assertEqual(4096, h1.free_ram_mb)
