"""Keep hosts whose capabilities satisfy the flavor's extra specs.

A key without a scope (``hypervisor_type``) is checked only if the host has such an attribute
or stat; ``capabilities:a:b`` walks host attributes, then ``stats``, then nested dicts (JSON
strings decoded) along ``a``, ``b``. Keys of other scopes belong to other filters. A missing
capability fails; a present one must satisfy ``extra_specs_ops.match(str(value), req)``.
``hw:maxphysaddr_bits=N`` asks for ``capabilities:cpu_info:maxphysaddr:bits >= N``.
"""
import logging

import numpy as np
from oslo_serialization import jsonutils

from minisched.scheduler import filters
from minisched.scheduler.filters import extra_specs_ops
from minisched.scheduler.filters import utils

LOG = logging.getLogger(__name__)
_SCOPE = 'capabilities'
#: HostState attributes of minisched's own that Nova's HostState does not have.
_NOT_CAPABILITIES = frozenset(['row', 'release', '_table', '_row', '_lock'])


def _requirements(extra_specs):
    """(attribute path, requirement, bare key?) for the extra specs this filter owns."""
    for key, req in extra_specs.items():
        if key == 'hw:maxphysaddr_bits':
            yield ['cpu_info', 'maxphysaddr', 'bits'], '>= %s' % req, False
            continue
        path = key.split(':')
        if len(path) == 1:
            yield path, req, True
        elif path[0] == _SCOPE:
            yield path[1:], req, False


def _attribute(obj, name):
    return None if name in _NOT_CAPABILITIES else getattr(obj, name, None)


def _capability(host_state, path, decode):
    cap = host_state
    for name in path:
        try:
            if isinstance(cap, str):
                try:
                    cap = decode(cap)
                except ValueError as exc:
                    LOG.debug("%s fails. The capabilities '%s' couldn't be loaded from JSON: "
                              "%s", host_state, cap, exc)
                    return None
            if isinstance(cap, dict):
                cap = cap.get(name)
            elif _attribute(cap, name) is None:
                cap = cap.stats.get(name)  # AttributeError when cap has no stats
            else:
                cap = _attribute(cap, name)
        except AttributeError as exc:
            LOG.debug("%s fails. The capabilities couldn't be retrieved: %s.", host_state, exc)
            return None
        if cap is None:
            return None
    return cap


def _satisfies(host_state, requirements, decode):
    for path, req, bare in requirements:
        # Backwards compatible: a bare key counts only if the host knows it.
        if bare and not (path[0] not in _NOT_CAPABILITIES and hasattr(host_state, path[0])
                         or path[0] in getattr(host_state, 'stats', {})):
            continue
        cap = _capability(host_state, path, decode)
        if cap is None or not extra_specs_ops.match(str(cap), req):
            LOG.debug("%(host)s fails extra_spec requirements. '%(req)s' does not match "
                      "'%(cap)s'", {'host': host_state, 'req': req, 'cap': cap})
            return False
    return True


class ComputeCapabilitiesFilter(filters.BaseHostFilter):
    """Passes hosts matching every ``capabilities`` (or unscoped) flavor extra spec."""

    # Flavor and host capabilities do not change within a request.
    run_filter_once_per_request = True
    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        requirements = list(_requirements(utils.flavor_extra_specs(spec_obj.flavor)))
        return _satisfies(host_state, requirements, jsonutils.loads)

    def filter_rows(self, view, spec_obj):
        requirements = list(_requirements(utils.flavor_extra_specs(spec_obj.flavor)))
        if not requirements:
            return np.ones(len(view), dtype=bool)
        decoded = {}

        def decode(text):
            # Hosts share capability strings (cpu_info...): decode each one once. A failed
            # decode is not remembered, so it raises again for every host, as per host.
            if text not in decoded:
                decoded[text] = jsonutils.loads(text)
            return decoded[text]
        return np.array([_satisfies(state, requirements, decode) for state in view.states()],
                        dtype=bool)

    def is_noop(self, spec_obj):
        return not any(True for _ in _requirements(utils.flavor_extra_specs(spec_obj.flavor)))
