"""Keep only hosts whose free RAM equals the flavor's exactly (baremetal-style whole nodes)."""
import logging

from minisched.scheduler import filters

LOG = logging.getLogger(__name__)


class ExactRamFilter(filters.BaseHostFilter):
    """Passes hosts with ``free_ram_mb == memory_mb``; limits memory to the physical total."""

    # Deprecated in Nova 16.0.0 (Pike); 17.0.13 (Queens), its last release with it, logs this.
    DEPRECATION = ('ExactRamFilter is deprecated in Pike and will be removed in a subsequent '
                   'release.')

    RUN_ON_REBUILD = False
    SETS_LIMITS = True

    def host_passes(self, host_state, spec_obj):
        requested = spec_obj.memory_mb
        if requested != host_state.free_ram_mb:
            LOG.debug('%(host)s does not have exactly %(req)s MB usable RAM, it has %(free)s '
                      'MB.', {'host': host_state, 'req': requested,
                              'free': host_state.free_ram_mb})
            return False
        # The limit makes the compute claim refuse a second instance on the same node.
        host_state.limits.update(self.limits_for(host_state, spec_obj))
        return True

    def limits_for(self, host_state, spec_obj):
        return {'memory_mb': host_state.total_usable_ram_mb}

    def filter_rows(self, view, spec_obj):
        return view.column('free_ram_mb') == spec_obj.memory_mb
