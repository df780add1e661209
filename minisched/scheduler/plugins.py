"""The only module that talks to stevedore: load scheduler plugins by name.

``[filter_scheduler] available_filters`` and ``weight_classes`` name plugins as Nova's
loader (``nova.loadables``) reads them, and also by entry point name:

- an entry point name in the namespace (``RamFilter``), minisched's usual form;
- a dotted path to a plugin class (``minisched.scheduler.filters.ram.RamFilter``, or a class
  of your own package that subclasses the filter or weigher base), registered under its
  class name;
- a dotted path to a function returning plugin classes, such as
  ``minisched.scheduler.filters.all_filters`` and ``minisched.scheduler.weights.all_weighers``
  (every installed plugin);
- Nova's names of its own plugins, so that a nova.conf works unchanged:
  ``nova.scheduler.filters.all_filters`` and ``nova.scheduler.weights.all_weighers`` (Nova's
  defaults, which operators write out when they add a filter of their own) mean every
  installed plugin, and ``nova.scheduler.<filters|weights>.<module>.<Class>`` means the
  plugin installed as ``<Class>``. Nothing under ``nova.`` is ever imported.
"""
import importlib
import inspect

from stevedore import driver
from stevedore import extension

from minisched import exception

FILTERS = 'minisched.scheduler.filters'
WEIGHERS = 'minisched.scheduler.weights'
DRIVERS = 'minisched.scheduler.driver'
HOST_MANAGERS = 'minisched.scheduler.host_manager'
ALL_FILTERS = 'minisched.scheduler.filters.all_filters'
ALL_WEIGHERS = 'minisched.scheduler.weights.all_weighers'

#: Namespace -> (Nova's "every plugin" name, prefix of Nova's paths to its own plugins).
_NOVA_NAMES = {
    FILTERS: ('nova.scheduler.filters.all_filters', 'nova.scheduler.filters.'),
    WEIGHERS: ('nova.scheduler.weights.all_weighers', 'nova.scheduler.weights.'),
}


def installed(namespace):
    """Entry point name -> plugin class, for every plugin installed in ``namespace``."""
    mgr = extension.ExtensionManager(namespace, invoke_on_load=False)
    return {ext.name: ext.plugin for ext in mgr}


def classes(namespace, names, all_alias):
    """Resolve ``names`` (see the module docstring) to classes, in order, without duplicates.

    :param all_alias: the name meaning every installed plugin of ``namespace``
    :returns: ``{name: class}``, the entry point name or the class name as key
    :raises PluginNotFound: for a name that resolves to no plugin of ``namespace``
    """
    available = installed(namespace)
    result = {}
    for name in names:
        for key, cls in _resolve(namespace, name, all_alias, available):
            result.setdefault(key, cls)
    return result


def _resolve(namespace, name, all_alias, available):
    nova_all, nova_prefix = _NOVA_NAMES.get(namespace, (None, None))
    if name in (all_alias, nova_all):
        return [(ext_name, available[ext_name]) for ext_name in sorted(available)]
    if name in available:
        return [(name, available[name])]
    if nova_prefix and name.startswith(nova_prefix):
        class_name = name.rpartition('.')[2]
        if class_name in available:
            return [(class_name, available[class_name])]
        raise _not_found(namespace, name, available)
    if '.' in name:
        return [(cls.__name__, cls) for cls in _import(namespace, name, available)]
    raise _not_found(namespace, name, available)


def _import(namespace, path, available):
    """The plugin classes a dotted path names: a class, or a function returning classes."""
    module_name, _, attr = path.rpartition('.')
    try:
        target = getattr(importlib.import_module(module_name), attr)
    except ModuleNotFoundError as exc:
        if not (module_name == exc.name or module_name.startswith('%s.' % exc.name)):
            raise  # the module exists but one of its imports is missing: say so
        raise _not_found(namespace, path, available) from exc
    except AttributeError as exc:
        raise _not_found(namespace, path, available) from exc
    found = [target] if inspect.isclass(target) else (
        list(target()) if callable(target) else [])
    base = _base_class(namespace)
    if not found or not all(inspect.isclass(cls) and issubclass(cls, base) for cls in found):
        raise _not_found(namespace, path, available)
    return found


def _base_class(namespace):
    # Imported here: the filter and weigher packages import this module.
    if namespace == FILTERS:
        from minisched.scheduler import filters
        return filters.BaseHostFilter
    if namespace == WEIGHERS:
        from minisched.scheduler import weights
        return weights.BaseHostWeigher
    return object


def _not_found(namespace, name, available):
    return exception.PluginNotFound(namespace=namespace, names=name,
                                    available=', '.join(sorted(available)) or 'none')


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
