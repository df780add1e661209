"""rpc tap beside a running cluster: it sees the real traffic and changes none of it.

A conductor, a scheduler and a compute run on RabbitMQ; ``minisched-manage rpc tap --json``
runs beside them while a client calls ``select_destinations``. The tap must report that call
and the compute's ``object_action`` state reports with their methods and versions, and the
cluster must behave as without it (the call is answered, reports keep landing).
"""
import json
import subprocess

from tests.functional import base
from tests.functional import scheduler_helpers
from tests.unit import fakes


def test_tap_sees_select_destinations_and_object_action(cluster, tmp_path):
    cluster.start_conductor()
    cluster.start_compute('tap-c1', vcpus=4, memory_mb=4096, local_gb=40)
    cluster.start_scheduler(workers=1)
    err_path = tmp_path / 'tap.err'
    with open(err_path, 'w') as err_file:
        tap = subprocess.Popen([base.script('minisched-manage'), '--config-file',
                                cluster.conf_file, 'rpc', 'tap', '--json', '--timeout', '25'],
                               stdout=subprocess.PIPE, stderr=err_file, text=True)
    bound = 'rpc tap: tapping exchange'
    try:
        # The traffic it must see comes once its queue is bound (it says so on stderr).
        base.wait_for(lambda: tap.poll() is not None or bound in err_path.read_text(), 30,
                      message='the tap to bind its queue')
        assert bound in err_path.read_text(), err_path.read_text()
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
        out, _ = tap.communicate(timeout=30)
    assert tap.returncode == 0, err_path.read_text()
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

