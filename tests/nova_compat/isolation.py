"""Let Nova and minisched share one process: the Nova test server calls :func:`install` first.

Both projects fill two process-wide registries, and would overwrite each other's entries:

- **options**: importing ``minisched.conf`` registers minisched's options on ``cfg.CONF``, and
  importing ``nova.conf`` registers Nova's there too (same names, other help and defaults).
  minisched is imported while ``cfg.CONF`` is a private ``ConfigOpts``, so every minisched
  module binds that one; Nova's tests then have the global ``cfg.CONF`` to themselves.
- **versioned objects**: oslo.versionedobjects keeps a single registry of classes by object
  name for every project, so Nova's ``ComputeNode`` and minisched's would replace each other
  and a lookup by name (``obj_from_primitive``) could build the other project's class.
  minisched's classes (namespace ``minisched``) are registered and looked up in a registry of
  their own; Nova's keep the shared one, which Nova's test base saves and restores per test.

This module patches oslo.versionedobjects in the test server process only; nothing in
minisched knows about it. (``minisched.conf`` also changes two oslo.messaging option defaults
at import, ``control_exchange`` and ``amqp_durable_queues``; no Nova test here reads them.)
"""
import collections
import importlib
import pkgutil
import traceback

from oslo_config import cfg
from oslo_utils import versionutils
from oslo_versionedobjects import base as ovo_base
from oslo_versionedobjects import exception as ovo_exception

NAMESPACE = 'minisched'
#: Module name -> traceback, for the plugin modules that failed to import (a half-written
#: module must cost its own tests only).
IMPORT_ERRORS = {}
#: minisched's object classes by name, newest version first (oslo's layout).
_OWN_CLASSES = collections.defaultdict(list)
#: The packages whose every module is imported under the private options: the ones the
#: redirected Nova modules reach, plus objects (which read options at import).
_PACKAGES = ('minisched.scheduler.filters', 'minisched.scheduler.weights')
_MODULES = ('minisched.conf', 'minisched.objects', 'minisched.scheduler.host_manager',
            'minisched.scheduler.host_state', 'minisched.scheduler.plugins',
            'minisched.servicegroup')


def install():
    """Split the object registry, then import minisched with private options.

    :returns: the ``ConfigOpts`` holding minisched's options (defaults, no config file)
    """
    _split_object_registry()
    return _import_minisched()


def _split_object_registry():
    register_class = ovo_base.VersionedObjectRegistry._register_class

    def _register_class(registry, cls):
        if cls.OBJ_PROJECT_NAMESPACE == NAMESPACE:
            registry._obj_classes = _OWN_CLASSES  # this registry instance serves one call
        register_class(registry, cls)

    class_from_name = ovo_base.VersionedObject.obj_class_from_name.__func__

    def obj_class_from_name(cls, objname, objver):
        if cls.OBJ_PROJECT_NAMESPACE != NAMESPACE:
            return class_from_name(cls, objname, objver)
        return _own_class(objname, objver)

    ovo_base.VersionedObjectRegistry._register_class = _register_class
    ovo_base.VersionedObject.obj_class_from_name = classmethod(obj_class_from_name)


def _own_class(objname, objver):
    """oslo's rule over minisched's classes: the exact version, else the newest compatible."""
    classes = _OWN_CLASSES.get(objname)
    if not classes:
        raise ovo_exception.UnsupportedObjectError(objtype=objname)
    compatible = [c for c in classes if versionutils.is_compatible(objver, c.VERSION)]
    for cls in classes:
        if cls.VERSION == objver:
            return cls
    if compatible:
        return compatible[0]
    raise ovo_exception.IncompatibleObjectVersion(objname=objname, objver=objver,
                                                  supported=classes[0].VERSION)


def _import_minisched():
    shared = cfg.CONF
    private = cfg.ConfigOpts()
    cfg.CONF = private
    try:
        for name in _MODULES:
            importlib.import_module(name)
        importlib.import_module('minisched.objects').register_all()
        for package_name in _PACKAGES:
            package = importlib.import_module(package_name)
            for info in pkgutil.iter_modules(package.__path__):
                name = '%s.%s' % (package_name, info.name)
                try:
                    importlib.import_module(name)
                except Exception:
                    IMPORT_ERRORS[name] = traceback.format_exc()
    finally:
        cfg.CONF = shared
    private([], project='minisched', default_config_files=[], default_config_dirs=[])
    return private
