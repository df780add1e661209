"""Nova 34.0.0's own scheduler unit tests, run against minisched: one pytest test per Nova test.

The modules of :data:`tests.nova_compat.server.MODULES` (every filter and weigher test module,
the filter and weigher handler tests, and ``HostStateTestCase``) run in a process of their own
where Nova's filter, weigher and HostState modules are minisched's classes (see
:mod:`tests.nova_compat.redirect`). A test here passes when Nova's passes and fails with Nova's
failure text otherwise, except the tests of :data:`EXCLUDED`, which are expected to fail
(strictly: one that starts passing fails here until it is taken off the list).

Needs the ``nova-tests`` extra (``pip install -e '.[test,nova-tests]'``, ``tox -e nova``).
Without it the module is skipped, loudly; with ``CI=true`` that is a failure.
"""
import os
import warnings

import pytest

from tests.nova_compat import client

_PREFIX = 'nova.tests.unit.scheduler.'

#: Nova tests that cannot pass against minisched, and why.
EXCLUDED = {
    # -- Nova's HostState internals --
    _PREFIX + 'test_host_manager.HostStateTestCase.'
    'test_stat_consumption_from_compute_node':
        "asserts update() locks through nova.utils.synchronized('fakehost-fakenode'); "
        "minisched's HostState holds a threading.Lock of its own",
    _PREFIX + 'test_host_manager.HostStateTestCase.'
    'test_stat_consumption_from_instance':
        'asserts consume_from_request() calls nova.virt.hardware.numa_fit_instance_to_host '
        'and numa_usage_from_instance_numa, nova.objects.Instance and nova.utils.synchronized '
        "(all mocked); minisched's HostState uses minisched.virt.hardware and its own lock",
}

_MISSING = client.missing()
_CI = os.environ.get('CI', '').lower() == 'true'

if _MISSING and not _CI:
    _REASON = 'Nova 34.0.0 unit tests NOT RUN: %s' % _MISSING
    warnings.warn(_REASON)
    pytest.skip(_REASON, allow_module_level=True)

_SERVER = None if _MISSING else client.NovaTestServer()
_IDS = _SERVER.ids if _SERVER else []


def _param(test_id):
    marks = ()
    reason = EXCLUDED.get(test_id)
    if reason:
        marks = (pytest.mark.xfail(reason=reason, strict=True),)
    return pytest.param(test_id, marks=marks, id=test_id[len(_PREFIX):])


def test_nova_is_installed():
    if _MISSING:
        pytest.fail('CI=true and the Nova tests cannot run: %s' % _MISSING, pytrace=False)


def test_lists_name_existing_tests():
    """Every excluded id is a test the server knows (no stale entry)."""
    if _MISSING:
        pytest.skip('the Nova tests cannot run (see test_nova_is_installed)')
    assert sorted(set(EXCLUDED) - set(_IDS)) == []


@pytest.mark.parametrize('test_id', [_param(test_id) for test_id in _IDS])
def test_nova(test_id):
    outcome, text = _SERVER.run(test_id)
    if outcome == 'skipped':
        pytest.skip(text)
    if outcome != 'passed':
        pytest.fail('Nova test %s %s:\n%s' % (test_id, outcome, text), pytrace=False)
