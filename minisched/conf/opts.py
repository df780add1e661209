"""``oslo.config.opts`` entry point: every minisched option, grouped, for the sample generator."""
import collections

from minisched.conf import api
from minisched.conf import compute
from minisched.conf import conductor
from minisched.conf import database
from minisched.conf import default
from minisched.conf import filter_scheduler
from minisched.conf import notifications
from minisched.conf import pci
from minisched.conf import placement
from minisched.conf import scheduler
from minisched.conf import upgrade_levels

#: Every option module; tests/unit/conf/test_opts.py checks that none is missing.
_MODULES = (api, compute, conductor, database, default, filter_scheduler, notifications, pci,
            placement, scheduler, upgrade_levels)


def _group_name(group):
    return group if isinstance(group, str) else group.name


def list_opts():
    """Return ``[(group, [opts])]`` for oslo-config-generator."""
    merged = collections.OrderedDict()
    groups = {}
    for module in _MODULES:
        for group, opts in module.list_opts().items():
            name = _group_name(group)
            groups.setdefault(name, group)
            merged.setdefault(name, []).extend(opts)
    return [(groups[name] if name != 'DEFAULT' else 'DEFAULT', opts)
            for name, opts in sorted(merged.items())]
