"""InstanceList.fill_metadata against SQLite: system_metadata of many instances, one query."""
from minisched import context
from minisched.objects import instance as instance_obj
from tests.unit import base, sqlite_databases

uuids = base.uuids


class TestFillMetadata(sqlite_databases.SqliteDatabases, base.TestCase):

    def setUp(self):
        super().setUp()
        self.use_databases()

    def _create(self, ctxt, system_metadata, deleted=False):
        inst = instance_obj.Instance(ctxt, host='host1', system_metadata=system_metadata)
        inst.create()
        if deleted:
            inst.destroy()
        return inst.uuid

    def _fill(self, ctxt, *instances):
        instances = instance_obj.InstanceList(ctxt, objects=list(instances))
        self.count_statements()
        instances.fill_metadata()
        return [inst.system_metadata for inst in instances]

    def test_reads_every_instance_lacking_it_in_one_query(self):
        first = self._create(self.ctxt, {'image_os_distro': 'ubuntu'})
        second = self._create(self.ctxt, {'image_os_distro': 'windows'})
        deleted = self._create(self.ctxt, {'image_os_distro': 'debian'}, deleted=True)
        filled = self._fill(self.ctxt, *(instance_obj.Instance(uuid=uuid) for uuid in (
            first, second, deleted, uuids.never_created)))
        self.assertEqual([{'image_os_distro': 'ubuntu'}, {'image_os_distro': 'windows'},
                          {'image_os_distro': 'debian'},  # deleted rows are read, as in Nova
                          {}], filled)
        self.assertEqual(1, len([s for s in self.statements if s.startswith('SELECT')]),
                         self.statements)

    def test_instances_that_have_it_are_not_read_again(self):
        uuid = self._create(self.ctxt, {'image_os_distro': 'ubuntu'})
        loaded = instance_obj.Instance(uuid=uuid, system_metadata={'image_os_distro': 'sent'})
        self.assertEqual([{'image_os_distro': 'sent'}], self._fill(self.ctxt, loaded))
        self.assertEqual([], self.statements)

    def test_reads_the_cell_the_list_context_targets(self):
        cell_ctxt = context.get_admin_context()
        cell_ctxt.db_connection = self.new_cell_database('cell1')
        uuid = self._create(cell_ctxt, {'image_os_distro': 'ubuntu'})
        self.assertEqual([{}], self._fill(self.ctxt, instance_obj.Instance(uuid=uuid)))
        self.assertEqual([{'image_os_distro': 'ubuntu'}],
                         self._fill(cell_ctxt, instance_obj.Instance(uuid=uuid)))

    def test_filled_value_is_not_a_change_to_save(self):
        uuid = self._create(self.ctxt, {'image_os_distro': 'ubuntu'})
        inst = instance_obj.Instance(uuid=uuid)
        inst.obj_reset_changes()
        self._fill(self.ctxt, inst)
        self.assertEqual(set(), inst.obj_what_changed())
