"""Scheduler metrics: what the hooks record, as Prometheus renders it."""
import os
import shutil
import socket
import tempfile
import urllib.request

from minisched.scheduler import metrics
from tests.unit import base

STATS = {'seconds': 0.004, 'hosts_in': 1000,
         'filter_counts': [('RamFilter', 1000, 700), ('ComputeFilter', 700, 690)]}


class TestMetrics(base.TestCase):

    def setUp(self):
        super().setUp()
        self.addCleanup(metrics.disable)
        self.directory = tempfile.mkdtemp(prefix='minisched-test-metrics-')
        self.addCleanup(shutil.rmtree, self.directory, True)

    def text(self):
        return metrics.render().decode()

    def test_records_nothing_while_disabled(self):
        metrics.record_request(STATS)
        metrics.record_no_valid_host()
        metrics.record_refresh(0.5)
        self.assertEqual('', self.text())

    def test_request_latency_and_hosts_per_filter_rendered(self):
        metrics.enable(self.directory)
        metrics.record_request(STATS)
        metrics.record_request(STATS)
        text = self.text()
        self.assertIn('minisched_scheduler_request_duration_seconds_count 2.0', text)
        self.assertIn('minisched_scheduler_request_duration_seconds_bucket{le="0.005"} 2.0',
                      text)
        self.assertIn('minisched_scheduler_request_hosts_sum 2000.0', text)
        self.assertIn('minisched_scheduler_filter_hosts_in_total{filter="RamFilter"} 2000.0',
                      text)
        self.assertIn('minisched_scheduler_filter_hosts_out_total{filter="RamFilter"} 1400.0',
                      text)
        self.assertIn('minisched_scheduler_filter_hosts_out_total{filter="ComputeFilter"} '
                      '1380.0', text)

    def test_no_valid_host_and_refresh_rendered(self):
        metrics.enable(self.directory)
        metrics.record_no_valid_host([('RamFilter', 5, 0)])
        metrics.record_refresh(0.02)
        text = self.text()
        self.assertIn('minisched_scheduler_no_valid_host_total 1.0', text)
        self.assertIn('minisched_scheduler_filter_hosts_out_total{filter="RamFilter"} 0.0', text)
        self.assertIn('minisched_scheduler_host_state_refresh_duration_seconds_bucket'
                      '{le="0.025"} 1.0', text)
        self.assertIn('minisched_scheduler_host_state_refresh_duration_seconds_bucket'
                      '{le="0.01"} 0.0', text)

    def test_workers_figures_summed_across_forked_processes(self):
        metrics.enable(self.directory)
        metrics.record_no_valid_host()
        pid = os.fork()
        if pid == 0:  # a worker: record, then leave without running any test machinery
            try:
                metrics.record_no_valid_host()
                metrics.record_request(STATS)
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(0, status)
        text = self.text()
        self.assertIn('minisched_scheduler_no_valid_host_total 2.0', text)
        self.assertIn('minisched_scheduler_filter_hosts_in_total{filter="RamFilter"} 1000.0',
                      text)

    def test_serve_is_off_with_port_0(self):
        self.assertIsNone(metrics.serve(self.conf))
        self.assertEqual('', self.text())

    def test_serve_exposes_text_over_http(self):
        with socket.socket() as probe:
            probe.bind(('127.0.0.1', 0))
            port = probe.getsockname()[1]
        self.flags(group='scheduler', metrics_listen_port=port,
                   metrics_listen_host='127.0.0.1')
        self.assertIsNotNone(metrics.serve(self.conf))
        metrics.record_refresh(0.002)
        with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port, timeout=10) as resp:
            body = resp.read().decode()
        self.assertIn('minisched_scheduler_host_state_refresh_duration_seconds_count 1.0',
                      body)
