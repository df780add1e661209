"""minisched.messaging.bus_check: a cell whose broker lets nobody in is named at start-up.

Real pika connections to a port where nothing listens (connection refused, no broker
needed) and a real SQLite API database holding the cell mappings.
"""
import logging

from minisched.messaging import bus_check
from minisched.objects import cell_mapping
from tests import local_ports
from tests.unit import base
from tests.unit import sqlite_databases


class TestUnreachableCells(sqlite_databases.SqliteDatabases, base.TestCase):

    def setUp(self):
        super().setUp()
        self.use_databases()
        self.nowhere = 'rabbit://guest:secret@127.0.0.1:%d/gone' % local_ports.closed_port()
        for uuid, name, url, disabled in (
                (cell_mapping.CellMapping.CELL0_UUID, 'cell0', 'none:///', False),
                (base.uuidsentinel.cell1, 'cell1', self.nowhere, False),
                (base.uuidsentinel.cell2, 'cell2', 'fake://', False),
                (base.uuidsentinel.cell3, 'cell3', self.nowhere, True)):
            cell_mapping.CellMapping(self.ctxt, uuid=uuid, name=name, transport_url=url,
                                     database_connection=self.main_url,
                                     disabled=disabled).create()

    def test_an_enabled_cell_on_a_refused_broker_is_logged_with_what_to_run(self):
        with self.assertLogs(bus_check.LOG, logging.ERROR) as logs:
            found = bus_check.log_unreachable_cells(self.ctxt, 'fake://')

        # cell0 (none:), fake:// and a disabled cell are not checked
        self.assertEqual(['cell1'], [cell.name for cell, _url, _reason in found])
        self.assertEqual('connection refused', found[0][2])
        (line,) = logs.output
        self.assertIn('Cell cell1 (%s)' % base.uuidsentinel.cell1, line)
        self.assertIn('rabbit://guest:****@127.0.0.1', line)  # no password in the log
        self.assertNotIn('secret', line)
        self.assertIn('minisched-manage cell update_cell --cell_uuid %s'
                      % base.uuidsentinel.cell1, line)

    def test_a_template_url_is_filled_in_from_the_services_own(self):
        cell = cell_mapping.CellMapping.get_by_uuid(self.ctxt, base.uuidsentinel.cell1)
        cell.transport_url = '{scheme}://{username}:{password}@{hostname}:{port}/gone'
        cell.save()
        found = bus_check.unreachable_cells(self.ctxt, self.nowhere)
        self.assertEqual([('cell1', 'connection refused')],
                         [(cell.name, reason) for cell, _url, reason in found])

    def test_a_check_that_cannot_run_is_a_warning(self):
        self.flags(group='api_database', connection='sqlite:////nonexistent/dir/api.db')
        from minisched.db import engines
        engines.dispose_all()
        engines.configure(self.conf)
        with self.assertLogs(bus_check.LOG, logging.WARNING):
            self.assertEqual([], bus_check.log_unreachable_cells(self.ctxt, 'fake://'))
