"""HostMapping and CellMappingList on a migrated SQLite API database: Nova 34's remotables."""
import datetime

import pytest

from minisched import exception
from minisched.db.api import api as api_db
from minisched.objects import cell_mapping as cell_mapping_obj
from minisched.objects import host_mapping as host_mapping_obj
from tests.unit.db import conftest as db_fixtures

# A migrated SQLite API database per test, as the DB unit tests have.
isolated_engines = db_fixtures.isolated_engines
migrated_templates = db_fixtures.migrated_templates
db = db_fixtures.db
ctx = db_fixtures.ctx


def _cell(ctxt, name, disabled=False):
    cell = cell_mapping_obj.CellMapping(ctxt, name=name, transport_url='rabbit://',
                                        database_connection='sqlite://', disabled=disabled)
    cell.create()
    return cell


def test_cells_by_disabled_in_id_order(ctx):
    cells = [_cell(ctx, 'c1'), _cell(ctx, 'c2', disabled=True), _cell(ctx, 'c3'),
             _cell(ctx, 'c4', disabled=True)]
    by_disabled = cell_mapping_obj.CellMappingList.get_by_disabled
    assert [c.name for c in by_disabled(ctx, True)] == ['c2', 'c4']
    assert [c.name for c in by_disabled(ctx, False)] == ['c1', 'c3']
    assert [c.id for c in cell_mapping_obj.CellMappingList.get_all(ctx)] == [
        c.id for c in cells]


def test_save_moves_a_host_to_another_cell_and_the_scheduler_sees_it(ctx):
    cell1, cell2 = _cell(ctx, 'c1'), _cell(ctx, 'c2')
    mapping = host_mapping_obj.HostMapping(ctx, host='h1', cell_mapping=cell1)
    mapping.create()
    since = datetime.datetime.utcnow() - datetime.timedelta(seconds=1)
    mapping.cell_mapping = cell2
    mapping.save()
    assert mapping.obj_what_changed() == set() and mapping.cell_mapping.uuid == cell2.uuid
    found = host_mapping_obj.HostMapping.get_by_host(ctx, 'h1')
    assert (found.id, found.cell_mapping.name) == (mapping.id, 'c2')
    assert found.updated_at is not None
    assert api_db.host_mapping_get_host_cells(ctx, since=since) == {'h1': cell2.uuid}
    mapping.save()  # nothing changed: nothing to write, still fine
    mapping.destroy()
    with pytest.raises(exception.HostMappingNotFound, match='h1'):
        mapping.save()


def test_save_to_a_host_already_mapped_is_refused(ctx):
    cell = _cell(ctx, 'c1')
    for host in ('h1', 'h2'):
        host_mapping_obj.HostMapping(ctx, host=host, cell_mapping=cell).create()
    mapping = host_mapping_obj.HostMapping.get_by_host(ctx, 'h2')
    mapping.host = 'h1'
    with pytest.raises(exception.HostMappingExists) as caught:
        mapping.save()
    assert caught.value.kwargs['cell_uuid'] == cell.uuid
