"""Keep hosts whose aggregate metadata satisfies the flavor's extra specs.

Keys without a scope, or scoped ``aggregate_instance_extra_specs:``, name an aggregate
metadata key; other scopes belong to other filters. The host must have that key in one of
its aggregates and some value of it (every aggregate's value, split on commas) must
satisfy ``extra_specs_ops.match(value, req)``.
"""
import logging

from minisched.scheduler import filters
from minisched.scheduler.filters import extra_specs_ops, utils

LOG = logging.getLogger(__name__)
_SCOPE = 'aggregate_instance_extra_specs'


def _requirements(flavor):
    """(metadata key, requirement) for the extra specs this filter owns."""
    for key, req in utils.flavor_extra_specs(flavor).items():
        scope = key.split(':', 1)
        if len(scope) == 1:
            yield key, req
        elif scope[0] == _SCOPE:
            yield scope[1], req


class AggregateInstanceExtraSpecsFilter(filters.BaseHostFilter):
    """Passes hosts whose aggregates match every owned flavor extra spec."""

    # Aggregates and flavor do not change within a request.
    run_filter_once_per_request = True
    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        requirements = list(_requirements(spec_obj.flavor))
        if not requirements:
            return True
        metadata = utils.aggregate_metadata_get_by_host(host_state)
        for key, req in requirements:
            values = metadata.get(key)
            if not values:
                LOG.debug('%(host)s fails flavor extra_specs requirements. Extra_spec %(key)s '
                          'is not in aggregate.', {'host': host_state, 'key': key})
                return False
            if not any(extra_specs_ops.match(value, req) for value in values):
                LOG.debug("%(host)s fails flavor extra_specs requirements. '%(values)s' do not "
                          "match '%(req)s'", {'host': host_state, 'req': req, 'values': values})
                return False
        return True

    def filter_rows(self, view, spec_obj):
        # The answer depends on the host's aggregates only.
        return utils.per_aggregate_set(view, lambda state: self.host_passes(state, spec_obj))

    def is_noop(self, spec_obj):
        return not any(True for _ in _requirements(spec_obj.flavor))
