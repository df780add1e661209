"""Keep only hosts whose free disk equals the flavor's exactly (baremetal-style whole nodes)."""
import logging

from minisched.scheduler import filters

LOG = logging.getLogger(__name__)


def _requested_mb(spec_obj):
    return 1024 * (spec_obj.root_gb + spec_obj.ephemeral_gb) + spec_obj.swap


class ExactDiskFilter(filters.BaseHostFilter):
    """Passes hosts with ``free_disk_mb`` equal to the request; limits disk to the total."""

    # Deprecated in Nova 16.0.0 (Pike); 17.0.13 (Queens), its last release with it, logs this.
    DEPRECATION = ('ExactDiskFilter is deprecated in Pike and will be removed in a subsequent '
                   'release.')

    RUN_ON_REBUILD = False
    SETS_LIMITS = True

    def host_passes(self, host_state, spec_obj):
        requested = _requested_mb(spec_obj)
        if requested != host_state.free_disk_mb:
            LOG.debug('%(host)s does not have exactly %(req)s MB usable disk, it has '
                      '%(free)s.', {'host': host_state, 'req': requested,
                                    'free': host_state.free_disk_mb})
            return False
        # The limit makes the compute claim refuse a second instance on the same node.
        host_state.limits.update(self.limits_for(host_state, spec_obj))
        return True

    def limits_for(self, host_state, spec_obj):
        return {'disk_gb': host_state.total_usable_disk_gb}

    def filter_rows(self, view, spec_obj):
        return view.column('free_disk_mb') == _requested_mb(spec_obj)
