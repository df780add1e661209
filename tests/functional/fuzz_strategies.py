"""Hypothesis strategies for the RPC fuzz tests: JSON garbage and broken object primitives.

Everything here is what can arrive over the wire: JSON values (oslo.messaging's rabbit driver
sends JSON), object primitives in minisched's envelope with a part broken (unknown names,
foreign namespaces, future versions, wrong field types, unknown fields, garbage ``data``),
nested objects, deep nesting and oversized payloads.
"""
import copy
import uuid

from hypothesis import strategies as st

from minisched import objects
from minisched.objects import image_meta

objects.register_all()

PREFIX = 'minisched_object.'
HOST = 'c1'

#: Object classes (besides the registered ones) a primitive may name: none of them may load.
FOREIGN_NAMES = ['Nope', 'VersionedObject', 'ObjectListBase', 'MinischedObject', '__class__',
                 '__init__', 'os.system', 'subprocess.Popen', 'builtins.eval', '../Service',
                 'service', 'SERVICE', 'Service ', '', 'NovaObject']
FOREIGN_NAMESPACES = ['nova', 'oslo', 'versionedobjects', 'builtins', 'os', '', 'MINISCHED']
BAD_VERSIONS = ['9.9', '1.999', '2.0', '0.1', '99', 'x.y', '', '1.0.0', '-1.0', ' 1.0', '1e3']

scalars = (st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) |
           st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=24))
keys = st.text(max_size=12)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children,
                                                                      max_size=4),
    max_leaves=12)
json_dicts = st.dictionaries(keys, json_values, max_size=6)


def nested(depth, leaf='x'):
    """``depth`` levels of lists and dicts around ``leaf``."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {'n': value}
    return value


def oversized(size=1024 * 1024):
    """About ``size`` bytes of JSON each: one long string, a wide dict, a long list."""
    return ['A' * size,
            {'k%06d' % i: 'v' * 40 for i in range(size // 52)},
            [uuid.UUID(int=i).hex for i in range(size // 36)]]


#: Garbage of every shape but size: JSON values and deep nesting (oversized payloads are
#: fixed extra cases of each endpoint, so that they are sent a few times, not hundreds).
garbage = json_values | st.sampled_from([nested(d) for d in (10, 100, 250)])


# -- valid templates ------------------------------------------------------------------------

def flavor():
    return objects.Flavor(id=1, flavorid='1', name='m1.fuzz', memory_mb=64, vcpus=1, root_gb=1,
                          ephemeral_gb=0, swap=0, extra_specs={})


def request_spec(num_instances=1, instance_uuid=None):
    return objects.RequestSpec(
        flavor=flavor(), image=image_meta.ImageMeta.from_dict({'properties': {}}),
        num_instances=num_instances, project_id='fuzz', user_id='fuzz',
        instance_uuid=instance_uuid or str(uuid.uuid4()), scheduler_hints={},
        ignore_hosts=None, force_hosts=None, force_nodes=None, retry=None, limits=None,
        instance_group=None, availability_zone=None, requested_destination=None)


def instance(host=HOST):
    return objects.Instance(uuid=str(uuid.uuid4()), host=host, node=host, vm_state='building',
                            task_state=None, project_id='fuzz', user_id='fuzz',
                            memory_mb=64, vcpus=1, root_gb=1, ephemeral_gb=0,
                            flavor=flavor())


def aggregate():
    return objects.Aggregate(id=4242, uuid=str(uuid.uuid4()), name='fuzz-agg',
                             hosts=[HOST], metadata={})


def service():
    # Not a host of the cluster: a fuzzed save or create must not touch a real service row.
    return objects.Service(host='fuzz-host', binary='minisched-fuzz')


TEMPLATES = {
    'RequestSpec': lambda: request_spec().obj_to_primitive(),
    # Not on a host of the cluster: a fuzzed create or save must not fill a real host.
    'Instance': lambda: instance(host='fuzz-host').obj_to_primitive(),
    'Aggregate': lambda: aggregate().obj_to_primitive(),
    'Service': lambda: service().obj_to_primitive(),
    'Flavor': lambda: flavor().obj_to_primitive(),
}


# -- mutations of a valid primitive ---------------------------------------------------------

def _set_key(primitive, key, value):
    primitive[PREFIX + key] = value
    return primitive


def _mutations(template):
    """Strategies turning a fresh copy of ``template`` into a broken primitive."""
    fields = sorted(template[PREFIX + 'data'])

    def fresh():
        return copy.deepcopy(template)

    def field_set(field, value):
        prim = fresh()
        prim[PREFIX + 'data'][field] = value
        prim.setdefault(PREFIX + 'changes', []).append(field)
        return prim

    def field_drop(field):
        prim = fresh()
        prim[PREFIX + 'data'].pop(field, None)
        return prim

    def nest(field, inner):
        return field_set(field, inner)

    return st.one_of(
        # a known field of the wrong type
        st.builds(field_set, st.sampled_from(fields), json_values),
        # a field the class does not have
        st.builds(field_set, keys.filter(lambda k: k not in fields), json_values),
        # a required field missing
        st.builds(field_drop, st.sampled_from(fields)),
        # another object, or a broken one, where a field is expected
        st.builds(nest, st.sampled_from(fields),
                  st.sampled_from(sorted(TEMPLATES)).map(lambda n: TEMPLATES[n]())),
        # envelope: unknown or foreign class names and namespaces, future versions
        st.builds(_set_key, st.builds(fresh), st.just('name'),
                  st.sampled_from(FOREIGN_NAMES) | json_values),
        st.builds(_set_key, st.builds(fresh), st.just('namespace'),
                  st.sampled_from(FOREIGN_NAMESPACES) | json_values),
        st.builds(_set_key, st.builds(fresh), st.just('version'),
                  st.sampled_from(BAD_VERSIONS) | json_values),
        st.builds(_set_key, st.builds(fresh), st.just('data'), json_values),
        st.builds(_set_key, st.builds(fresh), st.just('changes'), json_values),
        # envelope keys missing
        st.sampled_from(['name', 'version', 'data', 'namespace']).map(
            lambda key: {k: v for k, v in fresh().items() if k != PREFIX + key}),
    )


def broken_primitive(name=None):
    """A broken primitive of class ``name`` (default: any of the templates)."""
    names = [name] if name else sorted(TEMPLATES)
    return st.sampled_from(names).flatmap(lambda n: _mutations(TEMPLATES[n]()))


#: Anything that may stand where an object is expected.
bad_object = broken_primitive() | garbage
