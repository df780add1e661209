"""Keep hosts that can run the image: architecture, hypervisor type, VM mode and version.

The image's ``hw_architecture`` (else ``[filter_scheduler]
image_properties_default_architecture``), ``img_hv_type`` and ``hw_vm_mode`` are
canonicalised; when one is set, some entry of the host's ``supported_instances`` must contain
every set value, ``img_hv_requested_version`` (e.g. ``>= 6.0``) must accept the host's
``hypervisor_version`` when both are known, and the host's ``cpu_info`` ``maxphysaddr`` bits,
when known, must be at least the image's ``hw_maxphysaddr_bits`` (HEAD, 2023.1).
"""
import logging

import numpy as np
from oslo_serialization import jsonutils
from oslo_utils import versionutils

from minisched.objects import fields
from minisched.scheduler import filters
from minisched.scheduler.filters import utils

LOG = logging.getLogger(__name__)


def _image_props(spec_obj):
    return spec_obj.image.properties if spec_obj.image else {}


def _supported(supported, hypervisor_version, wanted, required, versions):
    """Nova's rule for one host; ``versions`` memoises version checks within a request."""
    if not supported:
        return False
    for entry in supported:
        if all(not value or value in entry for value in wanted):
            # The version only matters (and can only raise) once an entry matches.
            if not (hypervisor_version and required):
                return True
            if hypervisor_version not in versions:
                versions[hypervisor_version] = utils.version_satisfies(
                    required, versionutils.convert_version_to_str(hypervisor_version))
            if versions[hypervisor_version]:
                return True
    return False


def _maxphysaddr_fits(cpu_info, bits_required):
    """Whether a host with ``cpu_info`` has the physical address bits the image asks for.

    As Nova: no requirement, or bits the host does not report, pass. Nova reads ``cpu_info``
    as a dict, the shape its filter tests give; a compute node reports a JSON string, on
    which Nova's check would raise AttributeError, so a string is decoded here (one that
    does not decode reports no bits).
    """
    if not bits_required:
        return True
    if isinstance(cpu_info, str):
        try:
            cpu_info = jsonutils.loads(cpu_info)
        except ValueError:
            return True
    if not isinstance(cpu_info, dict):
        return True
    bits = (cpu_info.get('maxphysaddr') or {}).get('bits')
    if not bits:
        return True
    return bits >= bits_required


class ImagePropertiesFilter(filters.BaseHostFilter):
    """Passes hosts whose supported instances and version fit the image's properties."""

    # A rebuild may change the image, so the host must still fit the new one.
    RUN_ON_REBUILD = True
    # Image properties and host capabilities do not change within a request.
    run_filter_once_per_request = True

    def __init__(self, conf):
        super().__init__(conf)
        self._supported_classes = utils.ContentClasses(
            'supported_instances', lambda value: tuple(map(tuple, value)) if value else None)

    def _wanted(self, props):
        default_arch = self.conf.filter_scheduler.image_properties_default_architecture
        return (fields.Architecture.canonicalize(props.get('hw_architecture', default_arch)),
                fields.HVType.canonicalize(props.get('img_hv_type')),
                fields.VMMode.canonicalize(props.get('hw_vm_mode')))

    def host_passes(self, host_state, spec_obj):
        props = _image_props(spec_obj)
        wanted = self._wanted(props)
        if not any(wanted):
            return True
        passes = (_supported(host_state.supported_instances, host_state.hypervisor_version,
                             wanted, props.get('img_hv_requested_version'), {}) and
                  _maxphysaddr_fits(host_state.cpu_info, props.get('hw_maxphysaddr_bits')))
        if not passes:
            LOG.debug('%(host)s does not support the image properties %(props)s',
                      {'host': host_state, 'props': props})
        return passes

    def filter_rows(self, view, spec_obj):
        props = _image_props(spec_obj)
        wanted = self._wanted(props)
        if not any(wanted) or not len(view):
            return np.ones(len(view), dtype=bool)
        if props.get('hw_maxphysaddr_bits'):
            return None  # the answer also depends on each host's cpu_info: ask per host
        # The answer depends on supported_instances and hypervisor_version only: ask it once
        # per distinct pair (a few per cloud), not once per host.
        classes, supported = self._supported_classes.classes(view)
        versions, version_index = np.unique(view.column('hypervisor_version'),
                                            return_inverse=True)
        pairs, inverse = np.unique(classes * len(versions) + version_index.reshape(-1),
                                   return_inverse=True)
        required, memo = props.get('img_hv_requested_version'), {}
        answers = []
        for pair in pairs.tolist():
            version = int(versions[pair % len(versions)])
            answers.append(_supported(supported[pair // len(versions)],
                                      None if version == -1 else version, wanted, required,
                                      memo))
        return np.array(answers, dtype=bool)[inverse.reshape(-1)]

    def is_noop(self, spec_obj):
        return not any(self._wanted(_image_props(spec_obj)))
