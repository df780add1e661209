"""rpc tap beside a running cluster: it sees the real traffic and changes none of it.

A conductor, a scheduler and a compute run on RabbitMQ; ``minisched-manage rpc tap --json``
runs beside them while a client calls ``select_destinations``. The tap must report that call
and the compute's ``object_action`` state reports with their methods and versions, and the
cluster must behave as without it (the call is answered, reports keep landing).
"""
import json
import queue
import subprocess
import threading
import time

from tests.functional import base
from tests.functional import scheduler_helpers
from tests.unit import fakes


def test_tap_sees_select_destinations_and_object_action(cluster):
    cluster.start_conductor()
    cluster.start_compute('tap-c1', vcpus=4, memory_mb=4096, local_gb=40)
    cluster.start_scheduler(workers=1)
    tap = subprocess.Popen([base.script('minisched-manage'), '--config-file', cluster.conf_file,
                            'rpc', 'tap', '--json', '--timeout', '25'],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stderr = _Stderr(tap)
    try:
        # The traffic it must see comes once its queue is bound (it says so on stderr).
        stderr.wait_for('rpc tap: tapping exchange', timeout=30)
        client = scheduler_helpers.SchedulerClient(cluster)
        try:
            answer = client.select(fakes.fake_spec(memory_mb=512))
        finally:
            client.close()
        reports_before = _report_count(cluster)
        base.wait_for(lambda: _report_count(cluster) > reports_before + 1, 15,
                      message='state reports to keep landing while the tap runs')
    finally:
        tap.terminate()
        out = tap.stdout.read()  # to its end: the tap has exited
        tap.wait(timeout=30)
    assert tap.returncode == 0, stderr.text()
    assert answer and answer[0]['host'] == 'tap-c1'  # the cluster answered as usual
    messages = [json.loads(line) for line in out.splitlines() if line.startswith('{')]
    selects = [m for m in messages if m.get('method') == 'select_destinations'
               and m['kind'] == 'call']
    assert selects, out
    assert selects[0]['version'] == '4.5'
    assert selects[0]['topic'] == 'scheduler'
    assert 'RequestSpec' in selects[0]['args']['spec_obj']
    saves = [m for m in messages if m.get('method') == 'object_action'
             and 'Service' in m['args'].get('objinst', '')]
    assert saves, out
    assert saves[0]['version'] == '3.0'
    assert saves[0]['topic'] == 'conductor'


def _report_count(cluster):
    rows = cluster.query("SELECT report_count FROM services WHERE host = 'tap-c1'")
    return rows[0]['report_count'] if rows else 0


class _Stderr:
    """What a process writes to stderr, read line by line by a thread (a pipe's buffered
    text reader may hold a line already, where select() would not see it)."""

    def __init__(self, proc):
        self.lines = []
        self._queue = queue.Queue()
        self._thread = threading.Thread(target=self._read, args=(proc.stderr,), daemon=True)
        self._thread.start()

    def _read(self, stream):
        for line in iter(stream.readline, ''):
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, prefix, timeout):
        """Wait (at most ``timeout`` s) for a line starting with ``prefix``."""
        deadline = time.monotonic() + timeout
        while not any(line.startswith(prefix) for line in self.lines):
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            assert line is not None, 'no %r: %s' % (prefix, self.text(wait=0))
            self.lines.append(line)

    def text(self, wait=5):
        """The lines read (all of them when the process exits within ``wait`` s)."""
        self._thread.join(wait)
        while not self._queue.empty():
            line = self._queue.get()
            if line is not None:
                self.lines.append(line)
        return ''.join(self.lines)
