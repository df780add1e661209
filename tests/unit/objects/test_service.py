"""Service and ServiceList on a real SQLite cell database: Nova 34's remotables, and the
``compute_node`` a compute loads through the conductor."""
from minisched.conductor import manager as conductor_manager
from minisched import exception
from minisched import objects
from minisched.objects import base as objects_base
from minisched.objects import service as service_obj
from tests.unit import base
from tests.unit import fakes
from tests.unit import sqlite_databases
from tests.unit.objects.test_compute_node import COMPUTE, make_node


class TestService(sqlite_databases.SqliteDatabases, base.TestCase):

    def setUp(self):
        super().setUp()
        self.use_databases()
        self.compute = self._service('host1', COMPUTE, 'compute')
        self.scheduler = self._service('host1', 'minisched-scheduler', 'scheduler')
        self.node = make_node(self.ctxt, 'host1', 'node1', service_id=self.compute.id)

    def _service(self, host, binary, topic, **values):
        service = objects.Service(self.ctxt, host=host, binary=binary, topic=topic,
                                  report_count=0, **values)
        service.create()
        return service

    def test_compute_node_loads_on_first_use_and_is_never_written(self):
        service = objects.Service.get_by_compute_host(self.ctxt, 'host1', use_slave=True)
        self.assertFalse(service.obj_attr_is_set('compute_node'))
        self.assertEqual(self.node.uuid, service.compute_node.uuid)
        self.assertEqual(set(), service.obj_what_changed())
        service.compute_node = self.node
        service.disabled = True
        service.save()  # compute_node has no column: only disabled is written
        self.assertTrue(objects.Service.get_by_id(self.ctxt, service.id).disabled)

    def test_compute_node_of_a_service_that_is_no_compute_or_of_no_context(self):
        with self.assertRaises(exception.ServiceNotFound):
            self.scheduler.compute_node
        orphan = objects.Service(host='host1', binary=COMPUTE)
        with self.assertRaises(exception.OrphanedObjectError):
            orphan.compute_node

    def test_a_compute_loads_compute_node_through_the_conductor(self):
        self.use_fake_transport()  # the manager builds RPC clients and a notifier
        conductor = conductor_manager.ConductorManager(self.conf, host='conductor1')
        serializer = objects_base.MinischedObjectSerializer()

        def remote(ctxt, objname, method, versions, args, kwargs):
            """The conductor's answer, as RPC carries it; the conductor has the database."""
            objects_base.MinischedObject.indirection_api = None
            try:
                result = conductor.object_class_action_versions(
                    ctxt, objname, method, versions, serializer.serialize_entity(ctxt, args),
                    kwargs)
            finally:
                objects_base.MinischedObject.indirection_api = indirection
            return serializer.deserialize_entity(ctxt, serializer.serialize_entity(ctxt,
                                                                                   result))
        indirection = fakes.fake_indirection(self)
        indirection.class_results[('ComputeNodeList', 'get_all_by_host')] = remote
        service = self.compute.obj_clone()
        self.assertEqual(self.node.uuid, service.compute_node.uuid)
        self.assertEqual(['ComputeNodeList.get_all_by_host'], indirection.methods())

    def test_get_by_args_raises_where_get_by_host_and_binary_answers_none(self):
        self.assertEqual(self.compute.id,
                         objects.Service.get_by_args(self.ctxt, 'host1', COMPUTE).id)
        with self.assertRaises(exception.HostBinaryNotFound):
            objects.Service.get_by_args(self.ctxt, 'nowhere', COMPUTE)
        self.assertIsNone(objects.Service.get_by_host_and_binary(self.ctxt, 'nowhere',
                                                                 COMPUTE))

    def test_minimum_version_of_several_binaries(self):
        current = service_obj.SERVICE_VERSION
        get = objects.Service.get_minimum_version_multi
        self.assertEqual(current, get(self.ctxt, [COMPUTE, 'minisched-scheduler'],
                                      use_slave=True))
        self.assertEqual(0, get(self.ctxt, ['minisched-conductor']))
        self.assertEqual(current, objects.Service.get_minimum_version(self.ctxt, COMPUTE,
                                                                      use_slave=True))
        with self.assertRaises(exception.ObjectActionError):
            get(self.ctxt, ['nova-compute'])

    def test_computes_by_hypervisor_type(self):
        other = self._service('host2', COMPUTE, 'compute')
        make_node(self.ctxt, 'host2', 'node2', service_id=other.id, hypervisor_type='ironic')
        self._service('host3', COMPUTE, 'compute', disabled=True)
        make_node(self.ctxt, 'host3', 'node3', hypervisor_type='ironic')
        found = objects.ServiceList.get_all_computes_by_hv_type(self.ctxt, 'ironic')
        self.assertEqual(['host2'], [service.host for service in found])
        found = objects.ServiceList.get_all_computes_by_hv_type(self.ctxt, 'fake')
        self.assertEqual(['host1'], [service.host for service in found])
