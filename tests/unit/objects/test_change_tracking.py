"""MinischedObject's fast paths answer as oslo.versionedobjects' own methods.

obj_attr_is_set, obj_what_changed, obj_to_primitive, _obj_from_primitive and the UUID
field's coercion are overridden for speed (serializing a RequestSpec four times cheaper, a
Selection four times); every answer must stay the library's, since primitives travel on the
wire.
"""
import warnings

from oslo_versionedobjects import base as ovo_base
from oslo_versionedobjects import fields as ovo_fields
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
    full = selection_obj.Selection(
        compute_node_uuid='3c2d3bd2-7b43-4d6f-9b38-5b4f0f3a0a11', service_host='h',
        nodename='n', cell_uuid='0c1d3bd2-7b43-4d6f-9b38-5b4f0f3a0a22',
        limits=request_spec.SchedulerLimits.from_dict({'memory_mb': 1024.5, 'vcpu': 8}),
        allocation_request='null', allocation_request_version=None, availability_zone='az')
    yield 'full selection', full
    loaded = selection_obj.Selection.obj_from_primitive(full.obj_to_primitive())
    loaded.obj_reset_changes(['nodename'])
    yield 'partly reset selection', loaded


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


@pytest.mark.parametrize('label,obj', list(_objects()), ids=lambda v: v
                         if isinstance(v, str) else '')
def test_same_primitive_as_oslo_versionedobjects(label, obj):
    ours = obj.obj_to_primitive()
    library = ovo_base.VersionedObject.obj_to_primitive(obj)
    assert ours == library
    assert sorted(ours.get('minisched_object.changes', [])) == \
        sorted(library.get('minisched_object.changes', []))
    # Other versions take the library's path (backports).
    assert obj.obj_to_primitive(target_version=obj.VERSION) == library


@pytest.mark.parametrize('label,obj', list(_objects()), ids=lambda v: v
                         if isinstance(v, str) else '')
def test_same_object_from_a_primitive_as_oslo_versionedobjects(label, obj):
    primitive = obj.obj_to_primitive()
    cls = type(obj)
    ours = cls.obj_from_primitive(primitive)
    library = ovo_base.VersionedObject._obj_from_primitive.__func__(
        cls, None, cls.VERSION, primitive)
    assert ours.obj_to_primitive() == library.obj_to_primitive()
    assert ours.obj_what_changed() == library.obj_what_changed()
    assert ours.VERSION == library.VERSION


def test_loading_still_validates_every_value():
    primitive = fakes.fake_spec(memory_mb=1024).obj_to_primitive()
    primitive['minisched_object.data']['num_instances'] = 'many'
    with pytest.raises(ValueError, match="^RequestSpec.num_instances: invalid literal for "
                                         "int"):
        request_spec.RequestSpec.obj_from_primitive(primitive)


@pytest.mark.parametrize('value', ['3c2d3bd2-7b43-4d6f-9b38-5b4f0f3a0a11',
                                   '3C2D3BD2-7B43-4D6F-9B38-5B4F0F3A0A11',
                                   '3c2d3bd27b434d6f9b385b4f0f3a0a11',
                                   '{3c2d3bd2-7b43-4d6f-9b38-5b4f0f3a0a11}',
                                   '3c2d3bd2-7b43-4d6f-9b38-5b4f0f3a0a11\n',
                                   'not-a-uuid', 42, None])
def test_uuid_coercion_is_the_librarys(value):
    from minisched.objects import fields
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter('always')
        got = fields.UUIDField().coerce(None, 'u', value) if value is not None else None
    with warnings.catch_warnings(record=True) as library:
        warnings.simplefilter('always')
        expected = ovo_fields.UUIDField().coerce(None, 'u', value) \
            if value is not None else None
    assert got == expected
    assert [w.category for w in ours] == [w.category for w in library]
    if value is None:  # not nullable: both refuse it alike
        with pytest.raises(ValueError):
            fields.UUIDField().coerce(None, 'u', None)
        with pytest.raises(ValueError):
            ovo_fields.UUIDField().coerce(None, 'u', None)


@pytest.mark.parametrize('cls,values,bad', [
    (selection_obj.Selection, dict(
        compute_node_uuid='3c2d3bd2-7b43-4d6f-9b38-5b4f0f3a0a11', service_host='h',
        nodename='n', cell_uuid='0c1d3bd2-7b43-4d6f-9b38-5b4f0f3a0a22', limits=None,
        allocation_request='null', allocation_request_version=None, availability_zone=None),
     {'limits': 'not an object'}),
    (request_spec.SchedulerLimits, dict(numa_topology=None, vcpu=8, disk_gb=None,
                                        memory_mb=1024.7), {'vcpu': 'many'}),
    (flavor_obj.Flavor, dict(name='f', memory_mb='512', vcpus=1), {'vcpus': None})])
def test_new_builds_what_the_constructor_builds(cls, values, bad):
    ours, library = cls._new(**values), cls(**values)
    assert ours.obj_to_primitive() == library.obj_to_primitive()
    assert ours._changed_fields == library._changed_fields
    bad = dict(values, **bad)
    with pytest.raises((ValueError, TypeError)):
        cls(**bad)
    with pytest.raises((ValueError, TypeError)):
        cls._new(**bad)


def test_limits_from_dict_sets_every_field_as_before():
    limits = request_spec.SchedulerLimits.from_dict({'memory_mb': 1024.5, 'bogus': 1})
    expected = request_spec.SchedulerLimits(memory_mb=1024.5)
    expected.obj_set_defaults()
    assert limits.obj_to_primitive() == expected.obj_to_primitive()
    assert request_spec.SchedulerLimits.from_dict(None).to_dict() == {}
