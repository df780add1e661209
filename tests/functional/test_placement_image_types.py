"""``[compute] image_type_exclude_list`` on the real Placement: the compute withdraws the
``COMPUTE_IMAGE_TYPE_*`` traits of the excluded formats (as Nova 34's driver reports them,
compared with Nova's own code), and with ``[scheduler]
query_placement_for_image_type_support`` the scheduler keeps such images off that host."""
import json
import subprocess
import sys

import os_traits
import pytest

from tests.functional import base
from tests.functional import build_helpers
from tests.functional.placement_helpers import providers
from tests.functional.placement_helpers import report_client

pytestmark = pytest.mark.functional

SCHEDULER_CONF = {'filter_scheduler': {'enabled_filters': 'ComputeFilter'},
                  'scheduler': {'query_placement_for_image_type_support': 'true'}}
COMPUTE_CONF = {'DEFAULT': {'update_resources_interval': 1}}
EXCLUDE_RAW = {'compute': {'image_type_exclude_list': 'raw,qcow2'}}
SIZES = {'vcpus': 4, 'memory_mb': 8192, 'local_gb': 100}

#: Nova 34's own driver code, with the option set, in a process of its own (Nova registers
#: its options on the same global config as minisched).
_NOVA_IMAGE_TRAITS = """
import json, sys
from nova import conf
from nova.virt import fake
conf.CONF([], project='nova', default_config_files=[])
conf.CONF.set_override('image_type_exclude_list', sys.argv[1].split(','), group='compute')
traits = fake.FakeDriver(None).capabilities_as_traits()
print(json.dumps(sorted(t for t, ok in traits.items()
                        if t.startswith('COMPUTE_IMAGE_TYPE_') and ok)))
"""


def nova_image_traits(exclude):
    """The image type traits Nova 34's fake driver reports with ``exclude`` excluded."""
    out = subprocess.run([sys.executable, '-c', _NOVA_IMAGE_TRAITS, exclude],
                         capture_output=True, text=True, check=True).stdout
    return set(json.loads(out))


def image_traits(rp):
    return {trait for trait in rp['traits'] if trait.startswith('COMPUTE_IMAGE_TYPE_')}


def test_excluded_image_type_leaves_the_provider_and_the_scheduler_avoids_it(
        placement_cluster, tmp_path):
    cluster = placement_cluster
    build_helpers.start(cluster, {'compute1': SIZES, 'compute2': SIZES},
                        scheduler_conf=SCHEDULER_CONF, compute_conf=COMPUTE_CONF)
    client = report_client(tmp_path, cluster.placement_server.url)
    before = base.wait_for(lambda: (lambda rps: rps if len(rps) == 2 and all(
        rp['inventory'] for rp in rps.values()) else None)(providers(client)),
        timeout=60, message='both computes reported to Placement')
    assert image_traits(before['compute1']) == {os_traits.COMPUTE_IMAGE_TYPE_RAW}

    # The operator excludes raw (and qcow2, which the fake driver lacks anyway) on compute1
    # and restarts it: the trait it reported before is withdrawn.
    build_helpers.retire(cluster, 'compute1')
    cluster.start_compute('compute1', conf=build_helpers.merge_conf(COMPUTE_CONF, EXCLUDE_RAW),
                          **SIZES)
    after = base.wait_for(lambda: (lambda rps: rps if os_traits.COMPUTE_IMAGE_TYPE_RAW not in
                                   rps['compute1']['traits'] else None)(providers(client)),
                          timeout=60, message='COMPUTE_IMAGE_TYPE_RAW gone from compute1')
    assert image_traits(after['compute1']) == nova_image_traits('raw,qcow2') == set()
    assert image_traits(after['compute2']) == nova_image_traits('') == {
        os_traits.COMPUTE_IMAGE_TYPE_RAW}
    # Nothing else of the provider changed: the same one, its other traits kept.
    assert after['compute1']['uuid'] == before['compute1']['uuid']
    assert after['compute1']['traits'] == before['compute1']['traits'] - {
        os_traits.COMPUTE_IMAGE_TYPE_RAW}

    builder = build_helpers.Client(cluster)
    try:
        small = builder.flavor('small', vcpus=1, memory_mb=1024, root_gb=10)
        raw = {'disk_format': 'raw', 'container_format': 'bare'}
        built = builder.wait_built(builder.boot(small, image=raw, num_instances=3))
        assert [(i.vm_state, i.host) for i in built.values()] == [('active', 'compute2')] * 3
        # An image in a format no host offers any more: no valid host.
        qcow2 = {'disk_format': 'qcow2', 'container_format': 'bare'}
        refused = builder.wait_built(builder.boot(small, image=qcow2))
        assert [i.vm_state for i in refused.values()] == ['error']
    finally:
        builder.close()
