"""The wire facts minisched copies from Nova 34, checked against installed Nova in a process
of its own (:mod:`tests.nova_compat.nova_wire_facts`): the ``nova.exception`` classes errors
travel as under the Nova wire profile, the compute and compute_task RPC versions, the
service version history and ``[upgrade_levels] compute``'s release names."""
import json
import os
import subprocess
import sys

import pytest

from minisched.compute import manager as compute_manager
from minisched.compute import rpcapi as compute_rpcapi
from minisched.conductor import compute_task
from minisched.conductor import unsupported
from minisched import exception
from minisched.messaging import wire
from minisched import version
from tests.nova_compat import client

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_CI = os.environ.get('CI', '').lower() == 'true'


@pytest.fixture(scope='module')
def nova():
    missing = client.missing()
    if missing:
        if _CI:
            pytest.fail('CI=true and Nova cannot be asked: %s' % missing, pytrace=False)
        pytest.skip('Nova 34 wire facts NOT CHECKED: %s' % missing)
    out = subprocess.run([sys.executable, '-m', 'tests.nova_compat.nova_wire_facts'],
                         input=json.dumps(sorted(wire.NOVA_EXCEPTIONS | {'NovaException'})),
                         cwd=_ROOT, capture_output=True, text=True, timeout=300)
    if out.returncode:
        pytest.fail('asking Nova failed:\n%s' % out.stderr[-4000:], pytrace=False)
    return json.loads(out.stdout)


def test_each_exception_name_sent_exists_in_nova_and_rebuilds(nova):
    problems = {name: why for name, why in nova['exceptions'].items() if why}
    assert not problems, problems


def test_every_error_nova_names_too_travels_under_its_own_name(nova):
    ours = {name for name, value in vars(exception).items()
            if isinstance(value, type) and issubclass(value, exception.MinischedException)}
    unlisted = sorted(ours & set(nova['every_exception']) - wire.NOVA_EXCEPTIONS)
    assert not unlisted, 'add to minisched.messaging.wire.NOVA_EXCEPTIONS: %s' % unlisted


def test_compute_rpc_versions_are_novas(nova):
    versions = nova['versions']
    assert compute_manager.ComputeManager.target.version == versions['compute_target']
    assert compute_manager._ComputeV5Proxy.target.version == versions['compute_v5_target']
    assert compute_rpcapi.ComputeAPI.VERSION_ALIASES == versions['compute_aliases']


def test_service_versions_mean_what_novas_mean(nova):
    history = nova['versions']['compute_rpc_history']
    assert version.SERVICE_VERSION <= nova['versions']['service_version']
    for service_version, rpc_version in enumerate(history):
        assert version.compute_rpc_version(service_version) == rpc_version, service_version
    assert history[version.SERVICE_VERSION] == compute_manager.ComputeManager.target.version


def test_compute_task_answers_every_method_of_novas_1_26(nova):
    versions = nova['versions']
    assert compute_task.ComputeTaskManager.target.version == versions['compute_task_target']
    ours = set(unsupported.METHODS) | {'schedule_and_build_instances', 'build_instances'}
    assert set(versions['compute_task_methods']) <= ours
    for name in versions['compute_task_methods']:
        assert callable(getattr(compute_task.ComputeTaskManager, name)), name
