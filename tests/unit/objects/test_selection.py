"""Selection: the scheduler's answer for one instance, built from a HostState."""
from minisched import objects
from tests.unit import base as test_base
from tests.unit import fakes

uuids = test_base.uuids


class TestSelection(test_base.TestCase):

    def _selection(self, limits, **kw):
        host = fakes.fake_host_state(host='host1', node='node1', uuid=uuids.node,
                                     cell_uuid=uuids.cell)
        host.limits = limits
        return objects.Selection.from_host_state(host, **kw)

    def test_from_host_state_copies_identity(self):
        selection = self._selection({})
        self.assertEqual((uuids.node, 'host1', 'node1', uuids.cell),
                         (selection.compute_node_uuid, selection.service_host,
                          selection.nodename, selection.cell_uuid))
        self.assertIsNone(selection.availability_zone)
        self.assertIsNone(selection.allocation_request_version)

    def test_float_limits_are_truncated_to_int(self):
        selection = self._selection({'memory_mb': 12288.9, 'vcpu': 128.0, 'disk_gb': 99.5})
        self.assertEqual({'memory_mb': 12288, 'vcpu': 128, 'disk_gb': 99},
                         selection.limits.to_dict())
        self.assertIsInstance(selection.limits.memory_mb, int)

    def test_limits_not_set_are_none(self):
        selection = self._selection({'vcpu': 4})
        self.assertIsNone(selection.limits.memory_mb)
        self.assertIsNone(selection.limits.numa_topology)

    def test_allocation_request_is_json(self):
        self.assertEqual('null', self._selection({}).allocation_request)
        selection = self._selection({}, allocation_request={'a': 1},
                                    allocation_request_version='1.19')
        self.assertEqual('{"a": 1}', selection.allocation_request)
        self.assertEqual('1.19', selection.allocation_request_version)

    def test_to_dict_is_the_legacy_destination(self):
        selection = self._selection({'memory_mb': 1536.5, 'disk_gb': None})
        self.assertEqual({'host': 'host1', 'nodename': 'node1', 'limits': {'memory_mb': 1536}},
                         selection.to_dict())

    def test_to_dict_without_limits(self):
        selection = objects.Selection(service_host='h', nodename='n', limits=None)
        self.assertEqual({'host': 'h', 'nodename': 'n', 'limits': {}}, selection.to_dict())

    def test_survives_serialization(self):
        selection = self._selection({'vcpu': 3.7})
        back = objects.Selection.obj_from_primitive(selection.obj_to_primitive())
        self.assertEqual(selection.to_dict(), back.to_dict())
        self.assertEqual(3, back.limits.vcpu)
