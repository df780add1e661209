"""Scheduling without a broker or a database: the real FilterScheduler over given host states.

What the benchmarks and ``minisched-manage scheduler replay`` share. Host states are filled
from rows (service and compute node records, as the database layer returns them) instead of
read from the cell databases; the scheduler then decides over them with the configured
filters and weighers, and its consumption stays in the states, as in a scheduler worker
between two compute reports.
"""
import contextlib
import logging

from oslo_config import cfg
from oslo_utils import timeutils

from minisched.conf import filter_scheduler as fs_conf
from minisched import exception
from minisched.scheduler import filter_scheduler
from minisched.scheduler import plugins
from minisched.scheduler import host_manager as host_manager_mod


class SilentNotifier:
    """The notifier of a process without RPC: always off, so nothing is sent."""

    @staticmethod
    def is_enabled():
        return False


class HeldStateScheduler(filter_scheduler.FilterScheduler):
    """A FilterScheduler over the host states its HostManager holds: nothing is refreshed."""

    def __init__(self, conf):
        super().__init__(conf, notifier=SilentNotifier())

    def _get_all_host_candidates(self, context, spec_obj):
        return self.pipeline.initial(context, spec_obj)


def hold(host_manager, hosts):
    """Give ``host_manager`` a host state per ``(service row, node row, cell uuid, mapped)``
    of ``hosts``, in that order (the table's row order, hence the order of weighing ties).

    A cell uuid of None is the implicit local cell. Cells are then those of the hosts, none
    of them down; ``mapped`` False leaves a host out of scheduling, as an unmapped host is.
    """
    hosts = list(hosts)
    for service, _node, _cell, _mapped in hosts:
        host_manager._services[service['host']] = service
    cells = {}
    for _service, node, cell_uuid, mapped in hosts:
        cell_uuid = cell_uuid or host_manager_mod.LOCAL_CELL_UUID
        cells.setdefault(cell_uuid, _HeldCell(cell_uuid))
        try:
            held = host_manager._update_node(node, cell_uuid)
        except Exception as exc:  # what the node's values make of a host state
            raise HostNotHeld(node, exc) from exc
        if held:
            state = host_manager.host_state_map[(node['host'], node['hypervisor_hostname'])]
            host_manager.table.columns['mapped'][state.row] = bool(mapped)
    held = list(cells.values())
    if not held or [c.uuid for c in held] == [host_manager_mod.LOCAL_CELL_UUID]:
        held = [None]
    host_manager.cells = host_manager.enabled_cells = held
    host_manager._mappings_dirty = False
    host_manager._initialized = True


class HostNotHeld(Exception):
    """A node record that no host state can be made of (its values are not what the
    scheduler reads)."""

    def __init__(self, node, cause):
        super().__init__('host %r node %r cannot be held: %s: %s' % (
            node.get('host'), node.get('hypervisor_hostname'), type(cause).__name__,
            str(cause).strip().split('\n')[0]))


class _HeldCell:
    """A cell as the host manager's candidate selection sees one: a uuid, enabled."""

    disabled = False

    def __init__(self, uuid):
        self.uuid = uuid


@contextlib.contextmanager
def clock_at(moment):
    """Within the block, ``timeutils.utcnow()`` answers ``moment`` (naive UTC): services are up
    or down, and consumption is stamped, as at that moment however long the block takes."""
    timeutils.set_time_override(moment)
    try:
        yield
    finally:
        timeutils.clear_time_override()


#: The deprecated filters whose warning this process has logged.
_WARNED = set()


@contextlib.contextmanager
def deprecations(conf, chosen=None):
    """While the block makes ``conf``'s filters, silence the deprecation warnings of those
    already warned about, or of all when ``enabled_filters`` is the default (``chosen``
    None: found from where the option's value came from)."""
    if chosen is None:
        location = conf.get_location('enabled_filters', 'filter_scheduler')
        chosen = location is not None and location.location != cfg.Locations.opt_default
    try:
        classes = plugins.classes(plugins.FILTERS, conf.filter_scheduler.available_filters,
                                  plugins.ALL_FILTERS).values()
    except exception.MinischedException:
        classes = ()  # making the filters says what is wrong
    quiet = _Quiet()
    loggers = []
    for cls in classes:
        if not getattr(cls, 'DEPRECATION', None):
            continue
        enabled = cls.__name__ in fs_conf.enabled_filters(conf)
        if chosen and enabled and cls not in _WARNED:
            _WARNED.add(cls)
            continue
        loggers.append(logging.getLogger(cls.__module__))
    for logger in loggers:
        logger.addFilter(quiet)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(quiet)


class _Quiet(logging.Filter):
    def filter(self, record):
        return False
