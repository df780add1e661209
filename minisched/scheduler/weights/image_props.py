"""Weigh hosts by how many of their instances run images like the requested one (2025.1).

Raw value: the sum, over each ``(name, value)`` image property the request's image shares
with images of the host's instances, of the number of instances having it times its ratio in
``[filter_scheduler] image_props_weight_setting`` (1 when that option is empty, 0 for a
property it does not name). Bounds from the host list. Multiplier
``[filter_scheduler] image_props_weight_multiplier``: positive packs alike images, negative
spreads them, 0.0 (default) turns the weigher off (no aggregate turns it on then);
aggregate metadata key ``image_props_weight_multiplier``. The instances' image properties
are read from their ``system_metadata``, in their cell's database.
"""
from minisched import context as ms_context
from minisched import exception
from minisched import objects
from minisched.scheduler import host_manager
from minisched.scheduler import utils as scheduler_utils
from minisched.scheduler import weights


def _props(image_meta):
    """``{(name, str(value))}`` of the properties set on ``image_meta`` (None: none)."""
    if not image_meta:
        return set()
    # str(): list values are not hashable, and both sides must compare alike.
    return {(name, str(value)) for name, value in image_meta.properties.to_dict().items()}


class ImagePropertiesWeigher(weights.BaseHostWeigher):
    multiplier_name = 'image_props_weight_multiplier'

    def __init__(self, conf):
        super().__init__(conf)
        self._parse_setting()

    def _parse_setting(self):
        """(Re)read ``[filter_scheduler] image_props_weight_setting`` into ``self.setting``
        (Nova's method: the option is read once, when the weigher is made)."""
        self.setting = dict(scheduler_utils.parse_options(
            self.conf.filter_scheduler.image_props_weight_setting, converter=float,
            name='filter_scheduler.image_props_weight_setting'))

    def _weigh_object(self, host_state, weight_properties):
        """Higher weights win: hosts with more instances of alike images."""
        # Off when the option is 0.0, whatever the aggregates say: reading is costly.
        if self._config() == 0.0:
            return 0.0
        requested = _props(weight_properties.image)
        if not requested:
            return 0.0  # nothing can be shared: no need to read
        existing = _existing_props(host_state)
        weight = 0.0
        for prop in requested.intersection(existing):
            ratio = self.setting.get(prop[0], 0.0) if self.setting else 1
            weight += ratio * existing.count(prop)
        return weight

    def weigh_rows(self, view, weight_properties):
        # Each host's instances are read from the database: the per-host form does it.
        return 0.0 if self._config() == 0.0 else None


def _existing_props(host_state):
    """``[(name, str(value))]`` of every image property of every instance on the host.

    Read as Nova reads them, host by host: the host's cell mapping, then the instances'
    system metadata in that cell (one query; none when the host has no instance). A host
    whose cell is gone has none; an instance deleted meanwhile counts as having none.
    """
    context = ms_context.get_admin_context()
    cell = None
    if host_state.cell_uuid != host_manager.LOCAL_CELL_UUID:
        try:
            cell = objects.CellMapping.get_by_uuid(context, host_state.cell_uuid)
        except exception.CellMappingNotFound:
            return []
    with ms_context.target_cell(context, cell) as cctxt:
        instances = objects.InstanceList(cctxt, objects=list(host_state.instances.values()))
        instances.fill_metadata()
    existing = []
    for instance in instances:
        try:
            existing.extend(_props(instance.image_meta))
        except exception.InstanceNotFound:
            continue
    return existing
