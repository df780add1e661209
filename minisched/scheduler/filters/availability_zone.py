"""Keep hosts in the requested availability zone.

A host's zones are the ``availability_zone`` values of its aggregates (a host may be in
several); a host in no such aggregate is in ``[DEFAULT] default_availability_zone``.
"""
import logging

import numpy as np

from minisched.scheduler import filters
from minisched.scheduler.filters import utils

LOG = logging.getLogger(__name__)
_KEY = 'availability_zone'


class AvailabilityZoneFilter(filters.BaseHostFilter):
    """Passes hosts in ``spec.availability_zone``, or every host when none is asked."""

    # Availability zones do not change within a request.
    run_filter_once_per_request = True
    RUN_ON_REBUILD = False
    # No DEPRECATION: Nova 24.0.0 (Xena) to 27.x warned only while
    # [scheduler] query_placement_for_availability_zone had Placement enforce zones too.
    # Without Placement this filter is the only enforcement, so that warning never applies.

    def _host_zones(self, host_state):
        metadata = utils.aggregate_metadata_get_by_host(host_state, key=_KEY)
        if _KEY in metadata:
            return metadata[_KEY]
        return {self.conf.default_availability_zone}

    def host_passes(self, host_state, spec_obj):
        zone = spec_obj.availability_zone
        if not zone:
            return True
        zones = self._host_zones(host_state)
        if zone not in zones:
            LOG.debug("Availability Zone '%(az)s' requested. %(host_state)s has AZs: "
                      "%(host_az)s", {'host_state': host_state, 'az': zone, 'host_az': zones})
            return False
        return True

    def is_noop(self, spec_obj):
        return not spec_obj.availability_zone

    def filter_rows(self, view, spec_obj):
        zone = spec_obj.availability_zone
        if not zone:
            return np.ones(len(view), dtype=bool)
        # Hosts in no aggregate, the common case, share one answer: the default zone's.
        return utils.per_aggregate_set(view, lambda state: zone in self._host_zones(state))
