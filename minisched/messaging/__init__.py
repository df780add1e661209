"""The RPC layer under :mod:`minisched.rpc`, and the tools that watch it.

:mod:`minisched.rpc` (transports, clients, servers, serializers: Nova's ``nova/rpc.py``) and
:mod:`minisched.baserpc` stay at the package root, as in Nova; what they rely on is here:

* :mod:`~minisched.messaging.incoming`: what a service does with the messages that arrive,
  before and around its endpoints (size, decoding, shape, call-monitor heartbeats);
* :mod:`~minisched.messaging.admission`: the conductor's RPC server that lets the messages of
  work under way pass the messages that start work;
* :mod:`~minisched.messaging.bus_errors`: the errors of the message bus that pass by
  themselves;
* :mod:`~minisched.messaging.tap`: a live copy of the RPC traffic (``minisched-manage rpc
  tap``);
* :mod:`~minisched.messaging.trace` and :mod:`~minisched.messaging.trace_files`: the opt-in
  trace of what each process spends on RPC and the database, and the reading of its files.
"""
