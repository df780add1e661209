"""Drop the (host, node) pairs a rescheduled build already failed on (``spec.retry``)."""
import logging

import numpy as np

from minisched.scheduler import filters

LOG = logging.getLogger(__name__)


def _tried(spec_obj):
    return {(node.host, node.hypervisor_hostname) for node in spec_obj.retry.hosts}


class RetryFilter(filters.BaseHostFilter):
    """Passes nodes not yet attempted for this build."""

    # Where a rebuild lands is not a question of earlier attempts.
    RUN_ON_REBUILD = False
    # Deprecated in Nova 20.0.0 (Train); 21.2.4 (Ussuri), its last release with it, logs this.
    DEPRECATION = ('The RetryFilter is deprecated since the 20.0.0 Train release. Since the '
                   '17.0.0 (Queens) release, the scheduler has provided alternate hosts for '
                   'rescheduling so the scheduler does not need to be called during a reschedule '
                   'which makes the RetryFilter useless.')

    def host_passes(self, host_state, spec_obj):
        if not spec_obj.retry:
            return True
        tried = _tried(spec_obj)
        passes = (host_state.host, host_state.nodename) not in tried
        if not passes:
            LOG.info('Host %(host)s fails. Previously tried hosts: %(hosts)s',
                     {'host': [host_state.host, host_state.nodename],
                      'hosts': [list(pair) for pair in tried]})
        return passes

    def is_noop(self, spec_obj):
        return not spec_obj.retry

    def filter_rows(self, view, spec_obj):
        if not spec_obj.retry:
            return np.ones(len(view), dtype=bool)
        tried = _tried(spec_obj)
        return np.fromiter(((state.host, state.nodename) not in tried
                            for state in view.states()), dtype=bool, count=len(view))
