"""Modules loaded on first use, for the database stack of processes that may never use it.

A compute has no database access (its objects' remotable methods go through the conductor),
yet it imports the objects, and they name their DB API modules: importing SQLAlchemy, its
ORM and oslo.db for nothing took a quarter of a compute's start-up CPU. ``module(name)``
returns the module already imported, or one whose code runs at its first attribute access
(``importlib.util.LazyLoader``); the parent packages are imported at once, and a later
``import name`` anywhere gets the same module object.
"""
import importlib.util
import sys
import threading

_lock = threading.Lock()


def module(name):
    """Module ``name``, imported now if it already was, else at its first attribute access."""
    with _lock:
        loaded = sys.modules.get(name)
        if loaded is not None:
            return loaded
        spec = importlib.util.find_spec(name)
        if spec is None:
            raise ImportError('No module named %r' % name, name=name)
        loader = importlib.util.LazyLoader(spec.loader)
        spec.loader = loader
        lazy = importlib.util.module_from_spec(spec)
        sys.modules[name] = lazy
        loader.exec_module(lazy)
        parent, _, child = name.rpartition('.')
        if parent:
            # As the import system does: the package's attribute names its submodule.
            setattr(sys.modules[parent], child, lazy)
        return lazy
