"""Modules loaded on first use, for the database stack of processes that may never use it.

A compute has no database access (its objects' remotable methods go through the conductor),
yet it imports the objects, and they name their DB API modules: importing SQLAlchemy, its
ORM and oslo.db for nothing took a quarter of a compute's start-up CPU. ``module(name)``
returns the module already imported, or one whose code runs at its first attribute access
(:class:`_LazyModule`, thread-safe); the parent packages are imported at once, and a later
``import name`` anywhere gets the same module object.
"""
import importlib.util
import sys
import threading
import types

_lock = threading.Lock()


class _LazyModule(types.ModuleType):
    """A module whose code has not run yet: the first attribute access runs it, once.

    Unlike ``importlib.util.LazyLoader`` before Python 3.12, safe with native threads: the
    thread that runs the code holds the module's lock, and every other thread waits for the
    module to be complete (LazyLoader makes the module an ordinary one before its code runs,
    so another thread could read it half-executed: an AttributeError for a name defined
    further down). The running thread's own accesses (a circular import) see the module as
    it is so far, as a normal import does."""

    def __getattribute__(self, attr):
        state = _pending.get(id(self))
        if state is not None:
            lock, loading = state
            with lock:
                if _pending.get(id(self)) is state and threading.get_ident() not in loading:
                    loading.add(threading.get_ident())
                    try:
                        spec = types.ModuleType.__getattribute__(self, '__spec__')
                        spec.loader.exec_module(self)
                    finally:
                        loading.discard(threading.get_ident())
                    self.__class__ = types.ModuleType
                    del _pending[id(self)]
        return types.ModuleType.__getattribute__(self, attr)


#: id(module) -> (its lock, the threads running its code) while its code has not run.
_pending = {}


def module(name):
    """Module ``name``, imported now if it already was, else at its first attribute access."""
    with _lock:
        loaded = sys.modules.get(name)
        if loaded is not None:
            return loaded
        spec = importlib.util.find_spec(name)
        if spec is None:
            raise ImportError('No module named %r' % name, name=name)
        deferred = importlib.util.module_from_spec(spec)
        _pending[id(deferred)] = (threading.RLock(), set())
        deferred.__class__ = _LazyModule
        sys.modules[name] = deferred
        parent, _, child = name.rpartition('.')
        if parent:
            # As the import system does: the package's attribute names its submodule.
            setattr(sys.modules[parent], child, deferred)
        return deferred
