"""MinischedObject's fast obj_attr_is_set / obj_what_changed answer as oslo.versionedobjects'.

The overrides exist for speed (they made serializing a RequestSpec four times cheaper); every
answer must stay the library's, since the change list travels on the wire.
"""
from oslo_versionedobjects import base as ovo_base
import pytest

from minisched.objects import base
from minisched.objects import flavor as flavor_obj
from minisched.objects import image_meta
from minisched.objects import request_spec
from minisched.objects import selection as selection_obj
from tests.unit import fakes


def _objects():
    """(label, object) in assorted states: fresh, reset, nested child changed, unset fields."""
    spec = fakes.fake_spec(memory_mb=1024, num_instances=2)
    yield 'fresh spec', spec
    reset = spec.obj_clone()
    reset.obj_reset_changes(recursive=True)
    yield 'reset spec', reset
    nested = reset.obj_clone()
    nested.flavor.vcpus = 3
    yield 'child changed', nested
    deep = reset.obj_clone()
    deep.image.properties.hw_architecture = 'x86_64'
    yield 'grandchild changed', deep
    yield 'empty spec', request_spec.RequestSpec()
    yield 'image', image_meta.ImageMeta.from_dict({'properties': {'os_type': 'linux'}})
    yield 'flavor', flavor_obj.Flavor(name='f', memory_mb=1)
    yield 'selection', selection_obj.Selection(service_host='h', nodename='n')


@pytest.mark.parametrize('label,obj', list(_objects()), ids=lambda v: v
                         if isinstance(v, str) else '')
def test_same_answers_as_oslo_versionedobjects(label, obj):
    assert base.MinischedObject.obj_what_changed(obj) == \
        ovo_base.VersionedObject.obj_what_changed(obj)
    for name in list(obj.fields) + list(obj.obj_extra_fields):
        assert obj.obj_attr_is_set(name) == \
            ovo_base.VersionedObject.obj_attr_is_set(obj, name), name
    with pytest.raises(AttributeError, match='has no attribute'):
        obj.obj_attr_is_set('no_such_field')


def test_primitive_change_list_follows_nested_changes():
    spec = fakes.fake_spec(memory_mb=1024)
    spec.obj_reset_changes(recursive=True)
    assert 'minisched_object.changes' not in spec.obj_to_primitive()
    spec.image.properties.hw_architecture = 'x86_64'
    assert spec.obj_to_primitive()['minisched_object.changes'] == ['image']
