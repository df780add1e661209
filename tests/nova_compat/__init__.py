"""Nova 34.0.0's own scheduler unit tests, run against minisched's filters, weighers and HostState.

Nothing here imports Nova or minisched at import time: the Nova tests run in a process of their
own (:mod:`tests.nova_compat.server`), where :mod:`tests.nova_compat.isolation` and
:mod:`tests.nova_compat.redirect` are set up before either is imported.
"""
