"""During a cross-cell move, prefer hosts in the instance's current (source) cell.

Raw value 1 for a host in the requested destination's cell, -1 for any other host, when the
request is a move that allows changing cells (``requested_destination.cell`` set and
``allow_cross_cell_move`` true); 0 otherwise. Bounds from the host list. Multiplier
``[filter_scheduler] cross_cell_move_weight_multiplier`` (1000000.0), overridable per
aggregate with the ``cross_cell_move_weight_multiplier`` metadata key.
"""

from minisched.scheduler import weights


def _preferred_cell(spec):
    """The source cell uuid of a cross-cell move request, else None."""
    dest = spec.requested_destination if 'requested_destination' in spec else None
    if dest and 'cell' in dest and dest.cell and \
            'allow_cross_cell_move' in dest and dest.allow_cross_cell_move:
        return dest.cell.uuid
    return None


class CrossCellWeigher(weights.BaseHostWeigher):
    multiplier_name = 'cross_cell_move_weight_multiplier'

    def _weigh_object(self, host_state, weight_properties):
        """Higher weights win: the preferred cell's hosts."""
        cell_uuid = _preferred_cell(weight_properties)
        if cell_uuid is None:
            return 0
        return 1 if host_state.cell_uuid == cell_uuid else -1

    def weigh_rows(self, view, weight_properties):
        return 0 if _preferred_cell(weight_properties) is None else None
