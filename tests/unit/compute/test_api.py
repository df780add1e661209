"""compute.API.create against SQLite: what the instance record keeps of its image."""


from minisched.compute import api as compute_api
from minisched import context
from minisched.objects import build_request as build_request_obj
from minisched.objects import instance as instance_obj
from minisched.objects import request_spec as request_spec_obj
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
        self.assertEqual(requested.image.properties.to_dict(), props)

    def test_no_image_keeps_only_the_flavor_minimum(self):
        self.assertEqual({'image_min_disk': '10', 'image_base_image_ref': None},
                         self._create(image=None).system_metadata)
