"""CrossCellWeigher: prefer the source cell during a cross-cell move, else no effect."""
import types

from oslo_utils.fixture import uuidsentinel as uuids

from minisched.scheduler.weights import cross_cell
from tests.unit import fakes
from tests.unit.scheduler.weights import helpers

FS = 'filter_scheduler'


class _Stub(types.SimpleNamespace):
    """Versioned-object stand-in: ``'field' in obj`` means the field is set."""

    def __contains__(self, name):
        return hasattr(self, name)


def move(cell_uuid=uuids.cell1, allow=True):
    # minisched's Destination (obj 1.2) has no allow_cross_cell_move field yet (Nova obj 1.4).
    dest = _Stub(cell=_Stub(uuid=cell_uuid), allow_cross_cell_move=allow)
    return _Stub(requested_destination=dest)


HOSTS = [{'cell_uuid': uuids.cell2}, {'cell_uuid': uuids.cell1}, {'cell_uuid': uuids.cell2}]
CASES = [
    ('cross-cell move prefers the source cell', move(), {},
     [('host2', 1000000.0), ('host1', 0.0), ('host3', 0.0)]),
    ('same-cell move: no effect', move(allow=False), {},
     [('host1', 0.0), ('host2', 0.0), ('host3', 0.0)]),
    ('no cell in the destination: no effect', _Stub(requested_destination=_Stub(cell=None)), {},
     [('host1', 0.0), ('host2', 0.0), ('host3', 0.0)]),
    ('not a move: no effect', fakes.fake_spec(), {},
     [('host1', 0.0), ('host2', 0.0), ('host3', 0.0)]),
    ('negative multiplier prefers other cells', move(),
     {'cross_cell_move_weight_multiplier': -1.0},
     [('host1', 0.0), ('host3', 0.0), ('host2', -1.0)]),
]


class TestCrossCellWeigher(helpers.WeigherTestCase):
    def test_cases(self):
        for name, request, flags, expected in CASES:
            with self.subTest(name):
                self.flags(group=FS, cross_cell_move_weight_multiplier=1000000.0)
                self.flags(group=FS, **flags)
                self.assertEqual(expected, self.weigh([cross_cell.CrossCellWeigher],
                                                      self.hosts(*HOSTS), request))

    def test_raw_values(self):
        weigher = cross_cell.CrossCellWeigher(self.conf)
        other, source = self.hosts(*HOSTS)[:2]
        self.assertEqual(1, weigher._weigh_object(source, move()))
        self.assertEqual(-1, weigher._weigh_object(other, move()))
        self.assertEqual(0, weigher._weigh_object(source, fakes.fake_spec()))
