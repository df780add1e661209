"""What a compute knows of its resource providers in Placement, as Nova's ProviderTree.

One root provider per compute node (minisched's drivers have no nested providers): its
uuid, name and generation, and its inventory, traits and aggregates as last read from or
written to Placement. The driver edits a copy (``update_provider_tree``); the report
compares it with what Placement has and writes only what changed.
"""
import copy


class ProviderData:
    """One provider's record: ``uuid``, ``name``, ``generation``, ``inventory``
    ({resource class: {total, reserved, min_unit, max_unit, step_size, allocation_ratio}}),
    ``traits`` (a set) and ``aggregates`` (a set of aggregate uuids)."""

    def __init__(self, uuid, name, generation=0, inventory=None, traits=(), aggregates=()):
        self.uuid = uuid
        self.name = name
        self.generation = generation
        self.inventory = dict(inventory or {})
        self.traits = set(traits)
        self.aggregates = set(aggregates)

    def copy(self):
        return copy.deepcopy(self)


class ProviderTree:
    """Providers by name and uuid (roots only)."""

    def __init__(self):
        self._providers = {}

    def new_root(self, name, uuid, generation=0):
        self._providers[uuid] = ProviderData(uuid, name, generation)
        return self._providers[uuid]

    def add(self, data):
        self._providers[data.uuid] = data

    def _find(self, name_or_uuid):
        for data in self._providers.values():
            if name_or_uuid in (data.uuid, data.name):
                return data
        raise ValueError('No such provider %s' % name_or_uuid)

    def exists(self, name_or_uuid):
        try:
            self._find(name_or_uuid)
        except ValueError:
            return False
        return True

    def data(self, name_or_uuid):
        """A copy of the provider's record (edit it through the ``update_*`` methods)."""
        return self._find(name_or_uuid).copy()

    def remove(self, name_or_uuid):
        self._providers.pop(self._find(name_or_uuid).uuid, None)

    def update_inventory(self, name_or_uuid, inventory, generation=None):
        """Set the inventory; True when it changed."""
        return self._update(name_or_uuid, 'inventory', dict(inventory), generation)

    def update_traits(self, name_or_uuid, traits, generation=None):
        return self._update(name_or_uuid, 'traits', set(traits), generation)

    def update_aggregates(self, name_or_uuid, aggregates, generation=None):
        return self._update(name_or_uuid, 'aggregates', set(aggregates), generation)

    def _update(self, name_or_uuid, field, value, generation):
        data = self._find(name_or_uuid)
        changed = getattr(data, field) != value
        setattr(data, field, value)
        if generation is not None:
            data.generation = generation
        return changed
