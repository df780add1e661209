"""Every minisched object has Nova 34's fingerprint, or is listed as a difference with its reason.

The fingerprint (``oslo_versionedobjects.fixture.ObjectVersionChecker``) covers an object's
name, version, the type, default and nullability of each field and the signature of each
remotable method: what must agree for a primitive to mean the same thing to both projects.
Nova's side is computed from the installed ``nova==34.0.0`` (the ``nova-tests`` extra), each
project in a process of its own (:mod:`tests.nova_compat.fingerprints`).
"""
import json
import os
import re
import subprocess
import sys

import pytest

from tests.nova_compat import client
from tests.nova_compat import fingerprints

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_DIFFERENCES = os.path.join(_ROOT, 'doc', 'source', 'contributor', 'nova-differences.rst')
_CI = os.environ.get('CI', '').lower() == 'true'
#: What the scheduler, the conductor and the compute exchange: never allowed to differ.
_EXCHANGED = {
    'RequestSpec', 'Selection', 'Instance', 'InstanceList', 'ComputeNode', 'ComputeNodeList',
    'Service', 'ServiceList', 'Aggregate', 'AggregateList', 'BuildRequest', 'Flavor',
    'ImageMeta', 'ImageMetaProps', 'InstanceGroup', 'Destination', 'SchedulerLimits',
    'SchedulerRetries', 'RequestGroup', 'RequestLevelParams', 'InstanceNUMATopology',
    'InstancePCIRequests', 'HostMapping', 'CellMapping', 'InstanceMapping',
}


def _describe(project):
    out = subprocess.run([sys.executable, '-m', 'tests.nova_compat.fingerprints', project],
                         cwd=_ROOT, capture_output=True, text=True, timeout=300)
    if out.returncode:
        pytest.fail('describing %s objects failed:\n%s' % (project, out.stderr[-4000:]),
                    pytrace=False)
    return json.loads(out.stdout)


def listed_differences():
    """Object names listed, with a reason, under the "Objects unlike Nova's" heading of
    ``nova-differences.rst`` (lines ``* ``Name``: reason``)."""
    with open(_DIFFERENCES) as f:
        text = f.read()
    section = re.search(r"^Objects unlike Nova's\n-+\n(.*?)(?=^\S[^\n]*\n-+\n|\Z)", text,
                        re.M | re.S)
    if section is None:
        return {}
    return dict(re.findall(r'^\* ``(\w+)``: (\S.*)$', section.group(1), re.M))


@pytest.fixture(scope='module')
def described():
    missing = client.missing()
    if missing:
        if _CI:
            pytest.fail('CI=true and Nova cannot be described: %s' % missing, pytrace=False)
        pytest.skip('Nova 34 objects NOT COMPARED: %s' % missing)
    return _describe('nova'), _describe('minisched')


def test_every_object_has_novas_fingerprint_or_a_listed_reason(described):
    nova, ours = described
    listed = listed_differences()
    unlisted = {name: desc for name, desc in ours.items() if name not in listed}
    lines = fingerprints.differences(nova, unlisted)
    assert not lines, '%d differences from Nova 34:\n%s' % (len(lines), '\n'.join(lines))


def test_listed_differences_are_real_and_not_exchanged(described):
    nova, ours = described
    listed = listed_differences()
    assert not sorted(set(listed) & _EXCHANGED), 'objects the services exchange must match'
    stale = [name for name in listed
             if name not in ours or (name in nova and
                                     nova[name]['fingerprint'] == ours[name]['fingerprint'])]
    assert not stale, 'listed in nova-differences.rst but equal to Nova or gone: %s' % stale
