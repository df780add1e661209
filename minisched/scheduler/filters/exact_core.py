"""Keep only hosts whose free vCPUs equal the flavor's exactly (baremetal-style whole nodes)."""
import logging

from minisched.scheduler import filters

LOG = logging.getLogger(__name__)


class ExactCoreFilter(filters.BaseHostFilter):
    """Passes hosts with ``vcpus_total - vcpus_used == vcpus``; limits vCPUs to the total."""

    # Deprecated in Nova 16.0.0 (Pike); 17.0.13 (Queens), its last release with it, logs this.
    DEPRECATION = ('ExactCoreFilter is deprecated in Pike and will be removed in a subsequent '
                   'release.')

    RUN_ON_REBUILD = False
    SETS_LIMITS = True

    def host_passes(self, host_state, spec_obj):
        if not host_state.vcpus_total:
            # Unlike CoreFilter, an exact match cannot be assumed: fail safe.
            LOG.warning('VCPUs not set; assuming CPU collection broken')
            return False
        requested = spec_obj.vcpus
        usable = host_state.vcpus_total - host_state.vcpus_used
        if requested != usable:
            LOG.debug('%(host)s does not have exactly %(req)s cores of usable vcpu, it has '
                      '%(usable)s.', {'host': host_state, 'req': requested, 'usable': usable})
            return False
        # The limit makes the compute claim refuse a second instance on the same node.
        host_state.limits.update(self.limits_for(host_state, spec_obj))
        return True

    def limits_for(self, host_state, spec_obj):
        return {'vcpu': host_state.vcpus_total}

    def filter_rows(self, view, spec_obj):
        total = view.column('vcpus_total')
        return (total != 0) & (total - view.column('vcpus_used') == spec_obj.vcpus)
