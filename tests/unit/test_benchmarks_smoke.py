"""The pipeline bench runs and its decisions match the reference (no timing is asserted)."""
import csv
import io
import os
import tempfile

from benchmarks import __main__ as bench_main
from benchmarks import common
from benchmarks import pipeline
from tests.unit import base

EXPECTED = ['pipeline p50 @200 hosts', 'pipeline p99 @200 hosts',
            'reference pipeline p50 @200 hosts', 'decisions = reference @200 hosts']


class TestPipelineBenchSmoke(base.TestCase):

    def test_row_pipeline_decisions_match_reference_at_200_hosts(self):
        figures = pipeline.run([200], lambda size: 3)
        self.assertEqual(EXPECTED, [f.figure for f in figures])
        decisions = figures[-1]
        self.assertEqual('3/3', decisions.value)
        self.assertTrue(decisions.met)

    def test_command_prints_table_and_csv_with_expected_rows(self):
        out = io.StringIO()
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, 'bench.csv')
            status = bench_main.main(['--sizes', '200', '--requests', '3', '--skip',
                                      'refresh,e2e,memory,build', '--csv', path], stdout=out)
            with open(path, newline='') as handle:
                rows = list(csv.DictReader(handle))
        self.assertEqual(0, status)
        self.assertEqual(EXPECTED, [row['figure'] for row in rows])
        self.assertEqual('3/3', rows[-1]['value'])
        text = out.getvalue()
        self.assertIn('SYNTHETIC', text)
        for figure in EXPECTED:
            self.assertIn(figure, text)
        self.assertIn(common.format_table([]).splitlines()[0].split()[0], text)
