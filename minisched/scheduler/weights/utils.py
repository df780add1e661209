"""Per-host weight multipliers: aggregate metadata overrides the configured value (Stein+).

A host in aggregates whose metadata carries the multiplier's key (``ram_weight_multiplier``,
...) uses the minimum of those values parsed as floats; if any of them does not parse, the
configured value is used and a warning logged (Nova's ``scheduler.utils.get_weight_multiplier``).
"""
import logging
import operator
import weakref

import numpy as np

LOG = logging.getLogger(__name__)

#: RowView -> what the weighers of one request learnt about its hosts (see :func:`states_with`).
_VIEWS = weakref.WeakKeyDictionary()


def aggregate_values_from_key(host_state, key_name):
    """The set of values of ``key_name`` over the host's aggregates' metadata."""
    return {aggr.metadata[key_name] for aggr in host_state.aggregates
            if aggr.metadata and key_name in aggr.metadata}


def get_weight_multiplier(host_state, multiplier_name, multiplier_config):
    """``multiplier_config`` unless the host's aggregates set ``multiplier_name`` (min wins)."""
    values = aggregate_values_from_key(host_state, multiplier_name)
    if not values:
        return multiplier_config
    if len(values) > 1:
        LOG.info('%(num_values)d values found, of which the minimum value will be used.',
                 {'num_values': len(values)})
    try:
        return min([float(value) for value in values])
    except ValueError as exc:
        LOG.warning("Could not decode '%(name)s' weight multiplier: %(exce)s",
                    {'exce': exc, 'name': multiplier_name})
        return multiplier_config


def states_with(view, attr):
    """``[(position, host_state)]`` of the hosts of ``view`` whose ``attr`` is truthy.

    Cached per view, so the weighers of one request scan the states once per attribute; the
    common "none has it" answer costs nothing for the attributes the table tracks
    (``HostStateTable.flagged``) and one C-level pass for the others.
    """
    flagged = view.table.flagged.get(attr)
    if flagged is not None and not flagged:
        return []  # no host of the table has it
    cache = _VIEWS.get(view)
    if cache is None or cache['rows'] is not view.rows:
        rows = view.rows.tolist()
        states = (operator.itemgetter(*rows)(view.table.states) if len(rows) > 1
                  else [view.table.states[row] for row in rows])
        cache = _VIEWS[view] = {'rows': view.rows, 'states': states}
    if attr not in cache:
        getter = operator.attrgetter(attr)
        found = []
        if any(map(getter, cache['states'])):
            found = [(pos, state) for pos, state in enumerate(cache['states']) if getter(state)]
        cache[attr] = found
    return cache[attr]


def forget(view):
    """Drop what :func:`states_with` cached for ``view``."""
    _VIEWS.pop(view, None)


def weight_multipliers_rows(view, multiplier_name, multiplier_config):
    """Vectorised :func:`get_weight_multiplier`: the config value when no host overrides it."""
    hits = [(pos, state) for pos, state in states_with(view, 'aggregates')
            if aggregate_values_from_key(state, multiplier_name)]
    if not hits:
        return multiplier_config
    multipliers = np.full(len(view), multiplier_config, dtype=np.float64)
    for pos, state in hits:
        multipliers[pos] = get_weight_multiplier(state, multiplier_name, multiplier_config)
    return multipliers
