"""ComputeNode and ComputeNodeList on a real SQLite cell database: Nova 34's remotables."""
import datetime

from minisched import exception
from minisched import objects
from minisched.objects import compute_node as compute_node_obj
from tests.unit import base
from tests.unit import fakes
from tests.unit import sqlite_databases

COMPUTE = 'minisched-compute'


def make_node(ctxt, host, nodename, service_id=None, hypervisor_type='fake'):
    node = compute_node_obj.ComputeNode(
        ctxt, host=host, hypervisor_hostname=nodename, service_id=service_id, vcpus=4,
        memory_mb=2048, local_gb=40, vcpus_used=0, memory_mb_used=0, local_gb_used=0,
        hypervisor_type=hypervisor_type, hypervisor_version=1, cpu_info='{}',
        supported_hv_specs=[], cpu_allocation_ratio=16.0, ram_allocation_ratio=1.5,
        disk_allocation_ratio=1.0, stats={})
    node.create()
    return node


class TestComputeNode(sqlite_databases.SqliteDatabases, base.TestCase):

    def setUp(self):
        super().setUp()
        self.use_databases()
        self.service = objects.Service(self.ctxt, host='host1', binary=COMPUTE,
                                       topic='compute', report_count=0)
        self.service.create()
        self.n1 = make_node(self.ctxt, 'host1', 'node1', service_id=self.service.id)
        self.n2 = make_node(self.ctxt, 'host1', 'node2', service_id=self.service.id,
                            hypervisor_type='ironic')
        self.n3 = make_node(self.ctxt, 'host2', 'node3')

    def test_get_by_nodename(self):
        self.assertEqual(self.n3.id, objects.ComputeNode.get_by_nodename(self.ctxt, 'node3').id)
        with self.assertRaises(exception.ComputeHostNotFound):
            objects.ComputeNode.get_by_nodename(self.ctxt, 'nowhere')

    def test_by_service_the_first_node_or_none(self):
        self.assertEqual(self.n1.id,
                         objects.ComputeNode.get_by_service_id(self.ctxt, self.service.id).id)
        with self.assertRaises(exception.ServiceNotFound):
            objects.ComputeNode.get_by_service_id(self.ctxt, 12345)
        nodes = objects.ComputeNodeList._get_by_service(self.ctxt, self.service.id,
                                                        use_slave=True)
        self.assertEqual([self.n1.id, self.n2.id], [node.id for node in nodes])
        self.assertEqual([], list(objects.ComputeNodeList._get_by_service(self.ctxt, 12345)))

    def test_by_host_with_use_slave(self):
        nodes = objects.ComputeNodeList.get_all_by_host(self.ctxt, 'host1', use_slave=True)
        self.assertEqual(['node1', 'node2'], [node.hypervisor_hostname for node in nodes])
        first = objects.ComputeNode.get_first_node_by_host_for_old_compat(self.ctxt, 'host1',
                                                                          use_slave=True)
        self.assertEqual(self.n1.id, first.id)
        with self.assertRaises(exception.ComputeHostNotFound):
            objects.ComputeNode.get_first_node_by_host_for_old_compat(self.ctxt, 'nowhere')

    def test_pagination_in_id_order(self):
        page = objects.ComputeNodeList.get_by_pagination
        self.assertEqual([self.n1.id, self.n2.id, self.n3.id],
                         [node.id for node in page(self.ctxt)])
        self.assertEqual([self.n2.id], [node.id for node in page(self.ctxt, limit=1,
                                                                 marker=self.n1.id)])
        self.assertEqual([], list(page(self.ctxt, marker=self.n3.id)))
        self.n1.destroy()  # a deleted node is no marker for a context that cannot see it
        with self.assertRaises(exception.MarkerNotFound):
            page(self.ctxt, marker=self.n1.id)

    def test_by_hypervisor_type(self):
        nodes = objects.ComputeNodeList.get_by_hypervisor_type(self.ctxt, 'ironic')
        self.assertEqual([self.n2.id], [node.id for node in nodes])

    def test_changes_are_read_here_not_through_the_conductor(self):
        conductor = fakes.fake_indirection(self)
        since = datetime.datetime.utcnow() - datetime.timedelta(minutes=1)
        changed = objects.ComputeNodeList.get_all_changed_since(self.ctxt, since)
        self.assertEqual(3, len(changed))
        self.assertEqual([], conductor.calls)
        objects.ComputeNodeList.get_all_by_host(self.ctxt, 'host1', use_slave=True)
        self.assertEqual([('class', 'ComputeNodeList', 'get_all_by_host', ('host1',),
                           {'use_slave': True})], conductor.calls)
