"""The Placement path's own work: the table's uuid index behind RowPipeline.keep, and the
decoding of Placement's answer."""
import json

import numpy as np

from minisched.scheduler import filter_scheduler
from minisched.scheduler import host_state
from minisched.scheduler.client import report
from tests.unit import base


class _Manager:
    """What RowPipeline.keep reads of a HostManager: its table."""

    def __init__(self, table):
        self.table = table


def _naive_keep(table, candidates, uuids):
    return [row for row in candidates if table.states[row].uuid in uuids]


class TestUuidIndex(base.TestCase):

    def setUp(self):
        super().setUp()
        self.table = host_state.HostStateTable(capacity=2)
        self.states = []
        for n in range(12):
            state = host_state.HostState('host%d' % n, 'node%d' % n, base.uuids.cell,
                                         table=self.table)
            state.uuid = 'uuid-%d' % (n % 10)  # two pairs of host states share a uuid
            self.states.append(state)
        self.pipeline = filter_scheduler.RowPipeline(_Manager(self.table))

    def _check(self, candidates, uuids):
        kept = self.pipeline.keep(np.asarray(candidates, dtype=np.int64), uuids)
        self.assertEqual(kept.dtype, np.int64)
        self.assertEqual(list(kept), _naive_keep(self.table, candidates, uuids))
        return list(kept)

    def test_keeps_the_candidates_of_the_uuids_in_their_order(self):
        rows = [s._row for s in self.states]
        candidates = rows[::-1]
        kept = self._check(candidates, {'uuid-1', 'uuid-4', 'unknown'})
        self.assertEqual(kept, [self.states[11]._row, self.states[4]._row,
                                self.states[1]._row])
        self.assertEqual(self._check(candidates, set()), [])
        self.assertEqual(self._check([], {'uuid-1'}), [])

    def test_follows_uuid_changes_and_released_rows(self):
        self.states[3].uuid = 'uuid-new'
        self.states[4].uuid = None
        self.states[5].release()
        self.assertNotIn(self.states[5]._row, self.table.rows())
        live = [s._row for s in self.states if s is not self.states[5]]
        kept = self._check(live, {'uuid-3', 'uuid-new', 'uuid-4', 'uuid-5'})
        self.assertEqual(kept, [self.states[3]._row])
        # A row given to a new host state answers for that state's uuid, not the old one.
        newcomer = host_state.HostState('host-x', 'node-x', base.uuids.cell,
                                        table=self.table)
        self.assertEqual(newcomer._row, self.states[5]._row)
        newcomer.uuid = 'uuid-x'
        self.assertEqual(self._check(live + [newcomer._row], {'uuid-5', 'uuid-x'}),
                         [newcomer._row])
        self.assertEqual(self.table.uuid_rows.get('uuid-5'), None)


class TestDecodeLarge(base.TestCase):

    def test_same_values_as_the_standard_library(self):
        body = json.dumps({'allocation_requests': [
            {'allocations': {'rp-%d' % n: {'resources': {'VCPU': 1, 'MEMORY_MB': 2048}}},
             'mappings': {'': ['rp-%d' % n]}} for n in range(50)],
            'provider_summaries': {'rp-1': {'resources': {'VCPU': {'capacity': 16,
                                                                   'used': 2}},
                                            'traits': ['COMPUTE_NODE'], 'ratio': 1.5,
                                            'parent_provider_uuid': None}},
            'text': 'é \u2603'}).encode()
        self.assertEqual(report.decode_large(body), json.loads(body))

    def test_non_strict_json_decodes_as_before(self):
        # orjson refuses NaN and integers past 64 bits; the standard library takes them.
        body = b'{"a": NaN, "b": 123456789012345678901234567890}'
        decoded = report.decode_large(body)
        self.assertTrue(decoded['a'] != decoded['a'])
        self.assertEqual(decoded['b'], 123456789012345678901234567890)

    def test_bad_json_raises_the_standard_error(self):
        self.assertRaises(ValueError, report.decode_large, b'{"a": ')


class TestReleasedState(base.TestCase):

    def test_a_released_state_no_longer_indexes_its_old_row(self):
        table = host_state.HostStateTable(capacity=1)
        old = host_state.HostState('h1', 'n1', base.uuids.cell, table=table)
        old.uuid = 'uuid-old'
        old.release()
        new = host_state.HostState('h2', 'n2', base.uuids.cell, table=table)
        new.uuid = 'uuid-new'
        old.uuid = 'uuid-late'  # e.g. an update still under way on the removed host
        self.assertEqual(table.uuid_rows, {'uuid-new': {new._row}})
