"""Flavor affinity: one flavor per host, or flavors confined to aggregates.

TypeAffinityFilter (Nova's, removed in Queens) keeps hosts running only instances of the
requested flavor (by flavor id). AggregateTypeAffinityFilter keeps hosts whose aggregates list
the flavor name in ``instance_type`` (comma-separated), or that no aggregate restricts.
"""
from minisched.scheduler import filters
from minisched.scheduler.filters import utils


class TypeAffinityFilter(filters.BaseHostFilter):
    """Passes hosts whose instances all have the requested flavor (empty hosts pass)."""

    RUN_ON_REBUILD = False
    # Deprecated in Nova 16.0.0 (Pike); 16.1.8, its last release with it, logs this.
    DEPRECATION = ('TypeAffinityFilter is deprecated for removal in the 17.0.0 Queens release. '
                   'There is no replacement planned for this filter. It is fundamentally flawed '
                   'in that it relies on the flavors.id primary key and if a flavor "changed" '
                   '(deleted and re-created with new values) it will result in this filter '
                   'thinking it is a different flavor, thus breaking the usefulness of this '
                   'filter.')

    def host_passes(self, host_state, spec_obj):
        flavor_id = spec_obj.flavor.id
        types = {instance.instance_type_id for instance in host_state.instances.values()}
        return not (types - {flavor_id})


class AggregateTypeAffinityFilter(filters.BaseHostFilter):
    """Passes hosts whose aggregates allow the flavor name, or set no ``instance_type``."""

    # Aggregates do not change within a request.
    run_filter_once_per_request = True
    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        values = utils.aggregate_values_from_key(host_state, 'instance_type')
        name = spec_obj.flavor.name
        for value in values:
            if name in [part.strip() for part in value.split(',')]:
                return True
        return not values

    def filter_rows(self, view, spec_obj):
        # The answer depends on the host's aggregates only.
        return utils.per_aggregate_set(view, lambda state: self.host_passes(state, spec_obj))
