"""A compute node's resource provider in Placement, kept as Nova's resource tracker keeps it.

One root provider per compute node, named after its hypervisor hostname and with its uuid.
On every refresh of the node (``update_available_resource``, at start-up and then
periodically) the driver sets the provider's inventory (``update_provider_tree``), the
traits are those the provider has with the driver's capability traits added or removed,
``COMPUTE_NODE`` and ``OWNER_NOVA`` always, and ``COMPUTE_STATUS_DISABLED`` while the
compute service is disabled (also set at once when the service is disabled or enabled:
:meth:`ProviderReport.update_compute_provider_status`); only what differs from the provider
as last read or written is sent. A provider generation conflict (another writer changed
the provider) drops the cached provider, reads it again and tries again, four times in all,
as Nova's ``_update_to_placement``. A compute that starts reads its providers from
Placement, so what a previous run (or an operator) left there is corrected, not duplicated.
Aggregates are
Placement's (mirrored by ``minisched-manage aggregate add_host``): read, never written here.

When Placement cannot be reached, the failure is logged and the provider forgotten: the
next refresh tries again from what Placement then has.
"""
import logging

from keystoneauth1 import exceptions as ks_exc
import os_traits

from minisched.compute import provider_tree as provider_tree_mod
from minisched import exception
from minisched.objects import service as service_obj
from minisched.scheduler.client import report

LOG = logging.getLogger(__name__)

#: Tries of one update when another writer bumps the provider's generation (Nova's 4).
ATTEMPTS = 4
#: Failures that leave the provider to the next refresh (Placement's answers, or none).
PLACEMENT_ERRORS = (ks_exc.ClientException, exception.ResourceProviderRetrievalFailed,
                     exception.ResourceProviderCreationFailed,
                     exception.ResourceProviderUpdateFailed, exception.InventoryInUse,
                     exception.TraitRetrievalFailed, exception.TraitCreationFailed)


class ProviderReport:
    """Keeps the providers of one compute host's nodes in Placement."""

    def __init__(self, conf, host, driver, reportclient=None):
        self.conf = conf
        self.host = host
        self.driver = driver
        self.reportclient = reportclient or report.SchedulerReportClient(conf)
        #: The providers as Placement last told us (or as we last wrote them).
        self.provider_tree = provider_tree_mod.ProviderTree()

    def update(self, context, compute_node):
        """Bring ``compute_node``'s provider in Placement up to date; True when it is."""
        for attempt in range(1, ATTEMPTS + 1):
            try:
                self._update_once(context, compute_node)
                return True
            except exception.ResourceProviderUpdateConflict as exc:
                LOG.info('Resource provider %s changed in Placement meanwhile (try %d of %d): '
                         '%s', compute_node.uuid, attempt, ATTEMPTS, exc.format_message())
                self.forget(compute_node.uuid)
            except PLACEMENT_ERRORS as exc:
                LOG.warning('Could not update resource provider %s (%s) in Placement, the '
                            'next refresh tries again: %s', compute_node.uuid,
                            compute_node.hypervisor_hostname, exception.first_line(exc))
                self.forget(compute_node.uuid)
                return False
        LOG.error('Resource provider %s kept changing in Placement: %d tries, the next '
                  'refresh tries again', compute_node.uuid, ATTEMPTS)
        return False

    def update_compute_providers_status(self, context, nodes, enabled):
        """:meth:`update_compute_provider_status` for each of ``nodes`` (ComputeNodes),
        best effort as Nova's compute manager does it: a failure is logged, never raised."""
        for node in nodes:
            try:
                self.update_compute_provider_status(context, node.uuid, enabled)
            except PLACEMENT_ERRORS as exc:
                LOG.warning('An error occurred while updating COMPUTE_STATUS_DISABLED trait '
                            'on compute node resource provider %s. The trait will be '
                            'synchronized when the update_available_resource periodic task '
                            'runs. Error: %s', node.uuid, exception.first_line(exc))
            except Exception:
                LOG.exception('An error occurred while updating COMPUTE_STATUS_DISABLED trait '
                              'on compute node resource provider %s. The trait will be '
                              'synchronized when the update_available_resource periodic '
                              'task runs.', node.uuid)

    def update_compute_provider_status(self, context, rp_uuid, enabled):
        """Add (``enabled`` False) or remove ``COMPUTE_STATUS_DISABLED`` on the provider at
        once, as Nova's ``ComputeVirtAPI.update_compute_provider_status``: the provider's
        traits are read afresh from Placement and written back with that generation only
        when the trait changes, and the cached provider takes what was written (the
        periodic update then has nothing to redo).

        :raises: ResourceProviderRetrievalFailed, ResourceProviderUpdateConflict,
            ResourceProviderUpdateFailed, TraitRetrievalFailed,
            keystoneauth1.exceptions.ClientException
        """
        trait = os_traits.COMPUTE_STATUS_DISABLED
        generation, traits = self.reportclient.get_traits(context, rp_uuid)
        traits = set(traits)
        if enabled and trait in traits:
            LOG.debug('Removing trait %s from compute node resource provider %s in '
                      'placement.', trait, rp_uuid)
            traits.discard(trait)
        elif not enabled and trait not in traits:
            LOG.debug('Adding trait %s to compute node resource provider %s in placement.',
                      trait, rp_uuid)
            traits.add(trait)
        else:
            return
        generation = self.reportclient.set_traits(context, rp_uuid, generation, traits)
        if self.provider_tree.exists(rp_uuid):
            self.provider_tree.update_traits(rp_uuid, traits, generation)

    def forget(self, uuid):
        if self.provider_tree.exists(uuid):
            self.provider_tree.remove(uuid)

    def _update_once(self, context, node):
        uuid, name = node.uuid, node.hypervisor_hostname
        if not self.provider_tree.exists(uuid):
            self._refresh(context, uuid, name)
        # The driver edits a scratch copy: what it leaves is what Placement should have.
        scratch = provider_tree_mod.ProviderTree()
        scratch.add(self.provider_tree.data(uuid))
        self.driver.update_provider_tree(scratch, name)
        wanted = scratch.data(uuid)
        client = self.reportclient
        current = self.provider_tree.data(uuid)
        if wanted.inventory != current.inventory:
            generation = client.set_inventory(context, uuid, current.generation,
                                              wanted.inventory)
            self.provider_tree.update_inventory(uuid, wanted.inventory, generation)
            LOG.info('Inventory of resource provider %s (%s) set: %s', uuid, name,
                     _summary(wanted.inventory))
        traits = self._get_traits(context, wanted.traits)
        current = self.provider_tree.data(uuid)
        if traits != current.traits:
            generation = client.set_traits(context, uuid, current.generation, traits)
            self.provider_tree.update_traits(uuid, traits, generation)
            LOG.info('Traits of resource provider %s (%s) set: +%s -%s', uuid, name,
                     sorted(traits - current.traits), sorted(current.traits - traits))

    def _refresh(self, context, uuid, name):
        """Read the provider (created when Placement has none) with its inventory, traits
        and aggregates into the cache."""
        record = self.reportclient.ensure_provider(context, uuid, name)
        data = provider_tree_mod.ProviderData(uuid, record['name'], record['generation'])
        _gen, data.inventory = self.reportclient.get_inventory(context, uuid)
        _gen, traits = self.reportclient.get_traits(context, uuid)
        generation, aggregates = self.reportclient.get_aggregates(context, uuid)
        data.traits, data.aggregates = set(traits), set(aggregates)
        data.generation = generation
        self.provider_tree.add(data)

    def _get_traits(self, context, traits):
        """The provider's traits with the driver's, as Nova's ``_get_traits``: traits set
        by others are kept, capability traits follow the driver."""
        traits = set(traits)
        for trait, supported in self.driver.capabilities_as_traits().items():
            if supported:
                traits.add(trait)
            else:
                traits.discard(trait)
        traits.add(os_traits.COMPUTE_NODE)
        traits.add(os_traits.OWNER_NOVA)
        self._sync_compute_service_disabled_trait(context, traits)
        return traits

    def _sync_compute_service_disabled_trait(self, context, traits):
        """``COMPUTE_STATUS_DISABLED`` while this host's compute service is disabled."""
        try:
            service = service_obj.Service.get_by_compute_host(context, self.host)
        except exception.NotFound:
            LOG.error('Unable to find services table record for nova-compute host %s',
                      self.host)
            return
        if service.disabled:
            traits.add(os_traits.COMPUTE_STATUS_DISABLED)
        else:
            traits.discard(os_traits.COMPUTE_STATUS_DISABLED)


def _summary(inventory):
    return ', '.join('%s %s (reserved %s, ratio %s)' % (
        rc, inv['total'], inv['reserved'], inv['allocation_ratio'])
        for rc, inv in sorted(inventory.items()))
