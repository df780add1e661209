"""ImagePropertiesWeigher: image properties shared with the host's instances, read from SQLite."""
from minisched import context
from minisched.db.api import api as api_db
from minisched.objects import image_meta
from minisched.objects import instance as instance_obj
from minisched.scheduler import host_manager
from minisched.scheduler import utils as scheduler_utils
from minisched.scheduler import weights
from minisched.scheduler.weights import image_props
from minisched.scheduler.weights import ram
from tests.unit import base, fakes
from tests.unit import sqlite_databases
from tests.unit.scheduler.weights import helpers

uuids = base.uuids
FS = 'filter_scheduler'
UBUNTU_Q35 = {'os_distro': 'ubuntu', 'hw_machine_type': 'q35'}
WEIGHER = [image_props.ImagePropertiesWeigher]


class TestImagePropertiesWeigher(sqlite_databases.SqliteDatabases, helpers.WeigherTestCase):

    def setUp(self):
        super().setUp()
        self.use_databases()
        self.cell = api_db.cell_mapping_create(self.ctxt, {
            'uuid': uuids.cell1, 'name': 'cell1', 'transport_url': 'none:///',
            'database_connection': self.new_cell_database('cell1')})
        self.flags(group=FS, image_props_weight_multiplier=1.0)

    def _instances(self, *props_list, cell=True, deleted=False):
        """``{uuid: Instance}`` as the host manager tracks them (no system_metadata), of new
        instances in cell1 (the local ``[database]`` when not ``cell``), one per props dict."""
        tracked = {}
        ctxt = context.RequestContext(is_admin=True)
        if cell:
            ctxt.db_connection = self.cell['database_connection']
        for props in props_list:
            inst = instance_obj.Instance(
                ctxt, host='host', system_metadata=image_meta.get_system_metadata_from_image(
                    {'properties': props}))
            inst.create()
            if deleted:
                inst.destroy()
            tracked[inst.uuid] = instance_obj.Instance(uuid=inst.uuid, instance_type_id=None)
        return tracked

    def test_off_by_default_reads_nothing_whatever_the_aggregates(self):
        self.conf.clear_override('image_props_weight_multiplier', group=FS)
        hosts = self.hosts({'instances': self._instances(UBUNTU_Q35)},
                           {'instances': self._instances(UBUNTU_Q35, UBUNTU_Q35),
                            'aggregates': [fakes.fake_aggregate(
                                {'image_props_weight_multiplier': '5'})]})
        self.count_statements()
        self.assertEqual([('host1', 0.0), ('host2', 0.0)],
                         self.weigh(WEIGHER, hosts, fakes.fake_spec(image_props=UBUNTU_Q35)))
        self.assertEqual([], self.statements)

    def test_each_shared_property_counts_once_per_instance_having_it(self):
        # host1: ubuntu twice, q35 once (3); host2: ubuntu and q35 twice each (4); host3: none.
        hosts = self.hosts(
            {'instances': self._instances(UBUNTU_Q35, dict(UBUNTU_Q35, hw_machine_type='pc'))},
            {'instances': self._instances(UBUNTU_Q35, UBUNTU_Q35)},
            {'instances': self._instances({'os_distro': 'windows', 'hw_machine_type': 'pc'})})
        self.assertEqual([('host2', 1.0), ('host1', 0.75), ('host3', 0.0)],
                         self.weigh(WEIGHER, hosts, fakes.fake_spec(image_props=UBUNTU_Q35)))

    def test_duplicates_across_instances_all_count(self):
        hosts = self.hosts({'instances': self._instances(*[{'os_distro': 'ubuntu'}] * 3)},
                           {'instances': self._instances({'os_distro': 'ubuntu'})},
                           {'instances': {}})
        spec = fakes.fake_spec(image_props={'os_distro': 'ubuntu'})
        self.assertEqual([('host1', 1.0), ('host2', 1 / 3), ('host3', 0.0)],
                         self.weigh(WEIGHER, hosts, spec))

    def test_weight_setting_gives_ratios_and_ignores_other_properties(self):
        self.flags(group=FS, image_props_weight_setting=[
            'os_distro=2', 'hw_machine_type=0', 'hw_disk_bus=-1', 'bogus'])
        requested = dict(UBUNTU_Q35, hw_disk_bus='virtio', hw_video_model='vga')
        hosts = self.hosts(
            # 2 (ubuntu) + 0 (q35: ratio 0) - 1 (virtio) + 0 (vga: not in the setting)
            {'instances': self._instances(requested)},
            # 2 * (0 + -1 + 0)
            {'instances': self._instances(*[dict(requested, os_distro='debian')] * 2)},
            # 2 * 2
            {'instances': self._instances({'os_distro': 'ubuntu'}, {'os_distro': 'ubuntu'})})
        with self.assertLogs(scheduler_utils.LOG, 'WARNING') as logs:
            weigher = image_props.ImagePropertiesWeigher(self.conf)
        self.assertIn('bogus', logs.output[0])
        self.assertEqual({'os_distro': 2.0, 'hw_machine_type': 0.0, 'hw_disk_bus': -1.0},
                         weigher.setting)
        self.assertEqual([('host3', 1.0), ('host1', 0.5), ('host2', 0.0)],
                         self.weigh(WEIGHER, hosts, fakes.fake_spec(image_props=requested)))

    def test_parse_setting_rereads_the_option(self):
        self.flags(group=FS, image_props_weight_setting=['os_distro=1'])
        weigher = image_props.ImagePropertiesWeigher(self.conf)
        self.flags(group=FS, image_props_weight_setting=['os_distro=1', 'hw_machine_type=0'])
        self.assertEqual({'os_distro': 1.0}, weigher.setting)
        weigher._parse_setting()
        self.assertEqual({'os_distro': 1.0, 'hw_machine_type': 0.0}, weigher.setting)

    def test_instance_missing_from_the_database_counts_nothing(self):
        missing = {uuid: instance_obj.Instance(uuid=uuid) for uuid in (uuids.gone1, uuids.gone2)}
        hosts = self.hosts({'instances': dict(self._instances(UBUNTU_Q35), **missing)},
                           {'instances': self._instances(UBUNTU_Q35, UBUNTU_Q35)})
        self.assertEqual([('host2', 1.0), ('host1', 0.0)],
                         self.weigh(WEIGHER, hosts, fakes.fake_spec(image_props=UBUNTU_Q35)))

    def test_deleted_instance_still_counts_as_in_nova(self):
        # Nova reads system metadata with read_deleted='yes': a deleted instance that the
        # host's instance list still holds keeps its weight until the list forgets it.
        hosts = self.hosts({'instances': self._instances(UBUNTU_Q35, deleted=True)},
                           {'instances': {}})
        self.assertEqual([('host1', 1.0), ('host2', 0.0)],
                         self.weigh(WEIGHER, hosts, fakes.fake_spec(image_props=UBUNTU_Q35)))

    def test_no_request_image_weighs_nothing_and_reads_nothing(self):
        hosts = self.hosts({'instances': self._instances(UBUNTU_Q35)},
                           {'instances': self._instances(UBUNTU_Q35, UBUNTU_Q35)})
        self.count_statements()
        for spec in (fakes.fake_spec(image=None), fakes.fake_spec()):
            self.assertEqual([('host1', 0.0), ('host2', 0.0)],
                             self.weigh(WEIGHER, hosts, spec))
        self.assertEqual([], self.statements)

    def test_aggregate_overrides_the_multiplier(self):
        hosts = self.hosts({'instances': self._instances(UBUNTU_Q35)},
                           {'instances': self._instances(UBUNTU_Q35, UBUNTU_Q35),
                            'aggregates': [fakes.fake_aggregate(
                                {'image_props_weight_multiplier': '-2'})]},
                           {'instances': {}})
        self.assertEqual([('host1', 0.5), ('host3', 0.0), ('host2', -2.0)],
                         self.weigh(WEIGHER, hosts, fakes.fake_spec(image_props=UBUNTU_Q35)))

    def test_host_of_an_unknown_cell_weighs_nothing(self):
        hosts = self.hosts({'instances': self._instances(UBUNTU_Q35)},
                           {'instances': self._instances(UBUNTU_Q35),
                            'cell_uuid': uuids.unmapped})
        self.assertEqual([('host1', 1.0), ('host2', 0.0)],
                         self.weigh(WEIGHER, hosts, fakes.fake_spec(image_props=UBUNTU_Q35)))

    def test_without_cells_the_local_database_is_read(self):
        local = host_manager.LOCAL_CELL_UUID
        hosts = self.hosts({'instances': self._instances(UBUNTU_Q35, cell=False),
                            'cell_uuid': local},
                           {'instances': {}, 'cell_uuid': local})
        self.assertEqual([('host1', 1.0), ('host2', 0.0)],
                         self.weigh(WEIGHER, hosts, fakes.fake_spec(image_props=UBUNTU_Q35)))

    def test_normalised_and_summed_with_the_other_weighers(self):
        self.flags(group=FS, image_props_weight_multiplier=2.0)
        hosts = self.hosts({'free_ram_mb': 4096, 'instances': {}},
                           {'free_ram_mb': 2048,
                            'instances': self._instances(UBUNTU_Q35, UBUNTU_Q35)},
                           {'free_ram_mb': 1024, 'instances': self._instances(UBUNTU_Q35)})
        # RAM: x / max (1, 0.5, 0.25); image properties: 4, 2 on the list's 0..4, times 2.
        self.assertEqual([('host2', 2.5), ('host3', 1.25), ('host1', 1.0)],
                         self.weigh([ram.RAMWeigher, image_props.ImagePropertiesWeigher],
                                    hosts, fakes.fake_spec(image_props=UBUNTU_Q35)))

    def test_all_weighers_includes_it(self):
        self.assertIn(image_props.ImagePropertiesWeigher, weights.all_weighers())
