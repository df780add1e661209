"""Weigher base class and handler: in which order the passing hosts are preferred.

Nova's (Victoria+) algorithm (``nova/weights.py``): each weigher gives a raw value per host,
clamped into its declared ``[minval, maxval]``; the values are normalised to 0..1 (missing
bounds come from the list itself, the declared ones are never changed); each host's weight is
the sum over the weighers, in order, of ``multiplier(host) * normalised value``; hosts are
sorted by weight, descending and stable. One host or none: no weighing at all (weight 0.0).

:meth:`HostWeightHandler.weigh_rows` is the same algorithm over the columns of a
:class:`~minisched.scheduler.host_state.HostStateTable`. It performs the same IEEE operations
in the same order as :meth:`HostWeightHandler.get_weighed_objects`, so weights and order are
bit-identical; weighers without a vectorised form are run per host inside it. Work whose
result cannot change a weight is skipped, not done: a weigher whose raw values are all the
same (no server group, no PCI device, no cross-cell move, ...) says so instead of making an
array of them, and a weigher with finite raw values and a multiplier of 0.0 adds 0.0 to every
weight, so its values are not computed at all.
"""
import abc
import math
import numbers

import numpy as np

from minisched.scheduler.weights import utils

_UNASKED = object()


def normalize(weight_list, minval=None, maxval=None):
    """Normalise ``weight_list`` to 0..1 (Nova's ``nova.weights.normalize``).

    Missing bounds are the list's own minimum/maximum; when the bounds are equal every
    value normalises to 0.
    """
    if not weight_list:
        return ()
    minval, maxval = _bounds(weight_list, minval, maxval)
    if minval == maxval:
        return [0] * len(weight_list)
    range_ = maxval - minval
    return ((i - minval) / range_ for i in weight_list)


def _bounds(weight_list, minval, maxval):
    """:func:`normalize`'s ``(minval, maxval)`` as floats: the declared ones, else the list's."""
    return (float(min(weight_list) if minval is None else minval),
            float(max(weight_list) if maxval is None else maxval))


def _clamped(weigher, weight):
    """``weight`` clamped into the weigher's declared bounds by Nova's exact expressions
    (their NaN and int handling included)."""
    if weigher.minval is not None:
        weight = max(weight, weigher.minval)
    if weigher.maxval is not None:
        weight = min(weight, weigher.maxval)
    return weight


def normalize_array(values, minval=None, maxval=None):
    """Vectorised :func:`normalize` over a float64 array without NaN; same IEEE results."""
    normalized = _normalize_array(values, minval, maxval)
    return np.zeros(len(values), dtype=np.float64) if normalized is None else normalized


def _normalize_array(values, minval, maxval):
    """:func:`normalize_array`, but None when every value normalises to 0."""
    if not len(values):
        return values
    maxval = float(values.max() if maxval is None else maxval)
    minval = float(values.min() if minval is None else minval)
    if minval == maxval:
        return None
    return (values - minval) / (maxval - minval)


class WeighedHost:
    """A host state with the weight the handler gave it."""

    def __init__(self, obj, weight):
        self.obj = obj
        self.weight = weight

    def to_dict(self):
        return {'weight': self.weight, 'host': self.obj.host}

    def __repr__(self):
        return 'WeighedHost [host: %r, weight: %s]' % (self.obj, self.weight)


class BaseHostWeigher(abc.ABC):
    """Gives each host a raw value; the handler normalises and multiplies it.

    A weigher is built once with the service's ``conf`` and reused for every request; it
    must not keep per-request state (HEAD semantics: the bounds below are never mutated).
    """

    #: Declared lower bound of the raw values (None: taken from the host list).
    minval = None
    #: Declared upper bound of the raw values (None: taken from the host list).
    maxval = None
    #: True when every raw value is a finite number for any host and request (integer
    #: columns) and computing them raises nothing: a multiplier of 0.0 then adds exactly 0.0
    #: to each weight, and the handler skips the weigher.
    finite_values = False
    #: The multiplier's option (in ``[filter_scheduler]`` unless :meth:`_config` says
    #: otherwise), which is also the aggregate metadata key overriding it per host (Stein+).
    #: None: a fixed multiplier of 1.0.
    multiplier_name = None

    def __init__(self, conf):
        self.conf = conf

    @property
    def name(self):
        return self.__class__.__name__

    def _config(self):
        """The configured multiplier: ``[filter_scheduler] <multiplier_name>``."""
        return getattr(self.conf.filter_scheduler, self.multiplier_name)

    def weight_multiplier(self, host_state):
        """The multiplier for ``host_state`` (aggregate metadata may override the option).

        :param host_state: a :class:`~minisched.scheduler.host_state.HostState`
        :returns: float
        """
        if self.multiplier_name is None:
            return 1.0
        return utils.get_weight_multiplier(host_state, self.multiplier_name, self._config())

    @abc.abstractmethod
    def _weigh_object(self, host_state, weight_properties):
        """Raw (unnormalised) value of ``host_state`` for the request ``weight_properties``.

        :param host_state: a :class:`~minisched.scheduler.host_state.HostState`
        :param weight_properties: a :class:`~minisched.objects.request_spec.RequestSpec`
        :returns: a number; higher wins when the multiplier is positive
        """

    def weigh_objects(self, weighed_obj_list, weight_properties):
        """Raw values for every :class:`WeighedHost`, clamped into the declared bounds."""
        return [_clamped(self, self._weigh_object(obj.obj, weight_properties))
                for obj in weighed_obj_list]

    def weigh_rows(self, view, weight_properties):
        """Vectorised :meth:`_weigh_object` over ``view``'s rows, or None.

        :param view: a :class:`~minisched.scheduler.filters.RowView` of the candidates
        :returns: an array of ``len(view)`` raw values (unclamped) equal to the per-host
            values; a number when every host's raw value is that number; or None when only
            the per-host form applies to this request
        """
        return None

    def multipliers_rows(self, view):
        """Vectorised :meth:`weight_multiplier` over ``view``'s rows.

        :returns: a float (same multiplier for every row), a float64 array of
            ``len(view)`` entries, or None (the handler then asks per host)
        """
        if self.multiplier_name is None:
            return None
        return utils.weight_multipliers_rows(view, self.multiplier_name, self._config())


class HostWeightHandler:
    """Applies the weighers and sorts (Nova's ``BaseWeightHandler.get_weighed_objects``)."""

    object_class = WeighedHost

    def get_weighed_objects(self, weighers, obj_list, weighing_properties):
        """Nova's contract: :class:`WeighedHost` list sorted by weight, descending, stable."""
        weighed_objs = [self.object_class(obj, 0.0) for obj in obj_list]
        if len(weighed_objs) <= 1:
            return weighed_objs
        for weigher in weighers:
            weights = weigher.weigh_objects(weighed_objs, weighing_properties)
            weights = list(normalize(weights, minval=weigher.minval, maxval=weigher.maxval))
            for i, weight in enumerate(weights):
                obj = weighed_objs[i]
                obj.weight += weigher.weight_multiplier(obj.obj) * weight
        return sorted(weighed_objs, key=lambda x: x.weight, reverse=True)

    def weigh_rows(self, weighers, view, weighing_properties):
        """Vectorised :meth:`get_weighed_objects`: ``(ordered rows, weights in that order)``.

        :param view: a :class:`~minisched.scheduler.filters.RowView` of the candidates
        :returns: ``(rows, weights)``, both numpy arrays in descending-weight order
        """
        ranking = self.rank_rows(weighers, view, weighing_properties)
        return ranking.rows, ranking.weights

    def rank_rows(self, weighers, view, weighing_properties, top=None):
        """:meth:`weigh_rows` as a :class:`Ranking`, whose first positions only may be in
        order: every host tied with the best and ``top`` more (all of them when ``top`` is
        None); the rest are ordered when first asked for (:meth:`Ranking.complete`).

        A stable sort of every candidate is most of the weighing of a large cluster (0.7 ms
        of 10,000 weights here, 4 ms of 50,000), where a request looks at its first few.
        """
        count = len(view)
        total = np.zeros(count, dtype=np.float64)
        if count <= 1:
            return Ranking(view.rows, total, count)
        utils.forget(view)  # what the weighers learn about the view lasts one weighing
        try:
            total = self._weigh_rows(weighers, view, weighing_properties, total)
        finally:
            utils.forget(view)
        order, placed = _descending_order(total, top)
        return Ranking(view.rows[order], total[order], placed)

    def _weigh_rows(self, weighers, view, weighing_properties, total):
        count = len(view)
        states = None
        with np.errstate(all='ignore'):  # inf * 0 and the like: silent, as in Python
            for weigher in weighers:
                multipliers = _UNASKED
                if weigher.finite_values:
                    # Values that cannot raise or log may be skipped, unseen, when the
                    # multiplier is 0.0 (others are computed first, as Nova does).
                    multipliers = weigher.multipliers_rows(view)
                    if isinstance(multipliers, numbers.Real) and multipliers == 0.0:
                        continue  # 0.0 * a finite value is +/-0.0: see below
                raw = weigher.weigh_rows(view, weighing_properties)
                if raw is None:
                    states = view.states() if states is None else states
                    normalized = _normalized_per_host(weigher, states, weighing_properties)
                elif isinstance(raw, numbers.Real):
                    normalized = _normalized_constant(weigher, raw, count)
                else:
                    normalized = _normalized_rows(weigher, raw)
                if multipliers is _UNASKED:
                    multipliers = weigher.multipliers_rows(view)
                if multipliers is None:
                    states = view.states() if states is None else states
                    multipliers = np.fromiter((weigher.weight_multiplier(s) for s in states),
                                              dtype=np.float64, count=count)
                if normalized is None:
                    # Every value normalised to 0: a finite multiplier adds +/-0.0 to a total
                    # that is never -0.0, which changes nothing; inf or NaN must still spread.
                    if _all_finite(multipliers):
                        continue
                    normalized = np.zeros(count, dtype=np.float64)
                total += multipliers * normalized
        return total


class Ranking:
    """Candidate rows in descending-weight order (``sorted`` semantics: ties keep their
    candidate order), of which the first ``placed`` are in place; the others follow in
    candidate order until :meth:`complete` sorts them, which changes no placed position.
    """

    __slots__ = ('rows', 'weights', 'placed')

    def __init__(self, rows, weights, placed):
        self.rows, self.weights, self.placed = rows, weights, placed

    def __len__(self):
        return len(self.rows)

    def complete(self):
        """Sort the positions not placed yet; returns the rows, all in order."""
        if self.placed < len(self.rows):
            tail = np.argsort(-self.weights[self.placed:], kind='stable') + self.placed
            self.rows[self.placed:] = self.rows[tail]
            self.weights[self.placed:] = self.weights[tail]
            self.placed = len(self.rows)
        return self.rows

    def reordered(self, order):
        """A Ranking of these positions in ``order``, a permutation that leaves the positions
        from ``placed`` on where they are."""
        return Ranking(self.rows[order], self.weights[order], self.placed)


def _all_finite(multipliers):
    """Whether a multiplier (one number, or an array of one per host) is finite everywhere."""
    if isinstance(multipliers, numbers.Real):
        return math.isfinite(multipliers)
    return bool(np.isfinite(multipliers).all())


def _normalized_constant(weigher, value, count):
    """``normalize`` of ``count`` raw values all equal to ``value``; None when they all
    normalise to 0 (always, unless the weigher declares a bound). A list of equal values
    has that value as its own minimum and maximum, so a one-value list gives the bounds."""
    value = _clamped(weigher, value)
    minval, maxval = _bounds((value,), weigher.minval, weigher.maxval)
    if minval == maxval:  # never true of a NaN: it normalises to NaN, as per host
        return None
    return np.full(count, (value - minval) / (maxval - minval), dtype=np.float64)


def _normalized_per_host(weigher, states, weighing_properties):
    wrapped = [WeighedHost(state, 0.0) for state in states]
    raw = weigher.weigh_objects(wrapped, weighing_properties)
    return _normalized_list(weigher, raw)


def _normalized_list(weigher, weights):
    return np.fromiter(normalize(weights, weigher.minval, weigher.maxval),
                       dtype=np.float64, count=len(weights))


def _normalized_rows(weigher, raw):
    """``normalize`` of a weigher's raw values; None when every value normalises to 0."""
    minval, maxval = weigher.minval, weigher.maxval
    raw = np.asarray(raw)
    if raw.dtype.kind not in 'iub':  # integer columns cannot hold NaN
        raw = raw.astype(np.float64, copy=False)
        if np.isnan(raw).any():
            # Python's max/min and numpy's disagree on NaN: take Nova's per-value path.
            return _normalized_list(weigher, [_clamped(weigher, w) for w in raw.tolist()])
    else:
        raw = raw.astype(np.float64)
    if minval is not None:
        raw = np.maximum(raw, minval)
    if maxval is not None:
        raw = np.minimum(raw, maxval)
    return _normalize_array(raw, minval, maxval)


def _descending_order(total, top=None):
    """``(positions, placed)``: the positions by weight, descending, ties in their order
    (``sorted`` semantics), of which the first ``placed`` are in that order: every position
    tied with the best and ``top`` more (all when ``top`` is None); the rest follow in
    position order.

    The placed ones are the first of a stable sort: what weighs more than the last placed
    weight, and of the positions weighing that much, the earliest.
    """
    count = len(total)
    if np.isnan(total).any():
        # NaN breaks numpy's total order: let Python's sort make the same comparisons.
        weights = total.tolist()
        return np.array(sorted(range(count), key=weights.__getitem__, reverse=True),
                        dtype=np.intp), count
    if top is not None:
        top += int(np.count_nonzero(total == total.max()))
    if top is None or top >= count:
        return np.argsort(-total, kind='stable'), count
    last = np.partition(total, count - top)[count - top]  # the top-th largest weight
    placed = total > last
    placed[np.flatnonzero(total == last)[:top - int(np.count_nonzero(placed))]] = True
    chosen = np.flatnonzero(placed)
    return np.concatenate((chosen[np.argsort(-total[chosen], kind='stable')],
                           np.flatnonzero(~placed))), top


def all_weighers():
    """Every installed weigher class (the ``all_weighers`` alias of ``weight_classes``)."""
    from minisched.scheduler import plugins
    return list(plugins.installed(plugins.WEIGHERS).values())
