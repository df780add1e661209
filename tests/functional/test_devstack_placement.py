"""The DevStack plugin's own Placement works as written: the files and commands its phases
produce (run by bash against DevStack's stand-ins, as in ``tests/unit/devstack``) give a real
``placement-manage db sync`` and a real ``uwsgi`` serving Placement, which minisched's report
client, configured by the ``[placement]`` section the plugin wrote, uses."""
import os
import shlex
import subprocess

import pytest
from oslo_config import cfg

from minisched.conf import placement as placement_conf
from minisched import context as ms_context
from minisched.localcluster import placement
from minisched.scheduler.client import report
from tests.unit.devstack.test_plugin import STACK
from tests.unit.devstack.test_plugin import Devstack
from tests.unit.devstack.test_plugin import calls

pytestmark = pytest.mark.functional


def _real(command, fake_bin):
    """``command`` (a recorded call) with the stand-in bin directory's programs replaced by
    the real ones."""
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if argv[0].startswith(str(fake_bin) + '/'):
        argv[0] = placement._binary(argv[0].rsplit('/', 1)[1])
    return argv


def test_the_plugins_own_placement_serves_minisched(tmp_path):
    ds = Devstack(tmp_path)
    port = placement.free_port()
    records = ds.run(*STACK, MINISCHED_DB_BACKEND='sqlite', DATABASE_TYPE=None,
                     MINISCHED_PLACEMENT_PORT=port)
    sync, = calls(records, 'placement-manage')
    subprocess.run(_real(['%s/placement-manage' % ds.bin] + list(sync[1:]), ds.bin),
                   check=True, capture_output=True, timeout=120)

    started, = [r for r in calls(records, 'run_process') if r[1] == 'minisched-placement']
    env_name, _, env_value = started[5].partition('=')
    log = open(tmp_path / 'uwsgi.log', 'wb')
    proc = subprocess.Popen(_real(started[2], ds.bin), stdout=log, stderr=subprocess.STDOUT,
                            env=dict(os.environ, **{env_name: env_value}),
                            start_new_session=True)
    try:
        server = placement.PlacementServer(tmp_path, port=port)
        server.proc = proc
        assert server.wait_ready(60), (tmp_path / 'uwsgi.log').read_text()[-3000:]

        conf = cfg.ConfigOpts()
        placement_conf.register_opts(conf)
        conf(['--config-file', str(ds.conf)], project='minisched', default_config_files=[],
             default_config_dirs=[])
        assert conf.placement.enabled
        client = report.SchedulerReportClient(conf)
        ctx = ms_context.get_admin_context()
        created = client.create_provider(ctx, '6e0b1f0c-3c7a-4a4e-9a76-1d8c0f0e2f11', 'node1')
        assert [rp['name'] for rp in client.get_providers(ctx)] == ['node1']
        assert created['generation'] == 0
    finally:
        placement.stop_pid(proc.pid, proc=proc)
        log.close()
    # Its database is the plugin's SQLite file, under the minisched state path.
    assert (ds.state_path / 'minisched_placement.sqlite').stat().st_size > 0
