"""Copied to /tmp/novashim/sitecustomize.py: stands in for the parts of Nova the oracle never
runs, so that its scheduler code imports beside today's libraries.

- ``oslo_db.concurrency`` (gone from oslo.db) and Nova's SQLAlchemy modules (Stein's do not
  import under SQLAlchemy 2): any attribute is a callable that decorates as the identity.
- ``nova.monkey_patch``: no eventlet patching in the oracle.
"""
import sys
import types

import oslo_db


class _Anything:
    def __init__(self, name='stub'):
        self._name = name

    def __getattr__(self, name):
        return _Anything(self._name + '.' + name)

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]  # used as a decorator
        return _Anything(self._name + '()')

    def __iter__(self):
        return iter(())


def _stub(name):
    module = types.ModuleType(name)
    module.__getattr__ = lambda attr: _Anything(name + '.' + attr)
    sys.modules[name] = module
    return module


oslo_db.concurrency = _stub('oslo_db.concurrency')
for _name in ('nova.db.sqlalchemy.api', 'nova.db.sqlalchemy.api_models',
              'nova.db.sqlalchemy.models', 'nova.db.sqlalchemy.utils'):
    _stub(_name)
sys.modules['nova.monkey_patch'] = types.ModuleType('nova.monkey_patch')
