"""Shared test plumbing: hosts in one HostStateTable, weighed by both handler paths."""
import numpy as np

from minisched.scheduler import filters, host_state, weights
from tests.unit import base, fakes


class WeigherTestCase(base.TestCase):
    """``self.weigh`` runs Nova's per-host algorithm and checks the vectorised one agrees."""

    def setUp(self):
        super().setUp()
        self.table = host_state.HostStateTable()
        self.handler = weights.HostWeightHandler()

    def hosts(self, *host_kws):
        """Host states ``host1``, ``host2``... built from one kwargs dict each."""
        return [fakes.fake_host_state('host%d' % (i + 1), table=self.table, **kw)
                for i, kw in enumerate(host_kws)]

    def weigh(self, weigher_classes, hosts, spec=None):
        """``[(host name, weight)]`` in weighed order (bit-identical on both paths)."""
        spec = spec if spec is not None else fakes.fake_spec()
        weighers = [cls(self.conf) for cls in weigher_classes]
        weighed = self.handler.get_weighed_objects(weighers, hosts, spec)
        view = filters.RowView(self.table, np.array([h.row for h in hosts], dtype=np.intp))
        rows, totals = self.handler.weigh_rows(weighers, view, spec)
        self.assertEqual([w.obj.row for w in weighed], rows.tolist())
        self.assertEqual([float(w.weight).hex() for w in weighed],
                         [t.hex() for t in totals.tolist()])
        return [(w.obj.host, w.weight) for w in weighed]

    def check_cases(self, weigher_classes, cases, spec=None):
        """Run table rows ``(name, flags {group: {opt: value}}, host kwargs list, expected)``."""
        for name, flags, host_kws, expected in cases:
            with self.subTest(name):
                for group, values in flags.items():
                    self.flags(group=group, **values)
                self.table = host_state.HostStateTable()
                try:
                    result = self.weigh(weigher_classes, self.hosts(*host_kws), spec)
                finally:
                    for group, values in flags.items():
                        for option in values:
                            self.conf.clear_override(option, group=group)
                self.assertEqual(expected, result)
