"""Request filters: what Nova 34's scheduler adds to a request before it asks Placement.

Each takes the context, the RequestSpec and the configuration, and narrows the request as
Nova 34's prefilters that make sense without Neutron, Cinder and Cyborg do, writing where
they write: the aggregates to be in (``requested_destination.aggregates``) or out of
(``forbidden_aggregates``), the traits the root provider must have or lack
(``root_required``, ``root_forbidden``). The resource request
(:mod:`minisched.scheduler.resource_request`) reads them from there.
"""
import logging

import os_traits

from minisched import exception
from minisched.objects import aggregate as aggregate_obj
from minisched.objects import request_spec as request_spec_obj
from minisched.scheduler import resource_request

LOG = logging.getLogger(__name__)

TENANT_METADATA_KEY = 'filter_tenant_id'
AZ_KEY = 'availability_zone'


def _destination(spec_obj):
    """The request's Destination, made when it has none."""
    if spec_obj.requested_destination is None:
        spec_obj.requested_destination = request_spec_obj.Destination()
    return spec_obj.requested_destination


def require_tenant_aggregate(ctxt, spec_obj, conf):
    """Projects named by aggregates' ``filter_tenant_id*`` go to those aggregates only."""
    if not conf.scheduler.limit_tenants_to_placement_aggregate:
        return False
    uuids = {agg.uuid for agg in _aggregates(ctxt) if any(
        key.startswith(TENANT_METADATA_KEY) and value == spec_obj.project_id
        for key, value in agg.metadata.items())}
    if uuids:
        _destination(spec_obj).require_aggregates(sorted(uuids))
    elif conf.scheduler.placement_aggregate_required_for_tenants:
        LOG.warning('Tenant %s has no available aggregates', spec_obj.project_id)
        raise exception.RequestFilterFailed(reason='No hosts available for tenant')
    return True


def map_az_to_placement_aggregate(ctxt, spec_obj, conf):
    """A requested availability zone: the hosts of the aggregates that make that zone."""
    zone = spec_obj.availability_zone if spec_obj.obj_attr_is_set(
        'availability_zone') else None
    if not zone:
        return False
    uuids = [agg.uuid for agg in _aggregates(ctxt) if agg.metadata.get(AZ_KEY) == zone]
    if uuids:
        _destination(spec_obj).require_aggregates(sorted(uuids))
    return True


def require_image_type_support(ctxt, spec_obj, conf):
    """The image's disk format as a ``COMPUTE_IMAGE_TYPE_*`` trait of the root provider."""
    if not conf.scheduler.query_placement_for_image_type_support:
        return False
    if spec_obj.obj_attr_is_set('is_bfv') and spec_obj.is_bfv:
        return False
    image = spec_obj.image if spec_obj.obj_attr_is_set('image') else None
    disk_format = image.disk_format if image is not None and 'disk_format' in image else None
    if not disk_format:
        return False
    trait = 'COMPUTE_IMAGE_TYPE_%s' % disk_format.upper()
    if not hasattr(os_traits, trait):
        LOG.error('Computed trait name %r is not valid; is os-traits up to date?', trait)
        return False
    spec_obj.root_required.add(trait)
    return True


def compute_status_filter(ctxt, spec_obj, conf):
    """Disabled computes' providers (``COMPUTE_STATUS_DISABLED``) are left out."""
    spec_obj.root_forbidden.add(os_traits.COMPUTE_STATUS_DISABLED)
    return True


def isolate_aggregates(ctxt, spec_obj, conf):
    """Aggregates requiring a trait the request does not require are left out."""
    if not conf.scheduler.enable_isolated_aggregate_filtering:
        return False
    required = resource_request.ResourceRequest.from_request_spec(
        spec_obj).all_required_traits
    wanted = {'trait:%s' % trait for trait in required}
    isolated = {agg.uuid for agg in _aggregates(ctxt) if any(
        key.startswith('trait:') and value == 'required' and key not in wanted
        for key, value in agg.metadata.items())}
    if isolated:
        _destination(spec_obj).append_forbidden_aggregates(isolated)
    return True


ALL_REQUEST_FILTERS = [
    require_tenant_aggregate,
    map_az_to_placement_aggregate,
    require_image_type_support,
    compute_status_filter,
    isolate_aggregates,
]


def process_reqspec(ctxt, spec_obj, conf):
    """Run every request filter; RequestFilterFailed when one refuses the request."""
    for request_filter in ALL_REQUEST_FILTERS:
        request_filter(ctxt, spec_obj, conf)


def _aggregates(ctxt):
    return aggregate_obj.AggregateList.get_all(ctxt)
