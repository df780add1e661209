"""compute.API.create against SQLite: what the instance record keeps of its image."""
from unittest import mock

from oslo_messaging._drivers import amqp as amqp_common
from oslo_messaging._drivers import common as driver_common
from oslo_serialization import jsonutils
import sqlalchemy as sa

from minisched.compute import api as compute_api
from minisched.compute import create_bounds
from minisched import context
from minisched import exception
from minisched.objects import build_request as build_request_obj
from minisched.objects import instance as instance_obj
from minisched.objects import instance_group as instance_group_obj
from minisched.objects import request_spec as request_spec_obj
from minisched import rpc
from tests.unit import base, fakes, sqlite_databases

uuids = base.uuids
IMAGE = {
    'id': uuids.image, 'disk_format': 'qcow2', 'container_format': 'bare', 'min_ram': 256,
    'min_disk': 1,
    'properties': {'os_distro': 'ubuntu', 'hw_machine_type': 'q35', 'hw_cpu_cores': 4,
                   'architecture': 'amd64', 'img_block_device_mapping': '[{"big": 1}]'},
}


class TestCreateKeepsTheImage(sqlite_databases.SqliteDatabases, base.TestCase):

    def setUp(self):
        super().setUp()
        self.use_databases()
        self.use_fake_transport()  # the build is cast to the conductor
        self.ctxt = context.RequestContext(user_id='user1', project_id='project1',
                                           is_admin=True)

    def _create(self, image=IMAGE):
        uuid, = compute_api.API(self.conf).create(
            self.ctxt, fakes.fake_flavor(root_gb=10), image=image)
        return build_request_obj.BuildRequest.get_by_instance_uuid(self.ctxt, uuid).instance

    def test_image_properties_are_kept_in_system_metadata(self):
        self.assertEqual({
            'image_os_distro': 'ubuntu', 'image_hw_machine_type': 'q35',
            'image_hw_cpu_cores': '4', 'image_architecture': 'amd64',
            'image_disk_format': 'qcow2', 'image_container_format': 'bare',
            'image_min_ram': '256', 'image_min_disk': '10',  # raised to the flavor's root disk
            'image_base_image_ref': uuids.image,
        }, self._create().system_metadata)

    def test_instance_in_its_cell_reads_back_the_requested_image(self):
        instance = self._create()
        instance.create()  # what the conductor does once the scheduler has chosen a host
        image_meta = instance_obj.Instance.get_by_uuid(self.ctxt, instance.uuid).image_meta
        self.assertEqual((uuids.image, 'qcow2', 'bare', 256, 10), (
            image_meta.id, image_meta.disk_format, image_meta.container_format,
            image_meta.min_ram, image_meta.min_disk))
        # As the scheduler reads it: instances it tracks by uuid, filled in one query.
        instances = instance_obj.InstanceList(
            self.ctxt, objects=[instance_obj.Instance(uuid=instance.uuid)])
        instances.fill_metadata()
        props = instances[0].image_meta.properties.to_dict()
        self.assertEqual({'os_distro': 'ubuntu', 'hw_machine_type': 'q35', 'hw_cpu_cores': 4,
                          'hw_architecture': 'x86_64'}, props)
        requested = request_spec_obj.RequestSpec.get_by_instance_uuid(self.ctxt, instance.uuid)
        requested_props = requested.image.properties.to_dict()
        # The request keeps the block device mapping the system metadata has no room for.
        self.assertEqual([{'big': '1'}], requested_props.pop('img_block_device_mapping'))
        self.assertEqual(requested_props, props)

    def test_no_image_keeps_only_the_flavor_minimum(self):
        self.assertEqual({'image_min_disk': '10', 'image_base_image_ref': None},
                         self._create(image=None).system_metadata)


class TestCreateAsksForNUMAAndPCI(sqlite_databases.SqliteDatabases, base.TestCase):
    """The flavor's extra specs and the image's properties become the instance's and the
    request spec's NUMA topology and PCI requests; an impossible request writes nothing."""

    def setUp(self):
        super().setUp()
        self.use_databases()
        self.use_fake_transport()
        self.flags(group='pci', alias=[
            '{"name": "nic", "vendor_id": "8086", "product_id": "1520"}'])
        self.ctxt = context.RequestContext(user_id='user1', project_id='project1',
                                           is_admin=True)
        self.api = compute_api.API(self.conf)

    def test_pinned_pci_flavor_is_stored_with_its_topology_and_requests(self):
        flavor = fakes.fake_flavor(vcpus=4, memory_mb=2048, extra_specs={
            'hw:numa_nodes': '2', 'hw:cpu_policy': 'dedicated', 'pci_passthrough:alias': 'nic:2',
            'hw:mem_page_size': 'any'})  # lets the image choose
        uuid, = self.api.create(self.ctxt, flavor, image={'properties': {
            'hw_mem_page_size': 'large'}})
        instance = build_request_obj.BuildRequest.get_by_instance_uuid(self.ctxt, uuid).instance
        spec = request_spec_obj.RequestSpec.get_by_instance_uuid(self.ctxt, uuid)
        for holder in (instance, spec):
            cells = holder.numa_topology.cells
            self.assertEqual([(0, 1024, 'dedicated'), (1, 1024, 'dedicated')],
                             [(cell.id, cell.memory, cell.cpu_policy) for cell in cells])
            self.assertEqual([-2, -2], [cell.pagesize for cell in cells])  # large
            self.assertEqual([(2, 'nic')], [(r.count, r.alias_name)
                                            for r in holder.pci_requests.requests])
        instance.create()  # in the cell, as the conductor does
        stored = instance_obj.Instance.get_by_uuid(self.ctxt, uuid)
        self.assertEqual(instance.numa_topology.obj_to_primitive(),
                         stored.numa_topology.obj_to_primitive())
        self.assertEqual(2, stored.pci_requests.requests[0].count)
        self.assertIsNone(stored.pci_devices)

    def test_plain_flavor_asks_for_nothing(self):
        uuid, = self.api.create(self.ctxt, fakes.fake_flavor())
        spec = request_spec_obj.RequestSpec.get_by_instance_uuid(self.ctxt, uuid)
        self.assertIsNone(spec.numa_topology)
        self.assertEqual([], spec.pci_requests.requests)

    def test_impossible_requests_are_refused_before_anything_is_written(self):
        for extra_specs, props, error in (
                ({'hw:numa_nodes': '2'}, {}, exception.ImageNUMATopologyAsymmetric),  # 1 vCPU
                ({'hw:cpu_policy': 'sometimes'}, {}, exception.InvalidCPUAllocationPolicy),
                ({'pci_passthrough:alias': 'gpu:1'}, {}, exception.PciRequestAliasNotDefined),
                ({'pci_passthrough:alias': 'nic'}, {}, exception.Invalid),
                ({}, {'hw_mem_page_size': '2048'}, exception.MemoryPageSizeForbidden)):
            with self.subTest(extra_specs=extra_specs, props=props):
                with self.assertRaises(error):
                    self.api.create(self.ctxt, fakes.fake_flavor(extra_specs=extra_specs),
                                    image={'properties': props})
                self.assertEqual([], build_request_obj.BuildRequestList.get_all(self.ctxt)
                                 .objects)


class TestCreateValidatesBeforeWriting(sqlite_databases.SqliteDatabases, base.TestCase):
    """A request Nova's API would refuse is refused with a ValidationError naming the field,
    and not one row is written (issue 26: a 300-character name lost an accepted build)."""

    def setUp(self):
        super().setUp()
        self.use_databases()
        self.use_fake_transport()
        self.ctxt = context.RequestContext(user_id='user1', project_id='project1',
                                           is_admin=True)
        self.api = compute_api.API(self.conf)
        self.group = fakes.fake_group()
        self.group._context = self.ctxt
        instance_group_obj.InstanceGroup(
            self.ctxt, uuid=self.group.uuid, name='g', policy='anti-affinity',
            project_id='project1', user_id='user1').create()

    def counts(self):
        tables = {sa.engine.make_url(self.api_url): ('build_requests', 'request_specs',
                                                     'instance_mappings',
                                                     'instance_group_member'),
                  sa.engine.make_url(self.main_url): ('instances',)}
        counts = {}
        for url, names in tables.items():
            engine = sa.create_engine(url)
            with engine.connect() as conn:
                for name in names:
                    counts[name] = conn.execute(sa.text('SELECT COUNT(*) FROM %s'
                                                        % name)).scalar()
            engine.dispose()
        return counts

    def test_refused_requests_write_nothing(self):
        empty = self.counts()
        self.assertEqual({0}, set(empty.values()))
        for kwargs, field in (
                ({'display_name': 'n' * 300}, 'name'),
                ({'availability_zone': 'z' * 300}, 'availability_zone'),
                ({'display_name': 'n' * 254, 'num_instances': 2}, 'name'),
                ({'display_name': ' padded'}, 'name'),
                ({'num_instances': 0}, 'num_instances'),
                ({'num_instances': '2x'}, 'num_instances'),
                ({'scheduler_hints': {'same_host': 'not-a-uuid'}}, 'scheduler_hints.same_host'),
                ({'scheduler_hints': {'query': '{'}}, 'scheduler_hints.query'),
                ({'scheduler_hints': {'build_near_host_ip': 'x'}},
                 'scheduler_hints.build_near_host_ip'),
                ({'metadata': {'k': 'v' * 256}}, 'metadata.k'),
                ({'metadata': {'bad/key': 'v'}}, 'metadata'),
                ({'image': {'id': 'x'}}, 'image.id'),
                ({'image': {'properties': {'hw_cpu_cores': 'four'}}},
                 'image.properties.hw_cpu_cores')):
            with self.subTest(kwargs=kwargs):
                with self.assertRaises(exception.ValidationError) as raised:
                    self.api.create(self.ctxt, fakes.fake_flavor(), group=self.group, **kwargs)
                self.assertEqual(field, raised.exception.kwargs['field'])
                self.assertEqual(empty, self.counts())

    def test_an_identity_too_long_for_its_column_writes_nothing(self):
        ctxt = context.RequestContext(user_id='user1', project_id='p' * 256, is_admin=True)
        with self.assertRaises(exception.ValidationError) as raised:
            self.api.create(ctxt, fakes.fake_flavor())
        self.assertEqual('context.project_id', raised.exception.kwargs['field'])
        self.assertEqual({0}, set(self.counts().values()))

    def test_limits_are_inclusive_and_values_are_kept(self):
        uuids_ = self.api.create(
            self.ctxt, fakes.fake_flavor(), num_instances=2, display_name='n' * 253,
            availability_zone='z' * 255, metadata={'k' * 255: 'v' * 255},
            scheduler_hints={'different_host': uuids.other, 'query': {'and': []}})
        instance = build_request_obj.BuildRequest.get_by_instance_uuid(self.ctxt,
                                                                      uuids_[1]).instance
        self.assertEqual(('n' * 253 + '-2', 'z' * 255, {'k' * 255: 'v' * 255}),
                         (instance.display_name, instance.availability_zone,
                          instance.metadata))
        spec = request_spec_obj.RequestSpec.get_by_instance_uuid(self.ctxt, uuids_[0])
        self.assertEqual({'different_host': [uuids.other], 'query': ['{"and": []}']},
                         spec.scheduler_hints)


class TestReadUnplacedBuilds(sqlite_databases.SqliteDatabases, base.TestCase):
    """``server show`` and ``server list --all`` of an instance not placed yet read its build
    request: what only a cell would know (host, node, launch) reads as not set yet, not as a
    lazy load from a cell where the instance does not exist (InstanceNotFound)."""

    #: What ``server show`` and ``server list`` print of an instance.
    SHOWN = ('uuid', 'display_name', 'project_id', 'user_id', 'flavor', 'image_ref',
             'availability_zone', 'host', 'node', 'vm_state', 'task_state', 'power_state',
             'created_at', 'launched_at')

    def setUp(self):
        super().setUp()
        self.use_databases()
        self.use_fake_transport()  # the cast stays on the fake bus: nothing places them
        self.ctxt = context.RequestContext(user_id='user1', project_id='project1')
        self.api = compute_api.API(self.conf)
        self.uuids = self.api.create(self.ctxt, fakes.fake_flavor(), image=IMAGE,
                                     num_instances=2)

    def _shown(self, instance):
        return {name: getattr(instance, name) for name in self.SHOWN}

    def test_show_reads_the_build_request(self):
        shown = self._shown(self.api.get(self.ctxt, self.uuids[0]))
        self.assertEqual((self.uuids[0], None, None, None, 'building', 'scheduling'), (
            shown['uuid'], shown['host'], shown['node'], shown['launched_at'],
            shown['vm_state'], shown['task_state']))
        self.assertIsNotNone(shown['created_at'])

    def test_list_of_every_project_reads_the_build_requests(self):
        for ctxt in (self.ctxt, self.ctxt.elevated()):
            listed = self.api.get_all(ctxt)
            self.assertEqual(sorted(self.uuids), sorted(i.uuid for i in listed))
            for instance in listed:
                self.assertEqual((None, None), (instance.host, instance.node))
                self._shown(instance)

    def test_filtered_list_keeps_the_build_requests_that_match(self):
        """As Nova's list of servers: a project's list holds its builds not placed yet;
        a filter on what they cannot have yet (a host) leaves them out."""
        listed = self.api.get_all(self.ctxt, {'project_id': 'project1'})
        self.assertEqual(sorted(self.uuids), sorted(i.uuid for i in listed))
        self.assertEqual([], self.api.get_all(self.ctxt, {'project_id': 'other'}))
        self.assertEqual([], self.api.get_all(self.ctxt, {'host': 'c1'}))


class TestCountBounds(sqlite_databases.SqliteDatabases, base.TestCase):
    """``[api] max_instances_per_request`` and the size of the cast: refused (or clamped to
    ``min_count``'s leave) before anything is written, so the conductor never receives a
    request it would drop."""

    TABLES = ('build_requests', 'request_specs', 'instance_mappings')

    def setUp(self):
        super().setUp()
        self.use_databases()
        self.use_fake_transport()
        self.ctxt = context.RequestContext(user_id='user1', project_id='project1')
        self.api = compute_api.API(self.conf)
        self.sent = []
        driver = rpc.TRANSPORT._driver
        real_send = driver.send

        def send(target, ctxt, message, *args, **kwargs):
            self.sent.append((ctxt, message))
            return real_send(target, ctxt, message, *args, **kwargs)
        patcher = mock.patch.object(driver, 'send', send)
        patcher.start()
        self.addCleanup(patcher.stop)

    def rows(self):
        engine = sa.create_engine(self.api_url)
        with engine.connect() as conn:
            counts = [conn.execute(sa.text('SELECT COUNT(*) FROM %s' % name)).scalar()
                      for name in self.TABLES]
        engine.dispose()
        return counts

    def test_a_count_over_the_maximum_is_refused_before_anything_is_written(self):
        self.flags(group='api', max_instances_per_request=3)
        for count in (4, 5000, 1099511627776):
            with self.subTest(count=count):
                with self.assertRaises(exception.TooManyInstances) as raised:
                    self.api.create(self.ctxt, fakes.fake_flavor(), num_instances=count)
                self.assertIn('Requested %d instances, but at most 3' % count,
                              raised.exception.format_message())
        self.assertEqual([0, 0, 0], self.rows())
        self.assertEqual([], self.sent)
        self.assertEqual(3, len(self.api.create(self.ctxt, fakes.fake_flavor(),
                                                num_instances=3)))

    def test_a_min_count_that_fits_gets_the_maximum(self):
        """As Nova creates as many as the quota allows when that is at least min_count."""
        self.flags(group='api', max_instances_per_request=3)
        created = self.api.create(self.ctxt, fakes.fake_flavor(), num_instances=10,
                                  min_count=2)
        self.assertEqual(3, len(created))
        self.assertEqual([3, 3, 3], self.rows())
        spec = request_spec_obj.RequestSpec.get_by_instance_uuid(self.ctxt, created[0])
        self.assertEqual(3, spec.num_instances)
        with self.assertRaises(exception.TooManyInstances):
            self.api.create(self.ctxt, fakes.fake_flavor(), num_instances=10, min_count=4)
        self.assertEqual([3, 3, 3], self.rows())

    def test_a_cast_larger_than_the_conductor_takes_is_refused(self):
        self.flags(rpc_max_message_size_mb=1)
        with self.assertRaises(exception.RequestTooLarge) as raised:
            self.api.create(self.ctxt, fakes.fake_flavor(), num_instances=1000)
        self.assertIn('more than [DEFAULT] rpc_max_message_size_mb = 1 MiB',
                      raised.exception.format_message())
        self.assertEqual([0, 0, 0], self.rows())
        self.assertEqual([], self.sent)
        most = raised.exception.kwargs['most']
        self.assertLess(0, most)
        self.assertLess(most, 1000)
        # The most it names goes through, in a message within the limit.
        self.api.create(self.ctxt, fakes.fake_flavor(), num_instances=most)
        self.assertLessEqual(self._wire_size(*self.sent[-1]), 1024 * 1024)
        self.flags(rpc_max_message_size_mb=0)  # no limit: not checked
        self.api.create(self.ctxt, fakes.fake_flavor(), num_instances=1000)

    def test_the_estimate_is_close_to_the_message_sent(self):
        real = create_bounds.check_message_size
        estimates = []
        with mock.patch.object(create_bounds, 'check_message_size',
                               lambda *args: estimates.append(real(*args))):
            for count, name in ((1, None), (200, 'web'), (50, 'n' * 200)):
                self.api.create(self.ctxt, fakes.fake_flavor(), num_instances=count,
                                display_name=name, metadata={'k': 'v' * 200})
                actual = self._wire_size(*self.sent[-1])
                with self.subTest(count=count):
                    self.assertLessEqual(actual, estimates[-1])
                    self.assertLess(estimates[-1] - create_bounds._FIXED_BYTES, actual * 1.2)

    @staticmethod
    def _wire_size(ctxt, message):
        """The body RabbitMQ gets for this cast, encoded by oslo.messaging's own functions."""
        msg = dict(message)
        amqp_common._add_unique_id(msg)
        amqp_common.pack_context(msg, ctxt)
        return len(jsonutils.dumps(driver_common.serialize_msg(msg)))
