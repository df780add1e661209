"""Issue 26: input validated at the edge, and by the conductor for clients that bypass it.

An operator's 300-character server name or availability zone used to be accepted by
``minisched-manage server create`` (which printed an id), then lost: the conductor's write
failed with ``StringDataRightTruncation`` on PostgreSQL and left the build request, request
spec and a cell-less mapping behind. Now:

* ``minisched-manage`` (a real subprocess, on the cluster's database and broker, no service
  needed) refuses each bad input of the issue with one line naming the field, exits 1, and
  writes nothing;
* a client of its own that writes the build rows itself and casts
  ``schedule_and_build_instances`` through the conductor's RPC API gets its build in ERROR,
  with a fault naming the field and nothing half-written, on PostgreSQL (which enforces
  column lengths); the conductor keeps serving.
"""
import re

import pytest
from oslo_utils import uuidutils

from minisched import context as ms_context
from minisched.objects import build_request as build_request_obj
from minisched.objects import instance as instance_obj
from minisched.objects import instance_mapping as instance_mapping_obj
from minisched.objects import request_spec as request_spec_obj
from minisched.objects import security_group as security_group_obj
from tests.functional import build_helpers

pytestmark = [pytest.mark.functional, pytest.mark.both_backends, pytest.mark.timeout(240)]

ROWS = ('build_requests', 'request_specs', 'instance_mappings', 'instances', 'flavors',
        'flavor_extra_specs')


def counts(cluster):
    return {table: cluster.query('SELECT COUNT(*) AS n FROM %s' % table)[0]['n']
            for table in ROWS}


def refused(cluster, *args):
    """Run ``minisched-manage *args``: it must exit 1 with one line on stderr; returns it."""
    result = cluster.run_manage(*args, check=False)
    assert (result.returncode, result.stdout) == (1, ''), (result.stdout, result.stderr)
    assert result.stderr.count('\n') == 1, result.stderr
    return result.stderr


def test_manage_refuses_the_inputs_of_the_issue_and_writes_nothing(cluster):
    cluster.run_manage('flavor', 'create', 'm1.test', '--ram', 512, '--vcpus', 1, '--disk', 1)
    before = counts(cluster)
    assert before['flavors'] == 1
    create = ('server', 'create', '--flavor', 'm1.test')
    for args, field in (
            (create + ('--name', 'n' * 300), 'name'),
            (create + ('--availability-zone', 'z' * 300), 'availability_zone'),
            (create + ('--hint', 'same_host=web-1'), 'scheduler_hints.same_host'),
            (create + ('--image-property', 'hw_cpu_cores=four'),
             'image.properties.hw_cpu_cores'),
            (create + ('--property', 'owner/team=db'), 'metadata'),
            (('flavor', 'create', 'f' * 300, '--ram', 512, '--vcpus', 1, '--disk', 1), 'name'),
            (('flavor', 'set', 'm1.test', '--property', 'hw:numa_nodes=two'),
             'extra_specs.hw:numa_nodes'),
            (('flavor', 'set', 'm1.test', '--property', 'hw:numa_nodez=2'),
             'extra_specs.hw:numa_nodez')):
        stderr = refused(cluster, *args)
        assert stderr.startswith('Invalid input for field/attribute %s. ' % field), stderr
    assert 'Is 300 characters long, more than the maximum of 255.' in refused(
        cluster, *create, '--availability-zone', 'z' * 300)
    assert counts(cluster) == before
    assert before['build_requests'] == before['instances'] == 0


# -- a client that bypasses compute.api ------------------------------------------------------

def write_build(client, flavor, **instance_values):
    """What a client of its own writes before it casts: build request, spec and mapping."""
    ctxt = client.context()
    values = dict(uuid=uuidutils.generate_uuid(), project_id=ctxt.project_id,
                  user_id=ctxt.user_id, display_name='bypass', hostname='bypass',
                  vm_state=instance_obj.BUILDING, task_state=instance_obj.SCHEDULING,
                  power_state=instance_obj.NOSTATE, flavor=flavor, memory_mb=flavor.memory_mb,
                  vcpus=flavor.vcpus, root_gb=flavor.root_gb, ephemeral_gb=0, metadata={},
                  system_metadata={}, availability_zone=None, numa_topology=None,
                  pci_requests=None, pci_devices=None)
    values.update(instance_values)
    instance = instance_obj.Instance(ctxt, **values)
    spec = request_spec_obj.RequestSpec(
        ctxt, instance_uuid=instance.uuid, flavor=flavor, num_instances=1,
        project_id=ctxt.project_id, user_id=ctxt.user_id, scheduler_hints={},
        availability_zone=instance.availability_zone, ignore_hosts=None, force_hosts=None,
        force_nodes=None, retry=None, limits=None, instance_group=None,
        requested_destination=None, is_bfv=False, numa_topology=None,
        security_groups=security_group_obj.SecurityGroupList(objects=[]),
        pci_requests=None)
    spec.create()
    build_request = build_request_obj.BuildRequest(ctxt, instance_uuid=instance.uuid,
                                                   project_id=ctxt.project_id,
                                                   instance=instance)
    build_request.create()   # the instance is JSON here: any length fits
    instance_mapping_obj.InstanceMapping(ctxt, instance_uuid=instance.uuid,
                                         project_id=ctxt.project_id, user_id=ctxt.user_id,
                                         cell_mapping=None).create()
    return build_request, spec


def cast_build(client, build_requests, request_specs, image=None):
    client.api.compute_task_api.schedule_and_build_instances(
        ms_context.RequestContext(user_id=build_helpers.OWNER, project_id=build_helpers.OWNER,
                                  is_admin=True),
        build_requests=build_requests, request_specs=request_specs, image=image or {},
        admin_password=None, injected_files=[], requested_networks=None,
        block_device_mapping=[], tags=[])


@pytest.mark.parametrize('database', ['postgresql'], indirect=True)
def test_bypassing_casts_end_in_error_naming_the_field_and_the_conductor_serves_on(cluster):
    build_helpers.start(cluster, {'c1': {'vcpus': 4, 'memory_mb': 4096, 'local_gb': 40}})
    client = build_helpers.Client(cluster)
    try:
        flavor = client.flavor('m1.test', vcpus=1, memory_mb=512, root_gb=1)
        long_name, _ = pair = write_build(client, flavor, display_name='n' * 300)
        cast_build(client, [long_name], [pair[1]])
        long_zone, zone_spec = write_build(client, flavor, availability_zone='z' * 300)
        cast_build(client, [long_zone], [zone_spec])
        wrong_type, wrong_spec = write_build(client, flavor)
        cast_build(client, [wrong_type], [wrong_spec], image=['not', 'an', 'image'])
        cast_build(client, 'not a list of build requests', [])

        uuids = [long_name.instance_uuid, long_zone.instance_uuid, wrong_type.instance_uuid]
        built = client.wait_built(uuids)
        for uuid, field in zip(uuids, ('display_name', 'availability_zone', 'image')):
            assert built[uuid].vm_state == 'error'
            fault, = client.faults(uuid)
            assert fault.startswith('Invalid input for field/attribute %s. ' % field), fault
        assert built[uuids[0]].display_name == 'n' * 255  # cut, for the ERROR record
        assert built[uuids[1]].availability_zone == 'z' * 255
        # Cleaned up as a failed schedule: no build request left, the mapping kept (cell0,
        # here the local database), the instance listed.
        assert cluster.query('SELECT COUNT(*) AS n FROM build_requests')[0]['n'] == 0
        assert cluster.query('SELECT COUNT(*) AS n FROM instance_mappings')[0]['n'] == 3
        assert {i.uuid for i in client.api.get_all(client.context())} >= set(uuids)

        log = cluster.log('conductor')
        assert 'StringDataRightTruncation' not in log and 'Traceback' not in log, log[-3000:]
        assert 'Refused schedule_and_build_instances' in log
        assert 'field/attribute build_requests' in log

        # The conductor serves on: a valid build through the API becomes ACTIVE.
        good, = client.boot(flavor, display_name='after')
        assert client.wait_built([good])[good].vm_state == 'active'

        # Each worker ran its schedule_and_build_instances casts under the default admission
        # limit, and says so when it stops: the five casts above, refused ones included.
        cluster.stop('conductor')
        counts = re.findall(r'conductor: (\d+) of (\d+) admitted messages '
                            r'\(schedule_and_build_instances\) waited for their turn',
                            cluster.log('conductor'))
        assert sum(int(admitted) for _held, admitted in counts) == 5, counts
    finally:
        client.close()
