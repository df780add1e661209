"""Entry points of the minisched commands.

Importing this package monkey-patches the standard library for eventlet before anything else
is imported, as Nova's ``nova/cmd/__init__.py`` does: oslo.service and oslo.messaging then run
on green threads. (``MINISCHED_EVENTLET_PATCH=0`` skips it, for tools that embed minisched.)
"""
import os
import warnings

if os.environ.get('MINISCHED_EVENTLET_PATCH', '1') != '0':
    # eventlet is the product's chosen backend (as in the Nova it reproduces); its
    # deprecation notice is for new projects and only adds noise to every command.
    warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
    import eventlet

    eventlet.monkey_patch()
