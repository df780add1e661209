"""Build casts the conductor cannot decode leave no build request behind.

The API writes a build request, a request spec and an unplaced instance mapping, then casts
``schedule_and_build_instances``. Here the test writes those records as the API does and
sends the cast itself, raw (``resilience.RawClients``), with one field broken each time: the
context's timestamp, its ``read_deleted``, ``"is_admin": "false"``, a flavor's vcpus "abc",
a request spec of version 99.0, a build request without its instance. The conductor refuses
each (logging the broken field, no traceback, no logging error) and ends its build in ERROR
in cell0 with the reason as the fault: no build request, and no instance mapping without a
cell, is left for the stuck-build check to find hours later.
"""
import copy

import pytest

from minisched.db import migration
from tests.functional import db_fixtures
from tests.functional import build_helpers
from tests.functional import resilience
from tests.functional.test_validation import write_build

pytestmark = [pytest.mark.functional, pytest.mark.timeout(180)]

DATA = 'minisched_object.data'
VERSION = 'minisched_object.version'


def _break_timestamp(ctxt, build_request, spec):
    ctxt['timestamp'] = 'the day after tomorrow'


def _break_read_deleted(ctxt, build_request, spec):
    ctxt['read_deleted'] = 'sometimes'


def _break_is_admin(ctxt, build_request, spec):
    ctxt['is_admin'] = 'false'


def _break_vcpus(ctxt, build_request, spec):
    spec[DATA]['flavor'][DATA]['vcpus'] = 'abc'


def _break_spec_version(ctxt, build_request, spec):
    spec[VERSION] = '99.0'


def _drop_instance(ctxt, build_request, spec):
    del build_request[DATA]['instance']


#: (what is broken, how, what the fault and the log name)
CASES = [('context timestamp', _break_timestamp, 'timestamp'),
         ('context read_deleted', _break_read_deleted, 'read_deleted'),
         ('is_admin "false"', _break_is_admin, 'is_admin'),
         ('vcpus "abc"', _break_vcpus, 'vcpus'),
         ('spec version 99.0', _break_spec_version, '99.0'),
         ('no instance', _drop_instance, 'build_requests[0].instance')]


@pytest.mark.parametrize('database', ['postgresql'], indirect=True)
def test_undecodable_build_casts_leave_no_build_request(request, cluster):
    cell0_url, drop_cell0 = db_fixtures.make_db('postgresql')
    request.addfinalizer(drop_cell0)
    migration.db_sync(cell0_url, 'main')
    build_helpers.start(cluster, {'c1': {'vcpus': 4, 'memory_mb': 4096, 'local_gb': 40}})
    cluster.run_manage('cell', 'map_cell0', '--database_connection', cell0_url)
    cluster.run_manage('cell', 'simple_cell_setup')
    client = build_helpers.Client(cluster)
    raw = resilience.RawClients(cluster)
    try:
        flavor = client.flavor('m1.test', vcpus=1, memory_mb=512, root_gb=1)
        conductor = raw.client('conductor', version='1.20', namespace='compute_task')
        sent = {}
        for what, breaks, field in CASES:
            build_request, spec = write_build(client, flavor)
            primitives = [copy.deepcopy(build_request.obj_to_primitive()),
                          copy.deepcopy(spec.obj_to_primitive())]
            ctxt = resilience.admin_context(user_id=build_helpers.OWNER,
                                            project_id=build_helpers.OWNER)
            breaks(ctxt, *primitives)
            conductor.cast(ctxt, 'schedule_and_build_instances',
                           build_requests=[primitives[0]], request_specs=[primitives[1]],
                           image={}, admin_password=None, injected_files=[],
                           requested_networks=None, block_device_mapping=[], tags=[])
            sent[build_request.instance_uuid] = (what, field)

        built = client.wait_built(list(sent))
        for uuid, (what, field) in sent.items():
            assert built[uuid].vm_state == 'error', (what, built[uuid].vm_state)
            fault, = client.faults(uuid)
            assert field in fault, (what, fault)
        assert cluster.query('SELECT instance_uuid FROM build_requests') == []
        assert cluster.query('SELECT instance_uuid FROM instance_mappings WHERE cell_id IS '
                             'NULL') == [], 'instance mappings without a cell'

        log = cluster.log('conductor')
        assert 'Traceback' not in log and '--- Logging error ---' not in log, log[-3000:]
        for what, field in sent.values():
            assert field in log, (what, log[-3000:])

        # The conductor serves on: a valid build through the API becomes ACTIVE.
        good, = client.boot(flavor, display_name='after')
        assert client.wait_built([good])[good].vm_state == 'active'
    finally:
        raw.close()
        client.close()
    print('\n%d undecodable build casts: each build ERROR with the broken field in its '
          'fault, no build request left' % len(sent))
