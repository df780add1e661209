"""What installed Nova 34 says of the wire facts minisched copies, as JSON on stdout.

Run as ``python -m tests.nova_compat.nova_wire_facts`` with the names of
:data:`minisched.messaging.wire.NOVA_EXCEPTIONS` as JSON on stdin: a Nova process (Nova
registers its options on ``cfg.CONF`` at import), which imports nothing of minisched.
"""
import inspect
import json
import sys


def exception_facts(names):
    """{name: problem or None}: each must be a NovaException of ``nova.exception`` that
    oslo.messaging can rebuild as minisched sends it, ``cls(message, **kwargs)``."""
    from nova import exception
    facts = {}
    for name in names:
        cls = getattr(exception, name, None)
        if not (isinstance(cls, type) and issubclass(cls, exception.NovaException)):
            facts[name] = 'not a NovaException of nova.exception'
            continue
        try:
            error = cls('a message', reason='r', code=500)
        except Exception as exc:  # what Nova's client would get instead: RemoteError
            facts[name] = 'cannot be rebuilt: %s: %s' % (type(exc).__name__, exc)
            continue
        facts[name] = None if str(error) == 'a message' else 'message %r' % str(error)
    return facts


def version_facts():
    from nova.compute import manager as compute_manager
    from nova.compute import rpcapi as compute_rpcapi
    from nova.conductor import manager as conductor_manager
    from nova.objects import service
    task_methods = sorted(
        name for name, value in vars(conductor_manager.ComputeTaskManager).items()
        if inspect.isfunction(value) and not name.startswith('_') and name != 'reset')
    return {
        'service_version': service.SERVICE_VERSION,
        'compute_rpc_history': [entry['compute_rpc']
                                for entry in service.SERVICE_VERSION_HISTORY],
        'compute_aliases': compute_rpcapi.ComputeAPI.VERSION_ALIASES,
        'compute_target': compute_manager.ComputeManager.target.version,
        'compute_v5_target': compute_manager._ComputeV5Proxy.target.version,
        'compute_task_target': conductor_manager.ComputeTaskManager.target.version,
        'compute_task_methods': task_methods,
    }


def main():
    names = json.load(sys.stdin)
    from nova import exception
    every = sorted(name for name, value in vars(exception).items()
                   if isinstance(value, type) and issubclass(value, exception.NovaException))
    json.dump({'exceptions': exception_facts(names), 'versions': version_facts(),
               'every_exception': every}, sys.stdout)


if __name__ == '__main__':
    main()
