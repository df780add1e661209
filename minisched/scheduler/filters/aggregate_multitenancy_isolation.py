"""Reserve hosts of tenant-isolated aggregates to the listed projects.

Aggregate metadata keys starting with ``filter_tenant_id`` (``filter_tenant_id``,
``filter_tenant_id2``...) hold comma-separated project ids. A host in such aggregates takes
only those projects; a host in none of them takes every project.
"""
import logging

from minisched.scheduler import filters
from minisched.scheduler.filters import utils

LOG = logging.getLogger(__name__)
_PREFIX = 'filter_tenant_id'


class AggregateMultiTenancyIsolation(filters.BaseHostFilter):
    """Passes hosts open to the request's project."""

    # Aggregates and project do not change within a request.
    run_filter_once_per_request = True
    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        tenants = set()
        for key, values in utils.aggregate_metadata_get_by_host(host_state).items():
            if key.startswith(_PREFIX):
                tenants.update(values)
        if tenants and spec_obj.project_id not in tenants:
            LOG.debug('%s fails tenant id on aggregate', host_state)
            return False
        return True

    def filter_rows(self, view, spec_obj):
        # The answer depends on the host's aggregates only.
        return utils.per_aggregate_set(view, lambda state: self.host_passes(state, spec_obj))
