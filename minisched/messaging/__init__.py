"""The RPC layer under :mod:`minisched.rpc`, and the tools that watch it.

:mod:`minisched.rpc` (transports, clients, servers, serializers: Nova's ``nova/rpc.py``) and
:mod:`minisched.baserpc` stay at the package root, as in Nova; what they rely on is here.

What a service does with the messages that arrive, before and around its endpoints (the
overview is :mod:`~minisched.messaging.incoming`'s docstring):

* :mod:`~minisched.messaging.incoming`: the checks in oslo.messaging's rabbit driver (size,
  decoding, duplicates), the private parts of oslo.messaging they hook into, ``configure``;
* :mod:`~minisched.messaging.monitored_dispatcher`: the servers' dispatcher, refusing
  malformed messages before any endpoint runs;
* :mod:`~minisched.messaging.call_monitor`: call-monitor heartbeats from one thread;
* :mod:`~minisched.messaging.incoming_log`: the rate-limited reports of refused messages;
* :mod:`~minisched.messaging.large_messages`: memory a large message held, given back.

Around the calls and servers:

* :mod:`~minisched.messaging.admission`: the conductor's RPC server, which lets the messages
  of work under way pass the messages that start work;
* :mod:`~minisched.messaging.bus_errors`: the errors of the message bus that pass by
  themselves.

Watching the traffic:

* :mod:`~minisched.messaging.tap` and :mod:`~minisched.messaging.tap_events`: a live copy of
  the RPC traffic (``minisched-manage rpc tap``): the broker side, and the events it makes of
  each message;
* :mod:`~minisched.messaging.trace`, :mod:`~minisched.messaging.trace_db` and
  :mod:`~minisched.messaging.trace_files`: the opt-in trace of what each process spends on RPC
  and the database, its database hooks, and the reading of its files.
"""
