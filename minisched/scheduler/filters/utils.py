"""Helpers shared by filters: aggregate metadata lookups, per-aggregate numbers, ratios.

The first four keep the names and rules of ``nova.scheduler.filters.utils``; the others
give the per-host and vectorised forms of the same rules so both paths agree exactly.
"""
import abc
import collections
import logging
import operator
import weakref

import numpy as np
from oslo_utils import versionutils

from minisched.scheduler import filters

LOG = logging.getLogger(__name__)

#: Rocky's built-in overcommit ratios, used when neither the node nor this service's
#: ``[DEFAULT] *_allocation_ratio`` gives one (0.0 and None both mean "not set").
DEFAULT_RATIOS = {'ram_allocation_ratio': 1.5, 'cpu_allocation_ratio': 16.0,
                  'disk_allocation_ratio': 1.0}


def aggregate_values_from_key(host_state, key_name):
    """Set of the raw values of ``key_name`` over the host's aggregates."""
    return {agg.metadata[key_name] for agg in host_state.aggregates
            if key_name in agg.metadata}


def aggregate_metadata_get_by_host(host_state, key=None):
    """key -> set of comma-split, stripped values, over aggregates having ``key`` (or all)."""
    metadata = collections.defaultdict(set)
    for agg in host_state.aggregates:
        if key is None or key in agg.metadata:
            for name, value in agg.metadata.items():
                metadata[name].update(part.strip() for part in value.split(','))
    return metadata


def validate_num_values(vals, default=None, cast_to=int, based_on=min):
    """``default`` for no values, else ``based_on`` of the cast values (ValueError if bad)."""
    if not vals:
        return default
    if len(vals) > 1:
        LOG.info('%(num)d values found, of which the %(which)s value will be used.',
                 {'num': len(vals), 'which': 'minimum' if based_on is min else 'maximum'})
    return based_on([cast_to(val) for val in vals])


def flavor_extra_specs(flavor):
    """The flavor's extra specs, ``{}`` when the field is not set (Nova's
    ``'extra_specs' in flavor`` guard: reading an unset field would try to lazy-load it)."""
    if 'extra_specs' not in flavor:
        return {}
    return flavor.extra_specs or {}


def instance_uuids_overlap(host_state, uuids):
    """True if any of ``uuids`` (one uuid or a list) is an instance on the host."""
    if isinstance(uuids, str):
        uuids = [uuids]
    return bool(set(host_state.instances).intersection(uuids))


def node_ratio(conf, host_state, name):
    """The host's ``name`` ratio, with Nova's substitution for an unset (0.0/None) value."""
    return getattr(host_state, name) or getattr(conf, name) or DEFAULT_RATIOS[name]


def node_ratio_rows(conf, view, name):
    """:func:`node_ratio` for every row of ``view`` (a float64 array)."""
    ratios = view.column(name)
    fallback = getattr(conf, name) or DEFAULT_RATIOS[name]
    # NaN is None in the column; -0.0 == 0.0 is falsy in Python too.
    return np.where((ratios != ratios) | (ratios == 0.0), fallback, ratios)


def aggregate_number(host_state, key, default, cast_to):
    """Min over the host's aggregates of ``key`` (as ``cast_to``), else ``default``.

    An unparsable value is logged and the default used, as Nova's Aggregate* filters do.
    """
    values = aggregate_values_from_key(host_state, key)
    try:
        return validate_num_values(values, default, cast_to=cast_to)
    except ValueError as exc:
        LOG.warning("Could not decode %s: '%s'", key, exc)
        return default


def aggregate_ratio(conf, host_state, name):
    """The Aggregate* filters' ratio: the smallest aggregate ``name`` value, else the node's."""
    return aggregate_number(host_state, name, cast_to=float,
                            default=node_ratio(conf, host_state, name))


def aggregate_ratio_rows(conf, view, name):
    """:func:`aggregate_ratio` for every row of ``view`` (a float64 array)."""
    return per_aggregated_host(view, node_ratio_rows(conf, view, name),
                               lambda state: aggregate_ratio(conf, state, name))


class OvercommitFilter(filters.BaseHostFilter):
    """Nova's classic Ram/Core/DiskFilter and Aggregate* forms: one check, two ratio sources.

    A subclass names its ratio option (``RATIO``), sets ``AGGREGATE`` for the smallest
    aggregate value over the node's, and gives its module's per-host and vectorised checks.
    Abstract and no entry point, so never a filter of its own.
    """

    RUN_ON_REBUILD = False
    SETS_LIMITS = True
    RATIO = None
    AGGREGATE = False

    @staticmethod
    @abc.abstractmethod
    def passes(host_state, spec_obj, ratio_of):
        """``host_passes`` given ``ratio_of(host_state)``; sets the limit when it passes."""

    @staticmethod
    @abc.abstractmethod
    def rows_pass(view, spec_obj, ratios):
        """``filter_rows`` given one ratio per row of ``view``."""

    @staticmethod
    @abc.abstractmethod
    def limits(host_state, spec_obj, ratio_of):
        """The limits ``passes`` sets, given ``ratio_of(host_state)`` (see ``limits_for``)."""

    def _ratio(self, host_state):
        ratio = aggregate_ratio if self.AGGREGATE else node_ratio
        return ratio(self.conf, host_state, self.RATIO)

    def host_passes(self, host_state, spec_obj):
        return self.passes(host_state, spec_obj, self._ratio)

    def limits_for(self, host_state, spec_obj):
        return self.limits(host_state, spec_obj, self._ratio)

    def filter_rows(self, view, spec_obj):
        ratios = aggregate_ratio_rows if self.AGGREGATE else node_ratio_rows
        return self.rows_pass(view, spec_obj, ratios(self.conf, view, self.RATIO))


def per_aggregated_host(view, base, per_host):
    """``base`` (one value per row) with ``per_host(state)`` for hosts in any aggregate.

    ``per_host`` may depend only on the host's aggregates and its ``base`` value: it is asked
    once per distinct (aggregate objects, base value). Hosts in no aggregate are the common
    case and keep the vectorised value untouched.
    """
    result = np.array(base, copy=True)
    states = view.states()
    aggregates = list(map(operator.attrgetter('aggregates'), states))
    answers = {}
    for index in np.flatnonzero(list(map(bool, aggregates))).tolist():
        key = (tuple(map(id, aggregates[index])), result[index])
        if key not in answers:
            answers[key] = per_host(states[index])
        result[index] = answers[key]
    return result


def per_aggregate_set(view, answer):
    """Vectorised form of a yes/no rule that depends only on a host's aggregates.

    ``answer(state)`` is asked once per distinct list of aggregate objects: once for all the
    hosts in no aggregate (the common case, found without a Python loop), once per aggregate
    combination for the others.
    """
    states = view.states()
    aggregates = list(map(operator.attrgetter('aggregates'), states))
    in_any = np.fromiter(map(bool, aggregates), dtype=bool, count=len(states))
    passes = np.zeros(len(states), dtype=bool)
    if not in_any.all():
        passes[~in_any] = bool(answer(states[int(np.argmin(in_any))]))
    answers = {}
    for index in np.flatnonzero(in_any).tolist():
        key = tuple(map(id, aggregates[index]))
        if key not in answers:
            answers[key] = bool(answer(states[index]))
        passes[index] = answers[key]
    return passes


class ContentClasses:
    """Per-row small integers naming the content of one host attribute, across requests.

    Host states replace such values on update (never mutate them), so a row is re-keyed only
    when its attribute is another object than last time: a request pays one ``id()`` per row
    instead of reading the content. ``refs`` keeps the objects alive so ids stay unique.
    """

    def __init__(self, attribute, content_key):
        self.attribute, self.content_key = attribute, content_key
        self._tables = weakref.WeakKeyDictionary()

    def classes(self, view):
        """(class per row, one value per class) for the rows of ``view``."""
        ids, classes, refs, known = self._tables.setdefault(
            view.table, [np.zeros(0, np.int64), np.zeros(0, np.int64), [], {}])
        rows = np.asarray(view.rows)
        values = list(map(operator.attrgetter(self.attribute), view.states()))
        grow = int(rows.max(initial=-1)) + 1 - len(ids)
        if grow > 0:
            ids = np.concatenate([ids, np.zeros(grow, np.int64)])
            classes = np.concatenate([classes, np.zeros(grow, np.int64)])
            refs.extend([None] * grow)
        current = np.fromiter(map(id, values), dtype=np.int64, count=len(values))
        for index in np.flatnonzero(ids[rows] != current).tolist():
            row, value = int(rows[index]), values[index]
            key = self.content_key(value)
            if key not in known:
                known[key] = (len(known), value)
            ids[row], classes[row], refs[row] = current[index], known[key][0], value
        self._tables[view.table] = [ids, classes, refs, known]
        return classes[rows], [value for _cls, value in sorted(known.values(),
                                                                key=lambda item: item[0])]


def version_satisfies(requirement, version):
    """Whether ``version`` meets ``requirement`` such as ``">= 6.0, < 7.0"``.

    Nova's ImagePropertiesFilter asks oslo.utils' ``VersionPredicate``, which compares PEP 440
    versions (``packaging``): ``"7"`` and ``"7.0.0"`` are equal and four parts are allowed.

    :raises ValueError: on a malformed requirement or version, as Nova's filter does.
    """
    return versionutils.VersionPredicate(requirement).satisfied_by(version)
