"""PCI device pools of one host: whether a host can serve PCI requests, and consuming them.

A host's assignable devices are summarised as pools of interchangeable devices: same
``vendor_id``, ``product_id``, ``numa_node`` and ``dev_type``, same device_spec tags, and
the same PCI ``address`` (a VF's parent PF address, so the VFs of one PF share a pool). A
pool is a dict of those keys plus ``count`` (and, on the compute, ``devices``).

Both sides use this class, as in Nova:

* the scheduler builds it from a node's ``PciDevicePoolList`` (counts only), asks
  ``support_requests`` in the filter, and ``apply_requests`` on the chosen host so that
  the next instance of the same request sees the devices gone;
* the compute builds it empty with its ``[pci] device_spec`` filter, ``add_device``\\ s
  the available devices, and ``consume_requests`` hands out real devices at claim time
  (taking a PF drops its VFs from the pools and taking a VF drops its PF).

A request (``InstancePCIRequest``) is served from the pools that match one of its specs
(case-insensitive tag matching), pass its NUMA affinity policy when the instance has NUMA
cells, and are not PFs, vDPA or remote-managed devices unless the spec asks for them.

Only attributes Nova's objects also have are read, so Nova's ``InstancePCIRequest``,
``PciDevicePool(List)``, ``PciDevice`` and ``NUMACell``/``InstanceNUMACell`` objects work
too. Placement: the ``rp_uuid`` pool/request bookkeeping of Nova's PCI-in-Placement is
kept (a request's ``spec[0]['rp_uuids']``, ``provider_mapping``): the scheduler passes each
allocation candidate's mappings, but minisched's computes report no ``rp_uuid`` per pool and
its resource request has no PCI groups, so in practice every request may use any matching
pool.
"""
import collections
import copy
import logging

from oslo_utils import strutils

from minisched import exception
from minisched.objects import fields
from minisched.objects import instance_pci_requests
from minisched.objects import pci_device_pool
from minisched.pci.request import PCI_REMOTE_MANAGED_TAG
from minisched.pci import utils
from minisched.pci import whitelist

LOG = logging.getLogger(__name__)

_POLICY = fields.PCINUMAAffinityPolicy
_TYPE = fields.PciDeviceType
_NEUTRON_PORT = instance_pci_requests.InstancePCIRequest.NEUTRON_PORT


#: The filter of stats built without one: admits no device (nothing is added to them).
_NO_DEVICE_SPEC = whitelist.Whitelist()


def _count(pools):
    return sum(pool['count'] for pool in pools)


def _pools_on_nodes(pools, node_ids):
    return [pool for pool in pools
            if any(utils.pci_device_prop_match(pool, [{'numa_node': node}])
                   for node in node_ids)]


def _only_if_requested(pools, request, wanted):
    """Drop the pools for which ``wanted(spec_or_pool)`` holds unless a spec of
    ``request`` wants it too."""
    if any(wanted(spec) for spec in request.spec):
        return pools
    return [pool for pool in pools if not wanted(pool)]


def pool_identity(pool):
    """What tells one pool from another: every key but its ``count`` and ``devices``."""
    return tuple(sorted((key, repr(value)) for key, value in pool.items()
                        if key not in ('count', 'devices')))


class PciDeviceStats:
    """The PCI device pools of one host.

    :param numa_topology: the host's NUMATopology (its ``cells`` with ``id`` and
        ``socket``), or None; read only for the ``socket`` NUMA affinity policy.
    :param stats: a PciDevicePoolList to start from (the scheduler's view), or None.
    :param dev_filter: the ``Whitelist`` of ``[pci] device_spec`` deciding which devices
        ``add_device`` takes and with which tags. Nova builds it from the global config
        when omitted; here the default is an empty filter, which takes no device, so the
        compute must pass ``whitelist.Whitelist(conf.pci.device_spec)``.
    """

    pool_keys = ['product_id', 'vendor_id', 'numa_node', 'dev_type']
    # Keys left out of pool building and spec matching: Placement matches resource
    # classes and traits, and the rp_uuid(s) keys are matched separately. Nova builds
    # both lists as one list object, so both hold all four names.
    ignored_spec_tags = ignored_pool_tags = ['resource_class', 'traits', 'rp_uuids', 'rp_uuid']

    def __init__(self, numa_topology, stats=None, dev_filter=None):
        self.numa_topology = numa_topology
        self.pools = [pool.to_dict() for pool in stats] if stats else []
        self.pools.sort(key=len)
        #: The pools in the order reported (the list only: counts change in place), where
        #: ``give_back`` puts back a pool that ``apply_requests`` dropped.
        self._reported = list(self.pools)
        # One shared empty filter for the scheduler's many stats built from pool lists.
        self.dev_filter = dev_filter or _NO_DEVICE_SPEC

    # -- pools from devices (compute side) --

    @staticmethod
    def _equal_properties(dev, entry, matching_keys):
        return all(dev.get(key) == entry.get(key) for key in matching_keys)

    def _find_pool(self, dev_pool):
        """The first pool with exactly the keys and values of ``dev_pool``."""
        for pool in self.pools:
            keys = {key: value for key, value in pool.items()
                    if key not in ('count', 'devices') and key not in self.ignored_pool_tags}
            if len(keys) == len(dev_pool) and self._equal_properties(dev_pool, keys,
                                                                     list(dev_pool)):
                return pool
        return None

    @staticmethod
    def _ensure_remote_managed_tag(dev, pool):
        # Network functions are local ('false') unless the spec tagged them: the default
        # is set here so that pools written before the tag existed compare equal.
        if dev.dev_type not in (_TYPE.SRIOV_VF, _TYPE.SRIOV_PF, _TYPE.VDPA):
            return
        if pool.get(PCI_REMOTE_MANAGED_TAG) is None:
            pool[PCI_REMOTE_MANAGED_TAG] = 'false'

    def _create_pool_keys_from_dev(self, dev):
        """The keys of the pool ``dev`` belongs to, or None when no device_spec entry
        admits it."""
        devspec = self.dev_filter.get_devspec(dev)
        if not devspec:
            return None
        pool = {key: getattr(dev, key) for key in self.pool_keys}
        tags = devspec.get_tags()
        if tags:
            pool.update({key: value for key, value in tags.items()
                         if key not in self.ignored_pool_tags})
        # One pool per device or per PF: Placement allocates from one PF at a time.
        pool['address'] = dev.parent_addr or dev.address
        # Found by the driver rather than the spec, but matched like a tag (ports).
        if dev.extra_info.get('parent_ifname'):
            pool['parent_ifname'] = dev.extra_info['parent_ifname']
        self._ensure_remote_managed_tag(dev, pool)
        return pool

    def add_device(self, dev):
        """Add the PciDevice ``dev`` to its pool (created if needed); a device no
        device_spec entry admits is ignored."""
        dev_pool = self._create_pool_keys_from_dev(dev)
        if not dev_pool:
            return
        pool = self._find_pool(dev_pool)
        if not pool:
            pool = dict(dev_pool, count=0, devices=[])
            self.pools.append(pool)
            self.pools.sort(key=len)
        pool['count'] += 1
        pool['devices'].append(dev)

    def remove_device(self, dev):
        """Take ``dev`` out of its pool; raises PciDevicePoolEmpty without such a pool."""
        dev_pool = self._create_pool_keys_from_dev(dev)
        if not dev_pool:
            return
        pool = self._find_pool(dev_pool)
        if not pool:
            raise exception.PciDevicePoolEmpty(compute_node_id=dev.compute_node_id,
                                               address=dev.address)
        pool['devices'].remove(dev)
        self._decrease_pool_count(self.pools, pool)

    def update_device(self, dev):
        """Move a pooled device whose type changed (e.g. a PF's VFs were enabled) to the
        pool of its new type."""
        for pool in self.pools:
            for device in pool['devices']:
                if device.address != dev.address:
                    continue
                if dev.dev_type == pool['dev_type']:
                    return
                pool['devices'].remove(device)
                self._decrease_pool_count(self.pools, pool)
                self.add_device(dev)
                return

    def free_device(self, dev, instance=None):
        """Free a claimed or allocated device and pool it again with every device its
        release unblocks (a PF's VFs, a VF's PF); returns those devices.

        minisched's helper, not part of Nova's PciDeviceStats: Nova's compute tracker does
        these two steps (``PciDevice.free`` then ``add_device`` of each freed device).
        """
        freed = dev.free(instance)
        for freed_dev in freed:
            self.add_device(freed_dev)
        return freed

    def get_free_devs(self):
        return [dev for pool in self.pools for dev in pool['devices']]

    @staticmethod
    def _decrease_pool_count(pool_list, pool, count=1):
        """Take up to ``count`` devices from ``pool``, dropping it from ``pool_list``
        when that empties it; returns how many are still to take."""
        if pool['count'] > count:
            pool['count'] -= count
            return 0
        # list.remove compares by value, as in Nova: an equal earlier pool goes instead.
        pool_list.remove(pool)
        return count - pool['count']

    # -- consuming real devices (compute side) --

    def _allocate_devs(self, pool, num, request_id):
        allocated = []
        for _ in range(num):
            pci_dev = pool['devices'].pop()
            self._handle_device_dependents(pci_dev)
            pci_dev.request_id = request_id
            allocated.append(pci_dev)
        return allocated

    def _handle_device_dependents(self, pci_dev):
        """Drop from the pools what taking ``pci_dev`` makes unusable: a PF's VFs, or a
        VF's (or vDPA device's) parent PF, if still pooled."""
        if pci_dev.dev_type == _TYPE.SRIOV_PF:
            if pci_dev.child_devices:
                free_devs = self.get_free_devs()
                for vf in pci_dev.child_devices:
                    if vf in free_devs:
                        self.remove_device(vf)
        elif pci_dev.dev_type in (_TYPE.SRIOV_VF, _TYPE.VDPA):
            try:
                parent = pci_dev.parent_device
            except exception.PciDeviceNotFound:
                return
            if parent in self.get_free_devs():
                self.remove_device(parent)

    def consume_requests(self, pci_requests, numa_cells=None):
        """Take devices for ``pci_requests`` from the pools and return them.

        Each returned PciDevice has its ``request_id`` set; claiming it is the caller's
        job. The consumed pools stay listed (possibly with a count of 0).

        :param pci_requests: InstancePCIRequest objects (``InstancePCIRequests.requests``).
        :param numa_cells: the instance's InstanceNUMACells (``id`` = host cell id) for
            NUMA affinity, or None.
        :raises PciDeviceRequestFailed: a request cannot be met (the devices taken for
            the earlier requests are put back first).
        """
        allocated = []
        for request in pci_requests:
            rp_uuids = self._get_rp_uuids_for_request(request=request, provider_mapping=None)
            pools = self._filter_pools(self.pools, request, numa_cells, rp_uuids=rp_uuids)
            if not pools:
                LOG.error('Failed to allocate PCI devices for instance; returning the '
                          'devices already taken to their pools. The scheduler should '
                          'have prevented this.')
                while allocated:
                    self.add_device(allocated.pop())
                raise exception.PciDeviceRequestFailed(requests=pci_requests)
            if rp_uuids:
                if not self._assert_one_pool_per_rp_uuid(pools):
                    raise exception.PciDeviceRequestFailed(requests=pci_requests)
                allocated += self._consume_per_rp(pools, request, rp_uuids)
            else:
                allocated += self._consume_in_order(pools, request)
        return allocated

    def _consume_in_order(self, pools, request):
        # Without a Placement allocation any matching pool will do, in filter order.
        allocated = []
        count = request.count
        for pool in pools:
            num = min(count, pool['count'])
            count -= num
            pool['count'] -= num
            allocated += self._allocate_devs(pool, num, request.request_id)
            if count == 0:
                break
        return allocated

    def _consume_per_rp(self, pools, request, rp_uuids):
        # With one, each pool gives what Placement allocated from its provider.
        allocated = []
        wanted = collections.Counter(rp_uuids)
        for pool in pools:
            num = wanted[pool['rp_uuid']]
            pool['count'] -= num
            allocated += self._allocate_devs(pool, num, request.request_id)
            wanted.pop(pool['rp_uuid'], None)
        return allocated

    # -- pool filtering --

    def _filter_pools_for_spec(self, pools, request):
        """The pools matching one of the request's specs (ignored keys left out)."""
        specs = [{key: value for key, value in spec.items()
                  if key not in self.ignored_spec_tags} for spec in request.spec]
        return [pool for pool in pools if utils.pci_device_prop_match(pool, specs)]

    def _filter_pools_for_numa_cells(self, pools, request, numa_cells):
        """The pools suiting the request's NUMA affinity policy (``legacy`` when unset).

        The policies are tried from the strictest: devices on the instance's nodes are
        used whenever there are enough of them, whatever the policy. Short of that,
        ``required`` gets only those (too few), ``socket`` those on the instance's
        sockets, ``legacy`` adds devices reporting no node, and ``preferred`` takes every
        pool, those on the instance's nodes (or none) first.
        """
        if not numa_cells:
            return pools
        policy = _POLICY.LEGACY
        if 'numa_policy' in request:
            policy = request.numa_policy or policy
        cell_ids = [cell.id for cell in numa_cells]

        on_cells = _pools_on_nodes(pools, cell_ids)
        if policy == _POLICY.REQUIRED or _count(on_cells) >= request.count:
            return on_cells
        if policy == _POLICY.SOCKET:
            # Not simply looser than legacy: a device on no node fails it.
            return self._filter_pools_for_socket_affinity(pools, numa_cells)
        # Some hosts report no NUMA node for their devices: legacy accepts those.
        cell_ids.append(None)
        on_cells_or_none = _pools_on_nodes(pools, cell_ids)
        if policy == _POLICY.LEGACY or _count(on_cells_or_none) >= request.count:
            return on_cells_or_none
        return sorted(pools, key=lambda pool: pool.get('numa_node') not in cell_ids)

    def _filter_pools_for_socket_affinity(self, pools, numa_cells):
        """The pools on a host NUMA node sharing a socket with one of the instance's."""
        host_cells = self.numa_topology.cells
        # Without socket information (several sockets per node are not supported)
        # nothing qualifies.
        if any(cell.socket is None for cell in host_cells):
            LOG.debug('No socket information in host NUMA cell(s).')
            return []
        guest_ids = {cell.id for cell in numa_cells}
        sockets = {cell.socket for cell in host_cells if cell.id in guest_ids}
        allowed = {cell.id for cell in host_cells if cell.socket in sockets}
        return _pools_on_nodes(pools, allowed)

    @staticmethod
    def _filter_pools_for_unrequested_pfs(pools, request):
        """Without a spec asking for PFs, no PF pool (a PF may share a VF's IDs)."""
        return _only_if_requested(pools, request,
                                  lambda item: item.get('dev_type') == _TYPE.SRIOV_PF)

    @staticmethod
    def _filter_pools_for_unrequested_vdpa_devices(pools, request):
        """Without a spec asking for vDPA devices, no vDPA pool (they need care)."""
        return _only_if_requested(pools, request,
                                  lambda item: item.get('dev_type') == _TYPE.VDPA)

    @staticmethod
    def _filter_pools_for_unrequested_remote_managed_devices(pools, request):
        """Without a spec asking for remote-managed devices, none (they suit neither
        legacy SR-IOV nor hardware offload)."""
        return _only_if_requested(
            pools, request,
            lambda item: strutils.bool_from_string(item.get(PCI_REMOTE_MANAGED_TAG)))

    @staticmethod
    def _filter_pools_based_on_placement_allocation(pools, request, rp_uuids):
        """With a Placement allocation, only the pools of the allocated providers that
        still hold what was allocated from them; without one, every pool."""
        if not rp_uuids:
            return pools
        wanted = collections.Counter(rp_uuids)
        # A pool without rp_uuid (devices not reported to Placement) cannot be it.
        return [pool for pool in pools
                if pool.get('rp_uuid') is not None and pool['rp_uuid'] in wanted
                and pool['count'] >= wanted[pool['rp_uuid']]]

    @staticmethod
    def _filter_pools_for_live_migratable_devices(pools, request):
        """When every spec says ``live_migratable`` 'true' (or every one 'false'), only
        the pools tagged so; otherwise every pool."""
        for wanted in ('true', 'false'):
            if all(spec.get('live_migratable') == wanted for spec in request.spec):
                return [pool for pool in pools if pool.get('live_migratable')
                        and pool['live_migratable'] == wanted]
        return pools

    def pool_serves(self, pool, request):
        """``(matches, usable)`` of one pool for ``request``: whether the spec stage of
        :meth:`_filter_pools` keeps it, and whether every stage that looks at pools one by
        one does (all but the NUMA and Placement stages). The scheduler's column-wise check
        asks it once per pool kind."""
        pools = self._filter_pools_for_spec([pool], request)
        matches = bool(pools)
        for stage in (self._filter_pools_for_unrequested_pfs,
                      self._filter_pools_for_unrequested_vdpa_devices,
                      self._filter_pools_for_unrequested_remote_managed_devices,
                      self._filter_pools_for_live_migratable_devices):
            pools = stage(pools, request)
        return matches, bool(pools)

    def _filter_pools(self, pools, request, numa_cells, rp_uuids):
        """The pools that can serve ``request``, in the order to use them, or None when
        they hold fewer than ``request.count`` devices."""
        stages = (
            ('mismatched PCI attribute(s)',
             lambda p: self._filter_pools_for_spec(p, request), True),
            ('the wrong NUMA node(s)',
             lambda p: self._filter_pools_for_numa_cells(p, request, numa_cells), True),
            ('PFs not requested',
             lambda p: self._filter_pools_for_unrequested_pfs(p, request), True),
            ('VDPA devices not requested',
             lambda p: self._filter_pools_for_unrequested_vdpa_devices(p, request), False),
            ('remote-managed devices not requested',
             lambda p: self._filter_pools_for_unrequested_remote_managed_devices(p, request),
             False),
            ('not part of the placement allocation',
             lambda p: self._filter_pools_based_on_placement_allocation(p, request,
                                                                        rp_uuids), False),
            ('not live migratable as requested',
             lambda p: self._filter_pools_for_live_migratable_devices(p, request), True),
        )
        available = _count(pools)
        for reason, stage, check_count in stages:
            pools = stage(pools)
            left = _count(pools)
            if left < available:
                LOG.debug('Dropped %d device(s): %s', available - left, reason)
            available = left
            if check_count and available < request.count:
                LOG.debug('Not enough PCI devices left to satisfy request')
                return None
        return pools

    # -- scheduler side --

    def support_requests(self, requests, provider_mapping, numa_cells=None):
        """True when this host could serve all of ``requests`` (nothing is consumed).

        :param requests: InstancePCIRequest objects.
        :param provider_mapping: ``{request group id: [rp uuid]}`` from a Placement
            allocation, or None (then each request's own ``rp_uuids``, if any, count).
        :param numa_cells: the instance's InstanceNUMACells, or None.
        """
        try:
            self._trial_copy().apply_requests(requests, provider_mapping, numa_cells)
        except exception.PciDeviceRequestFailed:
            return False
        return True

    def _trial_copy(self):
        # What apply_requests changes (the pool list and the pools' counts) is copied;
        # the devices, untouched by it, are shared. Same outcome as Nova's deepcopy of
        # the whole object, without copying every device.
        trial = copy.copy(self)
        trial.pools = [dict(pool) for pool in self.pools]
        return trial

    def _apply_request(self, pools, request, rp_uuids, numa_cells=None):
        """Take ``request``'s devices off the counts of ``pools``; False if it cannot."""
        filtered = self._filter_pools(pools, request, numa_cells, rp_uuids)
        # Nova's test, kept: an empty list also fails (a count-0 request, no pool).
        if not filtered:
            return False
        if not rp_uuids:
            count = request.count
            for pool in filtered:
                count = self._decrease_pool_count(pools, pool, count)
                if not count:
                    break
            return True
        if not self._assert_one_pool_per_rp_uuid(pools):
            return False
        wanted = collections.Counter(rp_uuids)
        for pool in filtered:
            pool['count'] -= wanted[pool['rp_uuid']]
            wanted.pop(pool['rp_uuid'], None)
            if pool['count'] == 0:
                pools.remove(pool)
        return True

    def _get_rp_uuids_for_request(self, provider_mapping, request):
        """The providers the request's devices were allocated from, one entry per
        device; empty when there is no Placement allocation (any pool will do)."""
        if request.source == _NEUTRON_PORT:
            return []
        if not provider_mapping:
            # Stored on the request by the scheduler, comma separated (specs are strings).
            rp_uuids = request.spec[0].get('rp_uuids')
            return rp_uuids.split(',') if rp_uuids else []
        # Request groups are named '<request_id>-<index>', one provider each.
        return [rps[0] for group_id, rps in provider_mapping.items()
                if group_id.startswith(request.request_id)]

    def apply_requests(self, requests, provider_mapping, numa_cells=None):
        """Consume ``requests`` from the pool counts (the scheduler's bookkeeping for the
        next instance of a multi-instance request).

        Arguments as for ``support_requests``. A failed request leaves the requests
        before it applied.

        :raises PciDeviceRequestFailed: a request cannot be met.
        """
        for request in requests:
            rp_uuids = self._get_rp_uuids_for_request(provider_mapping, request)
            if not self._apply_request(self.pools, request, rp_uuids, numa_cells):
                raise exception.PciDeviceRequestFailed(requests=requests)

    def give_back(self, pool, count):
        """Return ``count`` devices that ``apply_requests`` took from ``pool`` (a copy
        of the pool as it was then; ``count`` is 0 for a pool already empty that the
        request reached).

        A pool the request emptied, or reached empty, was dropped from the list: it goes
        back to its place in the reported order, which is the order Nova's next request
        starts from (Nova builds the pools from the compute node's record for every
        request).
        """
        identity = pool_identity(pool)
        for current in self.pools:
            if pool_identity(current) == identity:
                current['count'] += count
                return
        reported = {pool_identity(each): rank for rank, each in enumerate(self._reported)}
        unknown = len(reported)  # a pool not reported (added since) goes last
        rank = reported.get(identity, unknown)
        position = next((index for index, current in enumerate(self.pools)
                         if reported.get(pool_identity(current), unknown) > rank),
                        len(self.pools))
        self.pools.insert(position, dict(pool, count=count))

    # -- views --

    def __iter__(self):
        """Copies of the pools without their devices."""
        return iter([{key: copy.deepcopy(value) for key, value in pool.items()
                      if key != 'devices'} for pool in self.pools])

    def clear(self):
        self.pools = []

    def __eq__(self, other):
        other_pools = getattr(other, 'pools', None)
        if not isinstance(other_pools, list):
            return NotImplemented
        return self.pools == other_pools

    __hash__ = None

    def to_device_pools_obj(self):
        """The pools as a PciDevicePoolList (what the compute reports)."""
        return pci_device_pool.from_pci_stats(list(self))

    def has_remote_managed_device_pools(self):
        """True when some pool (free or not, any NUMA node) holds remote-managed
        devices."""
        probe = instance_pci_requests.InstancePCIRequest(
            count=0, spec=[{PCI_REMOTE_MANAGED_TAG: 'True'}])
        return bool(self._filter_pools_for_spec(self.pools, probe))

    def populate_pools_metadata_from_assigned_devices(self):
        """Set each pool's ``rp_uuid`` from its devices' ``extra_info['rp_uuid']``
        (compute side only: the scheduler does not know the devices).

        :raises ValueError: a pool's devices belong to different providers.
        """
        for pool in self.pools:
            rps = {dev.extra_info.get('rp_uuid') for dev in pool['devices']
                   if 'rp_uuid' in dev.extra_info}
            if len(rps) >= 2:
                raise ValueError('We have a pool %s connected to more than one RPs %s in '
                                 'placement via devs %s' % (pool, rps, pool['devices']))
            if rps:
                pool['rp_uuid'] = next(iter(rps))

    @staticmethod
    def _assert_one_pool_per_rp_uuid(pools):
        """True unless two pools claim the same provider (which should not happen)."""
        by_rp = collections.defaultdict(list)
        for pool in pools:
            if 'rp_uuid' in pool:
                by_rp[pool['rp_uuid']].append(pool)
        split = {rp: rp_pools for rp, rp_pools in by_rp.items() if len(rp_pools) > 1}
        if split:
            LOG.warning('PCI devices of one resource provider are split across pools, '
                        'which the allocation logic does not expect: %s', split)
        return not split
