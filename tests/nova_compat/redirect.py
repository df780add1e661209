"""Point Nova's filter, weigher and HostState modules at minisched's classes.

After :func:`install`, importing ``nova.scheduler.filters.affinity_filter`` (and the other
names of :data:`FILTER_MODULES`, :data:`WEIGHER_MODULES`, the ``nova.filters``,
``nova.scheduler.filters``, ``nova.scheduler.weights`` and ``nova.scheduler.host_manager``
modules) gives a stand-in module whose classes are minisched's. Everything else Nova's tests
use (objects, fakes such as ``FakeHostState``, the test base, ``self.flags``) stays Nova's.

- Nova's plugins take no argument; minisched's take ``conf``. Each minisched plugin class gets
  an adapter, a subclass of the same name built with :class:`NovaOptions`, which reads Nova's
  options by name from the global ``cfg.CONF``, so ``self.flags(...)`` reach our plugins.
- A stand-in module answers every other name from the minisched module behind it, and
  passes an assignment to a name that module has (``mock.patch`` of a module function) on to
  it; helper modules without plugin classes (``utils``, ``extra_specs_ops``) are minisched's
  module objects themselves.
- ``nova.servicegroup.API`` becomes minisched's servicegroup API, which ComputeFilter uses, so
  Nova's ``mock.patch('nova.servicegroup.API.service_is_up')`` reaches it; the exceptions our
  plugins raise where Nova's tests expect Nova's become ours (:func:`redirect_after_import`).
"""
import importlib
import importlib.abc
import importlib.machinery
import inspect
import sys
import types

from oslo_config import cfg

#: Nova's module under ``nova.scheduler.filters`` -> minisched's under
#: ``minisched.scheduler.filters``.
FILTER_MODULES = {
    'affinity_filter': 'affinity',
    'aggregate_image_properties_isolation': 'aggregate_image_properties_isolation',
    'aggregate_instance_extra_specs': 'aggregate_instance_extra_specs',
    'aggregate_multitenancy_isolation': 'aggregate_multitenancy_isolation',
    'all_hosts_filter': 'all_hosts',
    'compute_capabilities_filter': 'compute_capabilities',
    'compute_filter': 'compute',
    'image_props_filter': 'image_props',
    'io_ops_filter': 'io_ops',
    'isolated_hosts_filter': 'isolated_hosts',
    'json_filter': 'json',
    'metrics_filter': 'metrics',
    'num_instances_filter': 'num_instances',
    'numa_topology_filter': 'numa_topology',
    'pci_passthrough_filter': 'pci_passthrough',
    'type_filter': 'type',
}
#: Nova's module under ``nova.scheduler.weights`` -> minisched's under
#: ``minisched.scheduler.weights`` (the same names).
WEIGHER_MODULES = {name: name for name in (
    'affinity', 'compute', 'cpu', 'cross_cell', 'disk', 'hypervisor_version', 'image_props',
    'io_ops', 'metrics', 'num_instances', 'pci', 'ram')}
#: Helper modules that are minisched's module objects themselves (no plugin class inside).
SHARED_MODULES = {
    'nova.scheduler.filters.utils': 'minisched.scheduler.filters.utils',
    'nova.scheduler.filters.extra_specs_ops': 'minisched.scheduler.filters.extra_specs_ops',
}


def _nova_module_of(cls):
    """The Nova module name standing for the module of the minisched plugin class ``cls``."""
    for prefix, modules in (('filters', FILTER_MODULES), ('weights', WEIGHER_MODULES)):
        for nova_mod, ms_mod in modules.items():
            if cls.__module__ == 'minisched.scheduler.%s.%s' % (prefix, ms_mod):
                return 'nova.scheduler.%s.%s' % (prefix, nova_mod)
    return cls.__module__


class NovaOptions:
    """The ``conf`` a minisched plugin gets here: Nova's options on the global ``cfg.CONF``,
    read by name at each access; options Nova does not have come from minisched's own."""

    def __init__(self, nova_conf, own_conf):
        self._nova = nova_conf
        self._own = own_conf

    def __getattr__(self, name):
        try:
            value = getattr(self._nova, name)
        except cfg.NoSuchOptError:
            return getattr(self._own, name)
        if isinstance(value, cfg.ConfigOpts.GroupAttr):
            return NovaOptions(value, getattr(self._own, name, None))
        return value

    def set_override(self, name, override, group=None):
        try:
            getattr(self._nova, name)
        except cfg.NoSuchOptError:
            return self._own.set_override(name, override, group)
        return self._nova.set_override(name, override, group)


class _Redirected(types.ModuleType):
    """A Nova module name standing for a minisched module (``target``) plus adapters."""

    def __init__(self, name, target, names, missing=None):
        super().__init__(name)
        self.__dict__.update(names)
        self.__dict__['_target'] = target
        self.__dict__['_missing'] = missing

    def __getattr__(self, name):
        target = self.__dict__['_target']
        if target is None:
            raise AttributeError('%s has no %r: %s' % (self.__name__, name,
                                                        self.__dict__['_missing']))
        value = getattr(target, name)
        if isinstance(value, types.ModuleType):
            # minisched's submodule of that name is not Nova's: ``from nova.x import y`` must
            # fall back to importing ``nova.x.y``, which is redirected in its own right.
            raise AttributeError('%s.%s is not redirected here' % (self.__name__, name))
        return value

    def _forwarded(self, name):
        target = self.__dict__['_target']
        return (not name.startswith('__') and name not in self.__dict__ and
                target is not None and hasattr(target, name) and
                not isinstance(getattr(target, name), types.ModuleType))

    def __setattr__(self, name, value):
        if self._forwarded(name):
            setattr(self.__dict__['_target'], name, value)
        else:
            super().__setattr__(name, value)

    def __delattr__(self, name):
        if self._forwarded(name):
            delattr(self.__dict__['_target'], name)
        else:
            super().__delattr__(name)


class _Loader(importlib.abc.Loader):
    def __init__(self, factory):
        self._factory = factory

    def create_module(self, spec):
        return self._factory(spec.name)

    def exec_module(self, module):
        pass


class _Finder(importlib.abc.MetaPathFinder):
    """Answers the redirected names before Python looks on disk."""

    def __init__(self, factories, packages):
        self._factories = factories
        self._packages = packages

    def find_spec(self, fullname, path=None, target=None):
        factory = self._factories.get(fullname)
        if factory is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(factory),
                                              is_package=fullname in self._packages)


class Redirector:
    """Builds the stand-in modules; :attr:`adapters` maps minisched classes to adapters."""

    def __init__(self, options, import_errors):
        self.options = options
        self.import_errors = import_errors
        self.adapters = {}

    def adapter(self, cls, module_name):
        """The no-argument subclass of the minisched plugin ``cls`` (made once)."""
        adapted = self.adapters.get(cls)
        if adapted is None:
            options = self.options

            def __init__(self, *args, **kwargs):
                cls.__init__(self, options, *args, **kwargs)

            adapted = type(cls.__name__, (cls,), {
                '__init__': __init__, '__module__': module_name, '__doc__': cls.__doc__,
                '__qualname__': cls.__name__})
            self.adapters[cls] = adapted
        return adapted

    def adapted(self, classes):
        """Adapters of minisched plugin classes (as Nova's loaders would return classes)."""
        return [self.adapter(cls, _nova_module_of(cls)) for cls in classes]

    def plugin_module(self, nova_name, ms_name, base):
        """Stand-in for a Nova plugin module: adapters of the plugins ``ms_name`` defines."""
        try:
            target = importlib.import_module(ms_name)
        except ImportError as exc:
            missing = self.import_errors.get(ms_name) or '%s is not there (%s)' % (ms_name, exc)
            return _Redirected(nova_name, None, {}, missing=missing)
        names = {}
        for attr, value in vars(target).items():
            if (inspect.isclass(value) and issubclass(value, base) and
                    value.__module__ == ms_name and not inspect.isabstract(value)):
                names[attr] = self.adapter(value, nova_name)
        return _Redirected(nova_name, target, names)

    def install(self):
        from minisched.scheduler import filters
        from minisched.scheduler import host_manager
        from minisched.scheduler import host_state
        from minisched.scheduler import weights

        factories = {}
        for nova_mod, ms_mod in FILTER_MODULES.items():
            factories['nova.scheduler.filters.' + nova_mod] = self._plugin_factory(
                'minisched.scheduler.filters.' + ms_mod, filters.BaseHostFilter)
        for nova_mod, ms_mod in WEIGHER_MODULES.items():
            factories['nova.scheduler.weights.' + nova_mod] = self._plugin_factory(
                'minisched.scheduler.weights.' + ms_mod, weights.BaseHostWeigher)
        for nova_name, ms_name in SHARED_MODULES.items():
            factories[nova_name] = lambda name, ms_name=ms_name: importlib.import_module(ms_name)
        factories['nova.filters'] = self._base_filters
        factories['nova.scheduler.filters'] = self._filters_package
        factories['nova.scheduler.weights'] = self._weights_package
        factories['nova.scheduler.host_manager'] = lambda name: _Redirected(
            name, host_manager, {'HostState': host_state.HostState})
        packages = {'nova.scheduler.filters', 'nova.scheduler.weights'}
        for name in factories:
            if name in sys.modules:
                raise RuntimeError('%s was imported before the redirection' % name)
        sys.meta_path.insert(0, _Finder(factories, packages))

    def _plugin_factory(self, ms_name, base):
        return lambda name: self.plugin_module(name, ms_name, base)

    def _base_filters(self, name):
        """``nova.filters``: Nova's generic filter base and handler."""
        from minisched.scheduler import filters
        base = self.adapter(filters.BaseHostFilter, name)
        # Nova's BaseFilter is concrete (every object passes); minisched's base is abstract.
        base_filter = type('BaseFilter', (base,), {
            '__module__': name, '__qualname__': 'BaseFilter',
            'host_passes': lambda self, host_state, spec_obj: True})
        return _Redirected(name, filters, {
            'BaseFilter': base_filter,
            'BaseFilterHandler': self._handler(filters.HostFilterHandler, name,
                                               'BaseFilterHandler')})

    def _filters_package(self, name):
        from minisched.scheduler import filters
        from minisched.scheduler import plugins
        return _Redirected(name, filters, {
            '__path__': [],
            'BaseHostFilter': self.adapter(filters.BaseHostFilter, name),
            'HostFilterHandler': self._handler(filters.HostFilterHandler, name,
                                               'HostFilterHandler', plugins.FILTERS,
                                               plugins.ALL_FILTERS),
            'all_filters': lambda: self.adapted(filters.all_filters()),
        })

    def _weights_package(self, name):
        from minisched.scheduler import plugins
        from minisched.scheduler import weights
        return _Redirected(name, weights, {
            '__path__': [],
            'BaseHostWeigher': self.adapter(weights.BaseHostWeigher, name),
            'HostWeightHandler': self._handler(weights.HostWeightHandler, name,
                                               'HostWeightHandler', plugins.WEIGHERS,
                                               plugins.ALL_WEIGHERS),
            'all_weighers': lambda: self.adapted(weights.all_weighers()),
        })

    def _handler(self, cls, module_name, class_name, namespace=None, all_alias=None):
        """A handler taking Nova's optional loader argument; ``get_matching_classes`` (Nova's
        ``BaseLoader`` method) is answered by minisched's plugin loading, as adapters."""
        redirector = self

        def __init__(self, *args, **kwargs):
            cls.__init__(self)

        def get_matching_classes(self, loadable_class_names):
            from minisched.scheduler import plugins
            found = plugins.classes(namespace, loadable_class_names, all_alias)
            return redirector.adapted(found.values())

        return type(class_name, (cls,), {
            '__init__': __init__, '__module__': module_name, '__qualname__': class_name,
            'get_matching_classes': get_matching_classes})


#: Exceptions minisched's plugins raise where Nova's tests expect Nova's of the same name.
SHARED_EXCEPTIONS = ('ComputeHostMetricNotFound',)


#: minisched modules whose object layer, here, is Nova's: ``{module: {name: Nova module}}``.
#: ImagePropertiesWeigher reads the host's instances through ``objects`` (CellMapping,
#: InstanceList.fill_metadata, Instance.image_meta) and ``ms_context`` (admin context,
#: target_cell) with Nova's names and calls; Nova's tests stub and count exactly those, on
#: Nova's objects, as they hand Nova's objects to every other plugin.
DATA_LAYERS = {
    'minisched.scheduler.weights.image_props': {
        'objects': 'nova.objects', 'ms_context': 'nova.context', 'exception': 'nova.exception'},
    # HostState parses a compute node's numa_topology text with objects.NUMATopology: Nova's
    # tests give it Nova's text and expect Nova's object back.
    'minisched.scheduler.host_state': {'objects': 'nova.objects'},
}


#: minisched modules whose helper module of that name answers with Nova's function while a
#: test patches it there: ``{module: {name: (Nova module, minisched module)}}``. Nova's
#: NUMATopologyFilter tests ``mock.patch('nova.virt.hardware.numa_fit_instance_to_host')``
#: to count the fits per allocation candidate; unpatched, minisched's own fit runs.
PATCHED_THROUGH = {
    'minisched.scheduler.filters.numa_topology': {
        'hardware': ('nova.virt.hardware', 'minisched.virt.hardware')},
}


class _PatchedThrough(types.ModuleType):
    """A minisched module, except for the names a test has patched in a Nova module."""

    def __init__(self, nova_module, own_module):
        super().__init__(own_module.__name__)
        self.__dict__['_nova'] = nova_module
        self.__dict__['_own'] = own_module
        self.__dict__['_unpatched'] = dict(vars(nova_module))

    def __getattr__(self, name):
        nova_value = getattr(self._nova, name, None)
        if name in self._unpatched and nova_value is not self._unpatched[name]:
            return nova_value
        return getattr(self._own, name)


def redirect_after_import():
    """The redirections of names inside Nova modules (call once Nova is imported).

    ``nova.servicegroup.API`` becomes minisched's (ComputeFilter's), and the exceptions of
    :data:`SHARED_EXCEPTIONS` minisched's, so that Nova's ``assertRaises`` catch them; the
    modules of :data:`DATA_LAYERS` read through Nova's objects and context, and those of
    :data:`PATCHED_THROUGH` see Nova's functions that a test patches.
    """
    import nova.exception
    import nova.servicegroup

    from minisched import exception
    from minisched import servicegroup
    nova.servicegroup.API = servicegroup.API
    for name in SHARED_EXCEPTIONS:
        setattr(nova.exception, name, getattr(exception, name))
    for module_name, names in DATA_LAYERS.items():
        module = importlib.import_module(module_name)
        for name, nova_module in names.items():
            setattr(module, name, importlib.import_module(nova_module))
    for module_name, names in PATCHED_THROUGH.items():
        module = importlib.import_module(module_name)
        for name, (nova_module, own_module) in names.items():
            setattr(module, name, _PatchedThrough(importlib.import_module(nova_module),
                                                  importlib.import_module(own_module)))
