"""The image a server is booted from: what its attributes and properties may hold.

In Nova the image comes from Glance, which has validated it; minisched's callers hand it
in as a dict (``{'id': UUID, 'min_ram': MB, ..., 'properties': {...}}``), so it is checked
here, before anything is written: the id is a UUID; each attribute and each property the
scheduler reads (``hw_*``, ``img_*``, ``os_*``, their legacy names, ``hw_numa_cpus.N`` /
``hw_numa_mem.N``) has a value of its type; property names are 1 to 255 characters (Glance's
column) and values of other properties are strings, numbers or booleans, which the
instance's system metadata keeps as text.
"""
import re

from minisched.api.validation import parameter_types as types
from minisched import exception
from minisched.objects import image_meta as image_meta_obj
from minisched.virt import hardware

#: Attributes kept as integers in Glance's 32-bit columns.
_SIZES = ('min_ram', 'min_disk')
_PER_NODE = {'hw_numa_cpus': hardware.parse_cpu_spec, 'hw_numa_mem': int}
_PER_NODE_KEY = re.compile(r'(hw_numa_cpus|hw_numa_mem)\.(\d+)')


def check_image(image):
    """``image`` (a dict, or None for none) once every rule holds; ValidationError else."""
    if image is None:
        return {}
    if not isinstance(image, dict):
        raise types.invalid('image', image, 'Is of type %s, not an object (a dict).'
                            % type(image).__name__)
    for key, value in image.items():
        if key == 'properties':
            _check_properties(value)
        elif key == 'id':
            if value is not None:
                types.check_uuid('image.id', value)
        elif key in _SIZES:
            if value is not None:
                types.check_integer('image.%s' % key, value, 0, types.MAX_INT)
        elif key in image_meta_obj.ImageMeta.fields and value is not None:
            _coerce('image.%s' % key, value,
                    lambda: image_meta_obj.ImageMeta.from_dict({key: value}))
    return image


def _check_properties(properties):
    if properties is None:
        return
    if not isinstance(properties, dict):
        raise types.invalid('image.properties', properties, 'Is of type %s, not an object '
                            '(a dict).' % type(properties).__name__)
    for key, value in properties.items():
        if not isinstance(key, str):
            raise types.invalid('image.properties', key, 'A property name is of type %s, '
                                'not a string.' % type(key).__name__)
        field = 'image.properties.%s' % key
        if not 1 <= len(key) <= types.MAX_LENGTH:
            raise types.invalid(field, key, 'A property name is %d characters long; names '
                                'have 1 to %d.' % (len(key), types.MAX_LENGTH))
        if value is None or isinstance(value, (dict, list, tuple, set)):
            raise types.invalid(field, value, 'Is of type %s, not a string, a number or a '
                                'boolean.' % type(value).__name__)
        per_node = _PER_NODE_KEY.fullmatch(key)
        if per_node:
            _coerce(field, value, lambda: _PER_NODE[per_node.group(1)](value))
        else:  # a property ImageMetaProps does not know is ignored by it
            _coerce(field, value,
                    lambda: image_meta_obj.ImageMetaProps.from_dict({key: value}))


def _coerce(field, value, convert):
    """Run ``convert()`` (reading ``value`` as its field's type); a failure names ``field``."""
    try:
        convert()
    except exception.ValidationError:
        raise
    except (ValueError, TypeError, exception.Invalid) as exc:
        message = exc.format_message() if isinstance(exc, exception.Invalid) else str(exc)
        raise types.invalid(field, value, 'Is not a valid value: %s'
                            % (message.strip() or type(exc).__name__))
