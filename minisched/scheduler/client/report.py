"""Report client: how computes, the scheduler and ``minisched-manage`` talk to Placement.

As Nova's ``SchedulerReportClient``: a keystoneauth1 Adapter loaded from ``[placement]``
(``raise_exc=False``: every caller reads the status code), JSON bodies, the microversion of
each call the one Nova uses for it, and Placement's ``X-Openstack-Request-Id`` logged with
each failure. Calls that Nova wraps in ``safe_connect`` return None when Placement cannot be
reached or refuses the credentials (logged), and claims are retried on a resource provider
generation conflict as Nova's ``@retries`` does.

The compute-side use (a provider per compute node, its inventory, traits and aggregates)
is in :mod:`minisched.compute.provider_report`.
"""
import copy
import functools
import gc
import json
import logging
import random
import threading
import time

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading

from minisched import exception

try:  # not a dependency: used when the environment has it (twice as fast on big answers)
    import orjson
except ImportError:  # pragma: no cover - depends on the environment
    orjson = None

LOG = logging.getLogger(__name__)

#: Microversions, named as in Nova's report client.
SAME_SUBTREE_VERSION = '1.36'
CONSUMER_GENERATION_VERSION = '1.28'
ALLOW_RESERVED_EQUAL_TOTAL_INVENTORY_VERSION = '1.26'
POST_RPS_RETURNS_PAYLOAD_API_VERSION = '1.20'
AGGREGATE_GENERATION_VERSION = '1.19'
NESTED_PROVIDER_API_VERSION = '1.14'
GET_USAGES_VERSION = '1.9'
TRAITS_VERSION = '1.6'
#: Placement's error code for a resource provider or consumer generation conflict.
CONCURRENT_UPDATE = 'placement.concurrent_update'
INVENTORY_INUSE = 'placement.inventory.inuse'
GROUP = 'placement'

#: Per thread (green thread under eventlet): the seconds its calls to Placement took, summed.
_spent = threading.local()


def placement_seconds():
    """Seconds this thread has waited on Placement so far (every HTTP call of every report
    client, its answer read). The difference over a piece of work is Placement's share of
    it, as the placement bench reads it; two clock reads per call, nothing else."""
    return getattr(_spent, 'seconds', 0.0)


def load_adapter(conf):
    """The keystoneauth1 Adapter of ``[placement]``, as Nova's ``get_ksa_adapter``."""
    auth = ks_loading.load_auth_from_conf_options(conf, GROUP)
    session = ks_loading.load_session_from_conf_options(conf, GROUP, auth=auth)
    return ks_loading.load_adapter_from_conf_options(conf, GROUP, session=session, auth=auth,
                                                     min_version=None, max_version=None,
                                                     raise_exc=False)


def safe_connect(f):
    """None (logged) when Placement is unreachable or refuses the credentials."""
    @functools.wraps(f)
    def wrapper(self, *args, **kwargs):
        try:
            return f(self, *args, **kwargs)
        except ks_exc.EndpointNotFound:
            LOG.warning('The placement API endpoint was not found.')
            self._client = self._create_client()
        except ks_exc.MissingAuthPlugin:
            LOG.warning('No authentication information found for placement API.')
        except ks_exc.Unauthorized:
            LOG.warning('Placement service credentials do not work.')
        except ks_exc.DiscoveryFailure:
            LOG.warning('Discovering suitable URL for placement API failed.')
        except ks_exc.ConnectFailure:
            LOG.warning('Placement API service is not responding.')
    return wrapper


class Retry(Exception):
    def __init__(self, operation, reason):
        super().__init__(operation, reason)
        self.operation = operation
        self.reason = reason


def retries(f):
    """Run ``f`` up to four times while it raises :class:`Retry` (a random pause of up to
    2 s per earlier try between them); False when every try did."""
    @functools.wraps(f)
    def wrapper(self, *args, **kwargs):
        for attempt in range(4):
            # Nova's draw before each try, kept (the random state is the decisions' too);
            # the first is always 0, and time.sleep(0) gives the CPU away: milliseconds on
            # a busy machine, before every claim.
            pause = random.uniform(0, attempt * 2)
            if pause:
                time.sleep(pause)
            try:
                return f(self, *args, **kwargs)
            except Retry as exc:
                LOG.debug('Unable to %s because %s; retrying...', exc.operation, exc.reason)
        LOG.error('Failed scheduler client operation %s: out of retries', f.__name__)
        return False
    return wrapper


def request_id(response):
    return response.headers.get('x-openstack-request-id') if response is not None else None


def error_code(response):
    """Placement's error code of a failed response ('' when it has none)."""
    try:
        return response.json()['errors'][0].get('code', '')
    except (ValueError, KeyError, IndexError, TypeError):
        return ''


def decode_large(body):
    """A large JSON answer's bytes decoded, the garbage collector held off meanwhile.

    Placement's allocation candidates at 1,000 providers are some 500 kB, tens of thousands
    of new dicts and lists: each 700 allocations set off a young collection, and the older
    ones follow, walking every tracked object of the scheduler (its host states among
    them). The decoded tree has no cycles, so nothing is left for the collector to find.
    orjson when the environment has it, else the standard library (the same values: both
    decode floats exactly and objects as dicts; orjson refuses what is not strict JSON,
    which the standard library then decodes as it always did).
    """
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        if orjson is not None:
            try:
                return orjson.loads(body)
            except orjson.JSONDecodeError:
                pass
        return json.loads(body)
    finally:
        if enabled:
            gc.enable()


def _global_id(context):
    return getattr(context, 'global_id', None) if context is not None else None


class SchedulerReportClient:
    """Placement's REST API as minisched's services use it."""

    def __init__(self, conf, adapter=None):
        self.conf = conf
        self._adapter = adapter
        self._client = self._create_client()

    def _create_client(self):
        client = self._adapter or load_adapter(self.conf)
        # Every response in JSON, as Nova asks.
        client.additional_headers = {'accept': 'application/json'}
        return client

    # -- HTTP -------------------------------------------------------------------------------

    def _timed(self, method, url, **kwargs):
        start = time.perf_counter()
        try:
            return method(url, **kwargs)
        finally:
            _spent.seconds = getattr(_spent, 'seconds', 0.0) + time.perf_counter() - start

    def get(self, url, version=None, global_request_id=None):
        return self._timed(self._client.get, url, microversion=version,
                           global_request_id=global_request_id)

    def post(self, url, data, version=None, global_request_id=None):
        return self._timed(self._client.post, url, json=data, microversion=version,
                           global_request_id=global_request_id)

    def put(self, url, data, version=None, global_request_id=None):
        return self._timed(self._client.put, url, json=data, microversion=version,
                           global_request_id=global_request_id)

    def delete(self, url, version=None, global_request_id=None):
        return self._timed(self._client.delete, url, microversion=version,
                           global_request_id=global_request_id)

    @safe_connect
    def get_versions(self):
        """Placement's root document (``GET /``: its versions), None when unreachable."""
        resp = self.get('/')
        return resp.json() if resp else None

    # -- resource providers -------------------------------------------------------------------

    @safe_connect
    def get_providers(self, context, **query):
        """``GET /resource_providers`` with ``query`` (``name=``, ``member_of=`` ...)."""
        url = '/resource_providers'
        if query:
            url += '?' + '&'.join('%s=%s' % item for item in sorted(query.items()))
        resp = self.get(url, version=NESTED_PROVIDER_API_VERSION,
                        global_request_id=_global_id(context))
        if resp.status_code != 200:
            raise exception.ResourceProviderRetrievalFailed(uuid=url)
        return resp.json()['resource_providers']

    def get_provider(self, context, uuid):
        """The provider's record, or None when Placement has none."""
        resp = self.get('/resource_providers/%s' % uuid, version=NESTED_PROVIDER_API_VERSION,
                        global_request_id=_global_id(context))
        if resp.status_code == 200:
            return resp.json()
        if resp.status_code == 404:
            return None
        LOG.error('[%s] Failed to retrieve resource provider %s: %d %s',
                  request_id(resp), uuid, resp.status_code, resp.text)
        raise exception.ResourceProviderRetrievalFailed(uuid=uuid)

    def create_provider(self, context, uuid, name, parent_provider_uuid=None):
        """Create a provider; a concurrent creation of the same uuid returns that one."""
        payload = {'uuid': uuid, 'name': name}
        if parent_provider_uuid is not None:
            payload['parent_provider_uuid'] = parent_provider_uuid
        resp = self.post('/resource_providers', payload,
                         version=POST_RPS_RETURNS_PAYLOAD_API_VERSION,
                         global_request_id=_global_id(context))
        if resp:
            LOG.info('[%s] Created resource provider record via placement API for resource '
                     'provider with UUID %s and name %s.', request_id(resp), uuid, name)
            return resp.json()
        if resp.status_code == 409 and 'Conflicting resource provider name:' not in resp.text:
            LOG.info('[%s] Another thread already created a resource provider with the UUID '
                     '%s. Grabbing that record from the placement API.', request_id(resp), uuid)
            return self.get_provider(context, uuid)
        LOG.error('[%s] Failed to create resource provider record in placement API for UUID '
                  '%s. Got %d: %s.', request_id(resp), uuid, resp.status_code, resp.text)
        raise exception.ResourceProviderCreationFailed(name=name)

    def ensure_provider(self, context, uuid, name):
        """The provider ``uuid``'s record, created (as a root named ``name``) if missing."""
        return self.get_provider(context, uuid) or self.create_provider(context, uuid, name)

    @safe_connect
    def delete_provider(self, context, uuid):
        """Delete the provider; True when it was deleted or did not exist."""
        resp = self.delete('/resource_providers/%s' % uuid,
                           global_request_id=_global_id(context))
        if resp or resp.status_code == 404:
            return True
        LOG.error('[%s] Failed to delete resource provider %s: %d %s', request_id(resp), uuid,
                  resp.status_code, resp.text)
        return False

    # -- a provider's inventory, traits and aggregates ------------------------------------------

    def _get_part(self, context, uuid, part, version,
                  error=exception.ResourceProviderRetrievalFailed):
        resp = self.get('/resource_providers/%s/%s' % (uuid, part), version=version,
                        global_request_id=_global_id(context))
        if resp.status_code != 200:
            LOG.error('[%s] Failed to retrieve %s of resource provider %s: %d %s',
                      request_id(resp), part, uuid, resp.status_code, resp.text)
            raise error(uuid=uuid)
        body = resp.json()
        return body['resource_provider_generation'], body[part]

    def _put_part(self, context, uuid, part, generation, value, version):
        """PUT a provider's ``part``; its new generation. A generation conflict raises
        ResourceProviderUpdateConflict (the caller refreshes and tries again), removing
        inventory that allocations use InventoryInUse."""
        payload = {'resource_provider_generation': generation, part: value}
        resp = self.put('/resource_providers/%s/%s' % (uuid, part), payload, version=version,
                        global_request_id=_global_id(context))
        if resp.status_code == 200:
            return resp.json()['resource_provider_generation']
        LOG.error('[%s] Failed to update %s of resource provider %s: %d %s',
                  request_id(resp), part, uuid, resp.status_code, resp.text)
        if resp.status_code == 409:
            # As Nova: every 409 but inventory in use is a generation conflict (Placement
            # gives the traits one no error code).
            if error_code(resp) == INVENTORY_INUSE:
                raise exception.InventoryInUse(error=resp.text)
            raise exception.ResourceProviderUpdateConflict(uuid=uuid, generation=generation,
                                                           error=resp.text)
        raise exception.ResourceProviderUpdateFailed(url='/resource_providers/%s/%s' % (
            uuid, part), error=resp.text)

    def get_inventory(self, context, uuid):
        """``(generation, {resource class: inventory})``."""
        return self._get_part(context, uuid, 'inventories',
                              ALLOW_RESERVED_EQUAL_TOTAL_INVENTORY_VERSION)

    def set_inventory(self, context, uuid, generation, inventories):
        return self._put_part(context, uuid, 'inventories', generation, inventories,
                              ALLOW_RESERVED_EQUAL_TOTAL_INVENTORY_VERSION)

    def get_traits(self, context, uuid):
        """``(generation, [trait])``."""
        return self._get_part(context, uuid, 'traits', TRAITS_VERSION)

    def set_traits(self, context, uuid, generation, traits):
        self.ensure_traits(context, traits)
        return self._put_part(context, uuid, 'traits', generation, sorted(traits),
                              TRAITS_VERSION)

    def get_aggregates(self, context, uuid):
        """``(generation, [aggregate uuid])``; ResourceProviderAggregateRetrievalFailed
        when Placement does not give them (no such provider included), as Nova's."""
        return self._get_part(context, uuid, 'aggregates', AGGREGATE_GENERATION_VERSION,
                              error=exception.ResourceProviderAggregateRetrievalFailed)

    def set_aggregates(self, context, uuid, generation, aggregates):
        return self._put_part(context, uuid, 'aggregates', generation, sorted(aggregates),
                              AGGREGATE_GENERATION_VERSION)

    def ensure_traits(self, context, traits):
        """Create the custom traits among ``traits`` that Placement does not have yet."""
        custom = sorted(trait for trait in traits if trait.startswith('CUSTOM_'))
        if not custom:
            return
        resp = self.get('/traits?name=in:' + ','.join(custom), version=TRAITS_VERSION,
                        global_request_id=_global_id(context))
        if resp.status_code != 200:
            raise exception.TraitRetrievalFailed(error=resp.text)
        for trait in set(custom) - set(resp.json()['traits']):
            created = self.put('/traits/' + trait, None, version=TRAITS_VERSION,
                               global_request_id=_global_id(context))
            if created.status_code not in (201, 204):
                raise exception.TraitCreationFailed(name=trait, error=created.text)

    def get_provider_by_name(self, context, name):
        """The provider named ``name``; ResourceProviderNotFound when there is none."""
        found = self.get_providers(context, name=name)
        if not found:
            raise exception.ResourceProviderNotFound(name_or_uuid=name)
        return found[0]

    def aggregate_add_host(self, context, agg_uuid, host_name=None, rp_uuid=None):
        """Put the provider named ``host_name`` (or of uuid ``rp_uuid``) in aggregate
        ``agg_uuid``: the API's mirror of a host added to a host aggregate, and
        ``minisched-manage placement sync_aggregates``'. Its other aggregates are kept; a
        generation conflict is tried again, four tries in all, as Nova's.

        :raises: ResourceProviderNotFound (no provider of that name),
            ResourceProviderAggregateRetrievalFailed, ResourceProviderUpdateFailed,
            ResourceProviderUpdateConflict, keystoneauth1.exceptions.ClientException
        """
        if host_name is None and rp_uuid is None:
            raise ValueError('Either host_name or rp_uuid is required')
        self._change_aggregates(context, host_name, lambda aggs: aggs | {agg_uuid}, rp_uuid)

    def aggregate_remove_host(self, context, agg_uuid, host_name):
        self._change_aggregates(context, host_name, lambda aggs: aggs - {agg_uuid})

    def _change_aggregates(self, context, host_name, change, uuid=None):
        uuid = uuid or self.get_provider_by_name(context, host_name)['uuid']
        for attempt in range(1, 5):
            generation, aggregates = self.get_aggregates(context, uuid)
            wanted = change(set(aggregates))
            if wanted == set(aggregates):
                return
            try:
                self.set_aggregates(context, uuid, generation, wanted)
                return
            except exception.ResourceProviderUpdateConflict:
                if attempt == 4:
                    raise

    # -- allocation candidates and allocations -------------------------------------------------

    @safe_connect
    def get_allocation_candidates(self, context, resources):
        """``(allocation_requests, provider_summaries, version)`` for a ResourceRequest;
        ``(None, None, None)`` when Placement answered with an error."""
        version = SAME_SUBTREE_VERSION
        resp = self.get('/allocation_candidates?%s' % resources.to_querystring(),
                        version=version, global_request_id=_global_id(context))
        if resp.status_code == 200:
            data = decode_large(resp.content)  # the bytes: no text copy of 500 kB first
            return data['allocation_requests'], data['provider_summaries'], version
        LOG.error('Failed to retrieve allocation candidates from placement API for filters: '
                  '%s\nGot %d: %s.', resources, resp.status_code, resp.text)
        return None, None, None

    @safe_connect
    def get_allocs_for_consumer(self, context, consumer):
        """``{'allocations': {rp: {...}}, 'consumer_generation': g, ...}`` of a consumer."""
        resp = self.get('/allocations/%s' % consumer, version=CONSUMER_GENERATION_VERSION,
                        global_request_id=_global_id(context))
        if not resp:
            raise exception.ConsumerAllocationRetrievalFailed(consumer_uuid=consumer,
                                                              error=resp.text)
        return resp.json()

    @safe_connect
    @retries
    def claim_resources(self, context, consumer_uuid, alloc_request, project_id, user_id,
                        allocation_request_version, consumer_generation=None):
        """PUT the allocation request for a new consumer (or on top of its current
        allocations, for a move); True when Placement took it."""
        payload = copy.deepcopy(alloc_request)
        url = '/allocations/%s' % consumer_uuid
        current = self.get(url, version=CONSUMER_GENERATION_VERSION,
                           global_request_id=_global_id(context))
        if current.status_code == 200 and current.json()['allocations']:
            body = current.json()
            consumer_generation = payload.get('consumer_generation',
                                              body['consumer_generation'])
            payload = _move_operation_alloc_request(body['allocations'], payload)
        payload['project_id'] = project_id
        payload['user_id'] = user_id
        if _version_tuple(allocation_request_version) >= _version_tuple(
                CONSUMER_GENERATION_VERSION):
            payload['consumer_generation'] = consumer_generation
        resp = self.put(url, payload, version=allocation_request_version,
                        global_request_id=_global_id(context))
        if resp.status_code != 204:
            error = resp.json()['errors'][0]
            if error['code'] == CONCURRENT_UPDATE:
                if 'consumer generation conflict' in error['detail']:
                    raise exception.AllocationUpdateFailed(
                        consumer_uuid=consumer_uuid,
                        error='another process changed the consumer %s after the report '
                              'client read the consumer state during the claim '
                              % consumer_uuid)
                raise Retry('claim_resources', 'another process changed the resource '
                            'providers involved in our attempt to put allocations for '
                            'consumer %s' % consumer_uuid)
            LOG.warning('Unable to submit allocation for instance %s (%d %s)', consumer_uuid,
                        resp.status_code, resp.text)
        return resp.status_code == 204

    @safe_connect
    def put_allocations(self, context, consumer_uuid, payload):
        """PUT a full allocations body (with its consumer generation); True on success."""
        resp = self.put('/allocations/%s' % consumer_uuid, payload,
                        version=CONSUMER_GENERATION_VERSION,
                        global_request_id=_global_id(context))
        if resp.status_code == 204:
            return True
        if resp.status_code == 409 and error_code(resp) == CONCURRENT_UPDATE:
            raise exception.AllocationUpdateFailed(consumer_uuid=consumer_uuid,
                                                   error=resp.text)
        LOG.warning('Unable to submit allocation for instance %s (%d %s)', consumer_uuid,
                    resp.status_code, resp.text)
        return False

    @safe_connect
    def delete_allocation_for_instance(self, context, uuid, consumer_type='instance',
                                       force=False):
        """Give back a consumer's allocations; True when there were some. Without
        ``force``, read them and PUT none with the consumer generation read, so a
        concurrent change is not lost (AllocationDeleteFailed)."""
        url = '/allocations/%s' % uuid
        if force:
            resp = self.delete(url, global_request_id=_global_id(context))
            if resp:
                LOG.info('Deleted allocations for %s %s', consumer_type, uuid)
                return True
            if resp.status_code != 404:
                raise exception.AllocationDeleteFailed(consumer_uuid=uuid, error=resp.text)
            return False
        resp = self.get(url, version=CONSUMER_GENERATION_VERSION,
                        global_request_id=_global_id(context))
        if not resp:
            raise exception.AllocationDeleteFailed(consumer_uuid=uuid, error=resp.text)
        allocations = resp.json()
        if allocations['allocations'] == {}:
            LOG.debug('Cannot delete allocation for %s consumer in placement as consumer '
                      'does not exist', uuid)
            return False
        allocations['allocations'] = {}
        resp = self.put(url, allocations, version=CONSUMER_GENERATION_VERSION,
                        global_request_id=_global_id(context))
        if resp.status_code == 204:
            LOG.info('Deleted allocation for %s %s', consumer_type, uuid)
            return True
        LOG.warning('Unable to delete allocation for %s %s: (%d %s)', consumer_type, uuid,
                    resp.status_code, resp.text)
        raise exception.AllocationDeleteFailed(consumer_uuid=uuid, error=resp.text)

    @safe_connect
    def get_allocations_for_resource_provider(self, context, rp_uuid):
        """``{consumer uuid: {'resources': {...}}}`` on the provider."""
        resp = self.get('/resource_providers/%s/allocations' % rp_uuid,
                        global_request_id=_global_id(context))
        if not resp:
            raise exception.ResourceProviderAllocationRetrievalFailed(rp_uuid=rp_uuid,
                                                                      error=resp.text)
        return resp.json()['allocations']


def _version_tuple(version):
    return tuple(int(part) for part in version.split('.'))


def _move_operation_alloc_request(source_allocs, dest_alloc_req):
    """The allocation request of a move: the source's allocations kept, and the
    destination's providers that the source does not use added (as Nova's, which leaves a
    provider both use, such as a shared one, at the source's amounts)."""
    new_alloc_req = {'allocations': {rp_uuid: {'resources': alloc['resources']}
                                     for rp_uuid, alloc in source_allocs.items()}}
    for rp_uuid, alloc in dest_alloc_req['allocations'].items():
        new_alloc_req['allocations'].setdefault(rp_uuid, alloc)
    return new_alloc_req
