"""A RequestSpec built by Nova 34's code reads into minisched's objects with nothing lost.

Nova builds the spec in a process of its own (:mod:`tests.nova_compat.nova_request_spec`);
its primitive is read by minisched's classes through the Nova wire profile's serializer and
written back through it: what comes out is Nova's primitive, field for field, so a Nova
client's request crosses minisched's scheduler and conductor whole.
"""
import json
import os
import subprocess
import sys

from oslo_serialization import jsonutils
import pytest

from minisched import exception
from minisched.messaging import wire
from minisched import objects
from minisched.objects import base
from tests.nova_compat import client
from tests.nova_compat import nova_request_spec as nova_side

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_CI = os.environ.get('CI', '').lower() == 'true'


def _changes_sorted(value):
    """``value`` (a primitive) with each object's ``nova_object.changes`` in sorted order (a
    set, which each process lists in its own order)."""
    if isinstance(value, list):
        return [_changes_sorted(item) for item in value]
    if not isinstance(value, dict):
        return value
    return {key: sorted(item) if key == 'nova_object.changes' else _changes_sorted(item)
            for key, item in value.items()}


#: The Nova wire profile's serializer: what a scheduler or conductor reads and sends with.
_SERIALIZER = wire.NamespaceSerializer(base.MinischedObjectSerializer())


@pytest.fixture(scope='module')
def nova_primitive():
    missing = client.missing()
    if missing:
        if _CI:
            pytest.fail('CI=true and Nova cannot build a spec: %s' % missing, pytrace=False)
        pytest.skip('Nova 34 RequestSpec NOT CHECKED: %s' % missing)
    out = subprocess.run([sys.executable, '-m', 'tests.nova_compat.nova_request_spec'],
                         cwd=_ROOT, capture_output=True, text=True, timeout=300)
    if out.returncode:
        pytest.fail('Nova could not build the spec:\n%s' % out.stderr[-4000:], pytrace=False)
    return json.loads(out.stdout)


@pytest.fixture(scope='module')
def spec(nova_primitive):
    objects.register_all()
    # A copy: the serializer renames the primitive in place.
    return _SERIALIZER.deserialize_entity(None, json.loads(json.dumps(nova_primitive)))


def test_minisched_writes_back_novas_primitive_field_for_field(nova_primitive, spec):
    assert isinstance(spec, objects.RequestSpec)
    # As both travel: JSON (sets are tuples until then).
    ours = jsonutils.loads(jsonutils.dumps(_SERIALIZER.serialize_entity(None, spec)))
    assert _changes_sorted(ours) == _changes_sorted(nova_primitive)


def test_the_scheduler_reads_novas_values(spec):
    props = spec.image.properties
    assert (props.hw_video_model, props.hw_mem_encryption_model, props.os_secure_boot,
            props.img_hv_requested_version, props.traits_required) == (
        'bochs', 'amd-sev-snp', 'required', '>=6.0', ['CUSTOM_IMAGE'])
    assert props.img_block_device_mapping == [{'boot_index': '0', 'source_type': 'image'}]
    assert spec.security_groups.names() == ['default', 'web']
    assert [len(cell.pcpuset) for cell in spec.numa_topology.cells] == [2, 2]
    assert spec.pci_requests.requests[0].request_id == nova_side.PCI_REQUEST_UUID
    assert spec.instance_group.uuid == nova_side.GROUP_UUID
    assert spec.get_scheduler_hint('group') == nova_side.GROUP_UUID
    assert spec.requested_resources[0].requester_id == nova_side.PORT_UUID
    assert (spec.root_required, spec.same_subtree) == ({'CUSTOM_ROOT'},
                                                       [[nova_side.PORT_UUID]])
    assert spec.requested_networks.as_tuples()[0][:2] == ('net1', '10.0.0.5')
    dest = spec.requested_destination
    assert (dest.host, dest.aggregates, dest.forbidden_aggregates) == (
        'compute1', ['agg1,agg2'], {'agg3'})


def _backported(spec, props_version):
    """What a RequestSpec 1.11 peer (minisched before 1.15, or an older Nova) is sent."""
    manifest = dict(base.obj_tree_get_versions('RequestSpec'), RequestSpec='1.11',
                    Destination='1.2', ImageMetaProps=props_version)
    return spec.obj_to_primitive(target_version='1.11',
                                 version_manifest=manifest)['minisched_object.data']


def test_older_peers_get_novas_backports(spec):
    data = _backported(spec, '1.43')
    assert not {'requested_resources', 'request_level_params', 'requested_networks'} & set(
        data)
    destination = data['requested_destination']['minisched_object.data']
    assert not {'allow_cross_cell_move', 'forbidden_aggregates'} & set(destination)
    props = data['image']['minisched_object.data']['properties']['minisched_object.data']
    assert props['hw_mem_encryption_model'] == 'amd-sev-snp'
    # A peer without amd-sev-snp (ImageMetaProps 1.43) cannot be sent the request at all.
    with pytest.raises(exception.ObjectActionError):
        _backported(spec, '1.42')
