"""``[filter_scheduler] track_instance_changes = False``: each request reads its candidates'
instances from the cell database (Nova's ``HostManager._get_instance_info``), in one query."""
import random

from minisched import exception
from minisched import rpc
from minisched.db.main import api as db
from minisched.scheduler import filter_scheduler
from tests.unit import base
from tests.unit import fakes
from tests.unit import sqlite_databases
from tests.unit.scheduler import numa_hosts

HOSTS = ('h1', 'h2', 'h3')


class TestUntrackedInstances(sqlite_databases.SqliteDatabases, base.TestCase):

    def setUp(self):
        super().setUp()
        self.use_databases()
        rpc.init(self.conf, url='fake://')
        self.addCleanup(rpc.cleanup)
        self.flags(group='filter_scheduler', track_instance_changes=False,
                   enabled_filters=['ComputeFilter', 'RamFilter', 'SameHostFilter',
                                    'DifferentHostFilter', 'ServerGroupAntiAffinityFilter',
                                    'TypeAffinityFilter'])
        for name, host, flavor_id in (('a', 'h1', 1), ('b', 'h2', 2), ('gone', 'h3', 1)):
            db.instance_create(self.ctxt, {'uuid': getattr(base.uuids, name), 'host': host,
                                           'instance_type_id': flavor_id,
                                           'project_id': 'p1', 'vm_state': 'active'})
        db.instance_destroy(self.ctxt, base.uuids.gone)

    def _scheduler(self, pipeline=filter_scheduler.RowPipeline):
        fs = numa_hosts.NoRefresh(self.conf)
        fs.pipeline = pipeline(fs.host_manager)
        hm = fs.host_manager
        for free_ram, name in zip((4096, 8192, 6144), HOSTS):
            state = fakes.fake_host_state(name, table=hm.table, free_ram_mb=free_ram)
            hm.host_state_map[(name, name)] = state
            hm._states_by_host[name].append(state)
        hm.cells = hm.enabled_cells = [None]
        return fs

    def _host(self, spec, pipeline=filter_scheduler.RowPipeline):
        random.seed(1)
        return self._scheduler(pipeline)._schedule(self.ctxt, spec, None)[0][0].service_host

    def test_same_and_different_host_see_the_database(self):
        for pipeline in (filter_scheduler.RowPipeline, filter_scheduler.ReferencePipeline):
            same = fakes.fake_spec(scheduler_hints={'same_host': [base.uuids.a]})
            self.assertEqual('h1', self._host(same, pipeline))
            apart = fakes.fake_spec(scheduler_hints={'different_host': [base.uuids.b]})
            self.assertEqual('h3', self._host(apart, pipeline))  # most free RAM but h2

    def test_anti_affinity_and_type_affinity_see_the_database(self):
        group = fakes.fake_group(members=[base.uuids.b, base.uuids.new])
        spec = fakes.fake_spec(instance_group=group, instance_uuid=base.uuids.new)
        self.assertEqual('h3', self._host(spec))
        # h1 runs flavor 1 only, h2 flavor 2, h3 nothing live (its instance is deleted).
        self.flags(group='filter_scheduler', enabled_filters=['TypeAffinityFilter'])
        fs = self._scheduler()
        hm = fs.host_manager
        spec = fakes.fake_spec(flavor=fakes.fake_flavor(id=1))
        hm.read_instances(self.ctxt, hm.get_host_states(hm.candidate_rows(spec)))
        rows = fs.pipeline.filter(hm.candidate_rows(spec), spec, 0)[0]
        self.assertEqual(['h1', 'h3'], sorted(s.host for s in hm.get_host_states(rows)))

    def test_one_query_per_request_not_one_per_host(self):
        fs = self._scheduler()
        self.count_statements()
        fs._schedule(self.ctxt, fakes.fake_spec(), None)
        self.assertEqual(1, sum('FROM instances' in s for s in self.statements))

    def test_a_request_sees_instances_built_since_the_last(self):
        fs = self._scheduler()
        same = fakes.fake_spec(scheduler_hints={'same_host': [base.uuids.c]})
        self.assertRaises(exception.NoValidHost, fs._schedule, self.ctxt, same, None)
        db.instance_create(self.ctxt, {'uuid': base.uuids.c, 'host': 'h1',
                                       'instance_type_id': 1, 'project_id': 'p1',
                                       'vm_state': 'active'})
        same = fakes.fake_spec(scheduler_hints={'same_host': [base.uuids.c]})
        self.assertEqual('h1', fs._schedule(self.ctxt, same, None)[0][0].service_host)
