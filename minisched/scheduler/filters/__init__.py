"""Filter base class and handler: which hosts can take a request.

Every filter answers per host (:meth:`BaseHostFilter.host_passes`, Nova's contract). A filter
may also answer for many hosts at once (:meth:`BaseHostFilter.filter_rows`, over the columns of
a :class:`~minisched.scheduler.host_state.HostStateTable`) and say up front that a request does
not concern it (:meth:`BaseHostFilter.is_noop`); both must give exactly the per-host answers.
"""
import abc
import logging

import numpy as np

LOG = logging.getLogger(__name__)


class BaseHostFilter(abc.ABC):
    """Answers one yes/no question about one host for one request."""

    #: True when the answer cannot change between the instances of one request.
    run_filter_once_per_request = False
    #: True when the filter must also run for a rebuild on the instance's own host. Nova's
    #: default is False: a rebuild keeps the host, so only policy filters (image, isolation)
    #: get a say, not the ones checking usage the instance already counts in.
    RUN_ON_REBUILD = False
    #: True for filters that write ``host_state.limits`` when a host passes.
    SETS_LIMITS = False
    #: For a filter Nova deprecated then removed: the warning the last Nova release that
    #: had it logged each time it made the filter (start-up, for enabled filters).
    DEPRECATION = None

    def __init__(self, conf):
        self.conf = conf
        if self.DEPRECATION:
            # Not type(self): this package's ``type`` is its submodule of that name.
            logging.getLogger(self.__class__.__module__).warning(self.DEPRECATION)

    @property
    def name(self):
        return self.__class__.__name__

    def run_filter_for_index(self, index):
        """Whether the filter runs for the ``index``-th instance of a multi-create request."""
        return not (self.run_filter_once_per_request and index > 0)

    def _filter_one(self, host_state, spec_obj):
        if not self.RUN_ON_REBUILD and is_rebuild(spec_obj):
            return True
        return self.host_passes(host_state, spec_obj)

    def limits_for(self, host_state, spec_obj):
        """The limits :meth:`host_passes` writes into ``host_state.limits`` for a host that
        passes, as a new dict; ``{}`` for filters that set none.

        Read from the host's totals and ratios only, never from its usage, and written
        nowhere: the scheduler asks for them after it chose a host, when concurrent requests
        may already have consumed from it (a host that no longer passes still gets the
        limits it passed with, for the compute's claim to check against), and a host state
        is shared by those requests, so its own ``limits`` is no place for one request's.
        """
        return {}

    def filter_all(self, host_states, spec_obj):
        """Yield the host states that pass (Nova's ``filter_all``)."""
        for host_state in host_states:
            if self._filter_one(host_state, spec_obj):
                yield host_state

    @abc.abstractmethod
    def host_passes(self, host_state, spec_obj):
        """Return True to keep ``host_state`` as a candidate for ``spec_obj``.

        :param host_state: a :class:`~minisched.scheduler.host_state.HostState`
        :param spec_obj: a :class:`~minisched.objects.request_spec.RequestSpec`
        :returns: bool
        """

    def is_noop(self, spec_obj):
        """Return True when every host passes for ``spec_obj`` (the filter can be skipped).

        Only valid for filters whose pass/fail does not write state; resource filters that set
        limits must return False.
        """
        return False

    def filter_rows(self, view, spec_obj):
        """Vectorised ``host_passes``: a bool array over ``view``'s rows, or None.

        :param view: a :class:`RowView` of the candidate rows
        :returns: ``numpy.ndarray`` of bool with ``len(view)`` entries, or None when this
            filter has no vectorised form (the handler then calls ``host_passes`` per host).
        """
        return None


#: Attribute of a RequestSpec holding, on the Placement path, that request's allocation
#: candidates per compute node uuid (a ``placement_claims.Candidates``), as its filters
#: narrow them. Host states are shared by the requests decided at once, so what one
#: request's filters keep is kept with the request, not on the host state (where Nova keeps
#: it, and where a caller without such an attribute, as Nova's tests, sets it). Not a field:
#: it never travels.
REQUEST_CANDIDATES = '_allocation_candidates'


def request_candidates(spec_obj):
    """The request's own allocation candidates (see :data:`REQUEST_CANDIDATES`), or None."""
    return getattr(spec_obj, REQUEST_CANDIDATES, None)


def mapping_matters(pci_requests, mapping):
    """Whether deciding ``pci_requests`` with the provider ``mapping`` of a candidate may
    differ from deciding them with none (the path without Placement): its groups name some
    of the requests' devices (``<request_id>-<n>``), or a request carries ``rp_uuids`` that a
    mapping overrides. NUMA fits without PCI requests never read a mapping."""
    if not mapping or not pci_requests:
        return False
    for request in pci_requests:
        if request.source == request.NEUTRON_PORT:
            continue  # any pool, mapping or not
        if request.request_id is None or request.spec and request.spec[0].get('rp_uuids'):
            return True
        if any(key.startswith(request.request_id) for key in mapping):
            return True
    return False


def candidate_kinds(view, spec_obj, pci_requests):
    """How the rows' allocation candidates bear on a NUMA or PCI decision, as bool masks
    over ``view``: ``(per_host, none_left, same)``. ``per_host``: a candidate's mapping
    matters (:func:`mapping_matters`), the host is decided per candidate; ``none_left``: an
    empty list, the host fails; ``same``: every candidate decides as with no mapping, so the
    host is decided once as without Placement, its candidates kept or all dropped. Rows of
    none of them have no candidates (the path without Placement)."""
    count = len(view)
    per_host = np.zeros(count, dtype=bool)
    none_left = np.zeros(count, dtype=bool)
    same = np.zeros(count, dtype=bool)
    request = request_candidates(spec_obj)
    states = view.table.states
    rows = np.asarray(view.rows).tolist()
    if request is None:
        positions = view.flagged('allocation_candidates').tolist()
        lists = [(pos, states[rows[pos]].allocation_candidates) for pos in positions]
    else:
        lists = [(pos, request.get(states[row].uuid)) for pos, row in enumerate(rows)]
    for pos, candidates in lists:
        if not candidates:
            none_left[pos] = True
        elif any(mapping_matters(pci_requests, candidate['mappings'])
                 for candidate in candidates):
            per_host[pos] = True
        else:
            same[pos] = True
    return per_host, none_left, same


class CandidateFilterMixin:
    """For filters that decide per Placement allocation candidate (Nova's mixin of the name).

    On the Placement path a host has the allocation requests offered for it (each with the
    ``mappings`` of request groups to providers); such a filter keeps those whose provider
    mapping fits and passes the host while one is left. Without Placement (the host state's
    ``allocation_candidates`` is None and the request has none) it decides once, with no
    provider mapping.
    """

    @staticmethod
    def candidates_of(host_state, spec_obj):
        """The host's allocation candidates left for this request, or None."""
        request = request_candidates(spec_obj)
        if request is None:
            return host_state.allocation_candidates
        return request.get(host_state.uuid)

    @staticmethod
    def keep_candidates(host_state, spec_obj, candidates):
        request = request_candidates(spec_obj)
        if request is None:
            host_state.allocation_candidates = candidates
        else:
            request.set(host_state.uuid, candidates)

    def passes_candidates(self, host_state, spec_obj, fits):
        """True when ``fits(provider_mapping)`` holds for the host: for each of its
        candidates, those that fail dropped from the host's candidates."""
        candidates = self.candidates_of(host_state, spec_obj)
        if candidates is None:
            return bool(fits(None))
        name = self.__class__.__name__  # (``type`` here is the TypeFilter module)
        good = []
        for candidate in candidates:
            LOG.debug('%s tries allocation candidate: %s', name, candidate)
            if fits(candidate['mappings']):
                LOG.debug('%s accepted allocation candidate: %s', name, candidate)
                good.append(candidate)
            else:
                LOG.debug('%s rejected allocation candidate: %s', name, candidate)
        self.keep_candidates(host_state, spec_obj, good)
        return bool(good)


class RowView:
    """Candidate rows of a HostStateTable, in candidate order."""

    def __init__(self, table, rows):
        self.table = table
        self.rows = rows

    def __len__(self):
        return len(self.rows)

    def column(self, name):
        return self.table.columns[name][self.rows]

    def flagged(self, name):
        """Positions (into the view) of the rows the table flags for ``name``
        (:attr:`HostStateTable.flagged`), ascending."""
        flagged = self.table.flagged[name]
        if not flagged:
            return np.empty(0, dtype=np.int64)
        marked = np.fromiter(flagged, dtype=np.int64, count=len(flagged))
        return np.flatnonzero(np.isin(self.rows, marked))

    def states(self):
        """The HostState objects of the rows, in row order."""
        states = self.table.states
        # Python ints index a list about twice as fast as NumPy scalars.
        return [states[row] for row in np.asarray(self.rows).tolist()]


def is_rebuild(spec_obj):
    hints = spec_obj.scheduler_hints if spec_obj.obj_attr_is_set('scheduler_hints') else None
    return bool(hints) and hints.get('_nova_check_type') == ['rebuild']


class FilterResult:
    """Survivors of a filter run and, per filter, how many hosts it rejected."""

    def __init__(self, survivors, counts, stopped=False):
        self.survivors = survivors
        #: ``[(filter name, hosts in, hosts out)]`` for every filter that ran.
        self.counts = counts
        #: True when a filter answered None, Nova's "stop filtering" (no host survives).
        self.stopped = stopped

    def explain(self):
        """Counts-only summary for NoValidHost, e.g. ``RamFilter rejected 2 of 3``."""
        parts = ['%s rejected %d of %d' % (name, start - end, start)
                 for name, start, end in self.counts if end < start]
        return ', '.join(parts)


class HostFilterHandler:
    """Runs filters in configured order over host states (per host) or table rows (vectorised)."""

    def get_filtered_objects(self, filters, objs, spec_obj, index=0):
        """Nova's contract: the list of host states passing every filter (maybe empty), or
        None when a filter's ``filter_all`` answered None (stop filtering)."""
        result = self.run(filters, list(objs), spec_obj, index)
        return None if result.stopped else result.survivors

    def run(self, filters, host_states, spec_obj, index=0):
        LOG.debug('Starting with %d host(s)', len(host_states))
        counts = []
        # What each filter let through, for the DEBUG report when no host is left.
        kept = [] if LOG.isEnabledFor(logging.DEBUG) else None
        for flt in filters:
            if not flt.run_filter_for_index(index):
                continue
            name = _name(flt)
            start = len(host_states)
            passed = flt.filter_all(host_states, spec_obj)
            if passed is None:
                LOG.debug('Filter %s says to stop filtering', name)
                return FilterResult([], counts, stopped=True)
            host_states = list(passed)
            counts.append((name, start, len(host_states)))
            if kept is not None:
                kept.append(host_states)
            if not host_states:
                LOG.info('Filter %s returned 0 hosts', name)
                break
            LOG.debug('Filter %(cls_name)s returned %(obj_len)d host(s)',
                      {'cls_name': name, 'obj_len': len(host_states)})
        result = FilterResult(host_states, counts)
        if not host_states:
            _log_rejection(spec_obj, counts, kept)
        return result

    def run_rows(self, filters, table, rows, spec_obj, index=0):
        """Like :meth:`run` over table rows; returns survivors as a row array."""
        counts = []
        kept = [] if LOG.isEnabledFor(logging.DEBUG) else None
        for flt in filters:
            if not flt.run_filter_for_index(index):
                continue
            start = len(rows)
            if flt.is_noop(spec_obj) or (not flt.RUN_ON_REBUILD and is_rebuild(spec_obj)):
                counts.append((flt.name, start, start))
                if kept is not None:
                    kept.append(rows)
                continue
            view = RowView(table, rows)
            mask = flt.filter_rows(view, spec_obj)
            if mask is None:
                states = table.states
                mask = np.fromiter((flt.host_passes(states[row], spec_obj) for row in rows),
                                   dtype=bool, count=start)
            else:
                # A non-bool mask would index rows instead of selecting them.
                mask = np.asarray(mask, dtype=bool)
            rows = rows[mask]
            counts.append((flt.name, start, len(rows)))
            if kept is not None:
                kept.append(rows)
            if not len(rows):
                LOG.info('Filter %s returned 0 hosts', flt.name)
                break
        result = FilterResult(rows, counts)
        if not len(rows):
            if kept is not None:  # the host states behind the rows, for the DEBUG report
                kept = [[table.states[row] for row in survivors.tolist()] for survivors in kept]
            _log_rejection(spec_obj, counts, kept)
        return result


def _name(flt):
    # The class name, as Nova logs it (``__class__``, which a mock with a spec also answers).
    return flt.__class__.__name__


#: Nova's report when no host is left (the same text at INFO with counts, at DEBUG with the
#: hosts each filter let through), formatted before logging as Nova does.
_REJECTED = ("Filtering removed all hosts for the request with instance ID '%s'. "
             "Filter results: %s")


def _log_rejection(spec_obj, counts, kept=None):
    """Log Nova's two reports of a request no host passed.

    :param counts: ``[(filter name, hosts in, hosts out)]``
    :param kept: the host states each of those filters let through, or None (no DEBUG)
    """
    uuid = spec_obj.instance_uuid if spec_obj.obj_attr_is_set('instance_uuid') else None
    if kept is not None:
        full = [(name, [(getattr(obj, 'host', obj), getattr(obj, 'nodename', ''))
                        for obj in survivors] or None)
                for (name, _start, _end), survivors in zip(counts, kept)]
        LOG.debug(_REJECTED % (uuid, full))
    LOG.info(_REJECTED % (uuid, ['%s: (start: %d, end: %d)' % c for c in counts]))


def all_filters():
    """Every installed filter class (the ``all_filters`` alias of ``available_filters``)."""
    from minisched.scheduler import plugins
    return list(plugins.installed(plugins.FILTERS).values())
