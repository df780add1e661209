"""Every option minisched shares with Nova 34 (same group, same name) has Nova 34's default,
or its difference is listed here with the reason, as doc/source/contributor/nova-differences.rst
says them. Nova's defaults come from Nova's own code (the ``nova-tests`` extra)."""
import json
import subprocess
import sys

import pytest

#: ``group.name`` -> why minisched's default is not Nova's.
DIFFERENT = {
    'DEFAULT.compute_driver': 'minisched runs its fake driver unless told otherwise; Nova '
                              'has no default driver',
    'DEFAULT.cpu_allocation_ratio': '0.0 is "unset", as in Nova before Stein; both then take '
                                    'initial_cpu_allocation_ratio',
    'DEFAULT.ram_allocation_ratio': 'as cpu_allocation_ratio',
    'DEFAULT.disk_allocation_ratio': 'as cpu_allocation_ratio',
    'DEFAULT.state_path': "the user's state directory, not the installed package's",
    'filter_scheduler.available_filters': "minisched's module; Nova's name is accepted too",
    'filter_scheduler.weight_classes': "minisched's module; Nova's name is accepted too",
}


def _defaults(project):
    out = subprocess.run([sys.executable, '-m', 'tests.nova_compat.option_defaults', project],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


@pytest.fixture(scope='module')
def shared():
    nova, own = _defaults('nova'), _defaults('minisched')
    return {name: (own[name], nova[name]) for name in own.keys() & nova.keys()}


def test_shared_options_have_novas_defaults_or_a_listed_reason(shared):
    assert len(shared) > 100  # the comparison compares something
    unlike = {name: pair for name, pair in shared.items()
              if pair[0] != pair[1] and name not in DIFFERENT}
    assert not unlike, 'minisched default, Nova 34 default: %s' % unlike


def test_listed_differences_are_real(shared):
    stale = sorted(name for name in DIFFERENT
                   if name not in shared or shared[name][0] == shared[name][1])
    assert not stale, 'listed as different, but shared and equal (or gone): %s' % stale


def test_enabled_filters_is_novas(shared):
    own, nova = shared['filter_scheduler.enabled_filters']
    assert own == nova
    assert 'RamFilter' not in own
