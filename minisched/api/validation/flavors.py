"""Flavor create: the rules of Nova's flavor API schema and of ``compute.flavors.create``.

A name of 1 to 255 printable characters without whitespace first or last; an id of 1 to 255
of ``a-z A-Z 0-9 . _ -`` and space (no space first or last), or none for a new UUID; RAM and
vCPUs from 1, disk, ephemeral disk and swap from 0, all at most ``MAX_INT``; an RX/TX factor
above 0; a public flag; a description of at most 65535 printable characters. Extra specs
follow ``extra_specs.validate_extra_specs``.
"""
import re

from minisched.api.validation import extra_specs as extra_spec_rules
from minisched.api.validation import parameter_types as types

#: Longest flavor description (Nova's ``_flavor_description``, a TEXT column).
DESCRIPTION_MAX_LENGTH = 65535
_FLAVOR_ID = re.compile(r'(?! )[a-zA-Z0-9. _-]+(?<! )')


def check_flavorid(value):
    """The flavor id as stored (a string), or None (make a UUID) for None."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)  # Nova takes a number and keeps its string
    types.check_string('id', value, 1, types.MAX_LENGTH)
    if not _FLAVOR_ID.fullmatch(value):
        raise types.invalid('id', value, 'Holds only the characters a-z A-Z 0-9 . _ - and '
                            'space, and does not start or end with a space.')
    return value


def validate_create(name, memory_mb, vcpus, root_gb, ephemeral_gb=0, swap=0, flavorid=None,
                    rxtx_factor=1.0, is_public=True, description=None, extra_specs=None):
    """The Flavor fields of a new flavor, converted; ValidationError for the first refusal.

    Field names in the messages are those of Nova's API (``ram``, ``disk``...).
    """
    return {
        'name': types.check_name('name', name),
        'flavorid': check_flavorid(flavorid),
        'memory_mb': types.check_integer('ram', memory_mb, 1, types.MAX_INT),
        'vcpus': types.check_integer('vcpus', vcpus, 1, types.MAX_INT),
        'root_gb': types.check_integer('disk', root_gb, 0, types.MAX_INT),
        'ephemeral_gb': types.check_integer('OS-FLV-EXT-DATA:ephemeral', ephemeral_gb, 0,
                                            types.MAX_INT),
        'swap': types.check_integer('swap', swap, 0, types.MAX_INT),
        'rxtx_factor': types.check_positive_float('rxtx_factor', rxtx_factor),
        'is_public': types.check_boolean('os-flavor-access:is_public', is_public),
        'description': types.check_description('description', description,
                                               DESCRIPTION_MAX_LENGTH),
        'extra_specs': extra_spec_rules.validate_extra_specs(extra_specs or {}),
    }
