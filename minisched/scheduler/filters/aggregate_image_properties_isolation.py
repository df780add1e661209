"""Keep images away from aggregates whose metadata names other values of their properties.

Each aggregate metadata key that is an image property name (only keys prefixed
``namespace + separator`` when ``[filter_scheduler]
aggregate_image_properties_isolation_namespace`` is set) lists allowed values; an image
setting that property to a value outside the list cannot go to the host.
"""
import logging

from minisched.scheduler import filters
from minisched.scheduler.filters import utils

LOG = logging.getLogger(__name__)


def _image_props(spec_obj):
    return spec_obj.image.properties if spec_obj.image else {}


class AggregateImagePropertiesIsolation(filters.BaseHostFilter):
    """Passes hosts whose aggregates allow every image property the image sets."""

    # A rebuild may change the image, so the host must still fit the new one.
    RUN_ON_REBUILD = True
    # Aggregates and image do not change within a request.
    run_filter_once_per_request = True

    def host_passes(self, host_state, spec_obj):
        options = self.conf.filter_scheduler
        prefix = None
        if options.aggregate_image_properties_isolation_namespace:
            prefix = (options.aggregate_image_properties_isolation_namespace +
                      options.aggregate_image_properties_isolation_separator)
        props = _image_props(spec_obj)
        for key, allowed in utils.aggregate_metadata_get_by_host(host_state).items():
            if prefix and not key.startswith(prefix):
                continue
            try:
                prop = props.get(key)
            except AttributeError:
                # Nova looks the prefixed key up as is, so with a namespace it is skipped here.
                LOG.warning("Host '%(host)s' has a metadata key '%(key)s' that is not present "
                            "in the image metadata.", {'host': host_state.host, 'key': key})
                continue
            # Aggregate metadata are strings: compare the property's string form.
            if prop and str(prop) not in allowed:
                LOG.debug('%(host)s fails image aggregate properties requirements. Property '
                          '%(prop)s does not match %(allowed)s.',
                          {'host': host_state, 'prop': prop, 'allowed': allowed})
                return False
        return True

    def filter_rows(self, view, spec_obj):
        # The answer depends on the host's aggregates only.
        return utils.per_aggregate_set(view, lambda state: self.host_passes(state, spec_obj))

    def is_noop(self, spec_obj):
        props = _image_props(spec_obj)
        if isinstance(props, dict):
            return not any(props.values())
        return not any(props.get(name) for name in props.fields)
