"""Entry points of the minisched commands.

Importing this package changes nothing in the process: each command module chooses its
concurrency backend as its first statement (:func:`minisched.monkey_patch.patch`), as Nova
34's commands do, native threads for the three services and ``minisched-cluster``, eventlet
for ``minisched-manage`` (as nova-manage), unless ``[DEFAULT] concurrency_backend`` or
``OS_MINISCHED_DISABLE_EVENTLET_PATCHING`` say otherwise.
"""
