"""The scheduler's Placement path (Nova 34): allocation candidates before filtering, claims
after weighing.

:func:`get_allocation_candidates` runs in the manager, as Nova's ``select_destinations``
does: the request filters and the resource request of the RequestSpec, ``GET
/allocation_candidates`` (and, for a dedicated-CPU request, the same query with VCPU in
place of PCPU, for hosts that report no PCPU yet), NoValidHost when none comes back.
:class:`Claims` is what the FilterScheduler does with the answer: only the candidate
providers' hosts are filtered and weighed, each instance's host is the first of the weighed
ones whose allocation request Placement accepts (``PUT /allocations/{instance}``), and the
alternates carry their own allocation requests. A request that cannot place every instance
gives back what it claimed.
"""
import collections
import logging

from minisched import exception
from minisched.scheduler import request_filter
from minisched.scheduler import resource_request

LOG = logging.getLogger(__name__)


def get_allocation_candidates(ctxt, spec_obj, client, conf):
    """``(alloc_reqs_by_rp_uuid, provider_summaries, allocation_request_version)``."""
    try:
        request_filter.process_reqspec(ctxt, spec_obj, conf)
    except exception.RequestFilterFailed as exc:
        raise exception.NoValidHost(reason=exc.format_message())
    request = resource_request.ResourceRequest.from_request_spec(
        spec_obj, limit=conf.scheduler.max_placement_results)
    answer = client.get_allocation_candidates(ctxt, request)
    if answer is None:
        # safe_connect: Placement could not be reached.
        raise exception.NoValidHost(reason='The Placement service could not be reached.')
    alloc_reqs, provider_summaries, version = answer
    # The decoded answer is this request's own: used as it is, copied only to be extended.
    alloc_reqs = alloc_reqs if alloc_reqs is not None else []
    provider_summaries = provider_summaries if provider_summaries is not None else {}
    if request.cpu_pinning_requested:
        alloc_reqs, provider_summaries = list(alloc_reqs), dict(provider_summaries)
        # Hosts not reporting PCPU yet (no cpu_dedicated_set) may still pin: asked with VCPU.
        LOG.debug('Requesting fallback allocation candidates with VCPU instead of PCPU')
        fallback = resource_request.ResourceRequest.from_request_spec(
            spec_obj, limit=conf.scheduler.max_placement_results,
            enable_pinning_translate=False)
        answer = client.get_allocation_candidates(ctxt, fallback)
        if answer and answer[0] is not None:
            alloc_reqs.extend(answer[0])
            provider_summaries.update(answer[1])
            version = version or answer[2]
    if not alloc_reqs:
        LOG.info('Got no allocation candidates from the Placement API. This could be due to '
                 'insufficient resources or a temporary occurrence as compute nodes start up.')
        raise exception.NoValidHost(reason='Placement has no allocation candidates for the '
                                           'request (%s).' % request)
    by_rp_uuid = collections.defaultdict(list)
    for alloc_req in alloc_reqs:
        for rp_uuid in alloc_req['allocations']:
            by_rp_uuid[rp_uuid].append(alloc_req)
    return by_rp_uuid, provider_summaries, version


class Candidates:
    """One request's allocation candidates per compute node uuid, as its filters narrow
    them (NUMATopologyFilter, PciPassthroughFilter: Nova keeps them on its host states).

    A host's list is copied from Placement's answer when first asked for, so only the hosts
    filtered cost a copy; the candidates themselves are never changed, only dropped.
    """

    def __init__(self, alloc_reqs_by_rp_uuid):
        self._offered = alloc_reqs_by_rp_uuid
        self._left = {}

    def get(self, uuid):
        left = self._left.get(uuid)
        if left is None:
            left = self._left[uuid] = list(self._offered.get(uuid, ()))
        return left

    def set(self, uuid, candidates):
        self._left[uuid] = candidates


class Claims:
    """One request's candidates from Placement and the claims made for its instances."""

    def __init__(self, client, alloc_reqs_by_rp_uuid, provider_summaries, version):
        self.client = client
        self.candidates = Candidates(alloc_reqs_by_rp_uuid)
        self.provider_uuids = set(provider_summaries)
        self.version = version
        self.claimed = []  # instance uuids whose allocations this request made

    def request_for(self, host_state):
        """The first of the host's allocation requests the filters left, or None."""
        requests = self.candidates.get(host_state.uuid)
        return requests[0] if requests else None

    def claim(self, context, spec_obj, instance_uuid, states):
        """Claim on the first of ``states`` (weighed order) that Placement accepts; returns
        its position, or None when none did."""
        project_id = spec_obj.project_id or context.project_id
        user_id = spec_obj.user_id or context.user_id
        for position, host_state in enumerate(states):
            alloc_req = self.request_for(host_state)
            if alloc_req is None:
                LOG.debug("A host state with uuid = '%s' that did not have a matching "
                          "allocation_request was encountered while scheduling. This host "
                          "was skipped.", host_state.uuid)
                continue
            if self.client.claim_resources(context, instance_uuid, alloc_req, project_id,
                                           user_id, self.version):
                self.claimed.append(instance_uuid)
                map_request_groups(spec_obj, alloc_req)
                return position
        LOG.debug('Unable to successfully claim against any host.')
        return None

    def give_back(self, context):
        """Delete the allocations this request made (it failed as a whole)."""
        for instance_uuid in self.claimed:
            try:
                self.client.delete_allocation_for_instance(context, instance_uuid,
                                                           force=True)
            except exception.AllocationDeleteFailed:
                LOG.warning('Could not give back the allocations of %s', instance_uuid)
        self.claimed = []


def map_request_groups(spec_obj, alloc_req):
    """Point the request's groups (``requested_resources``) at the providers of the claimed
    allocation request, as Nova does before consuming from the host: the host state's
    PCI bookkeeping takes the devices of those providers."""
    groups = spec_obj.requested_resources if 'requested_resources' in spec_obj else None
    mappings = alloc_req.get('mappings') or {}
    for group in groups or ():
        if group.requester_id in mappings:
            group.provider_uuids = mappings[group.requester_id]
