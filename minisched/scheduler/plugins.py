"""The only module that talks to stevedore: load scheduler plugins by entry point name."""
from stevedore import driver
from stevedore import extension

from minisched import exception

FILTERS = 'minisched.scheduler.filters'
WEIGHERS = 'minisched.scheduler.weights'
DRIVERS = 'minisched.scheduler.driver'
HOST_MANAGERS = 'minisched.scheduler.host_manager'
ALL_FILTERS = 'minisched.scheduler.filters.all_filters'
ALL_WEIGHERS = 'minisched.scheduler.weights.all_weighers'


def installed(namespace):
    """Entry point name -> plugin class, for every plugin installed in ``namespace``."""
    mgr = extension.ExtensionManager(namespace, invoke_on_load=False)
    return {ext.name: ext.plugin for ext in mgr}


def classes(namespace, names, all_alias):
    """Resolve ``names`` (``all_alias`` meaning every installed plugin) to classes, in order.

    An unknown name raises :class:`PluginNotFound` listing what is installed.
    """
    available = installed(namespace)
    result = {}
    for name in names:
        if name == all_alias:
            for ext_name in sorted(available):
                result.setdefault(ext_name, available[ext_name])
        elif name in available:
            result.setdefault(name, available[name])
        else:
            raise exception.PluginNotFound(namespace=namespace, names=name,
                                           available=', '.join(sorted(available)) or 'none')
    return result


def load_driver(namespace, name, *args):
    """Instantiate the single plugin ``name`` of ``namespace`` with ``args``."""
    try:
        mgr = driver.DriverManager(namespace, name, invoke_on_load=True, invoke_args=args)
    except Exception as exc:
        if name not in installed(namespace):
            raise exception.PluginNotFound(
                namespace=namespace, names=name,
                available=', '.join(sorted(installed(namespace))) or 'none') from exc
        raise
    return mgr.driver
