"""Helpers shared by the services, as Nova keeps its own in ``nova/utils.py``.

Work that must outlast an outage (:func:`until_done`): run it again, backing off, until it
is done or too late. A build's writes (the compute's conductor calls) and the conductor's
build tasks are run this way while the message bus, the conductor or the database is away:
1 s, then 2, 4, ... up to :data:`MAX_DELAY` s between two tries, until ``[DEFAULT]
long_rpc_timeout`` has passed.
"""
import logging
import time

LOG = logging.getLogger(__name__)

#: Longest wait between two tries.
MAX_DELAY = 30


def until_done(call, retried, seconds, describe, log=LOG):
    """``call()``'s result, ``call`` run again while it raises an error ``retried(error)``
    accepts, for at most ``seconds`` from now.

    :param describe: ``describe(error, delay)``: the WARNING logged (on ``log``, the caller's
        logger) before each new try
    :raises: the last error, when ``retried`` refuses it or the next try would start after
        the deadline
    """
    deadline = time.monotonic() + seconds
    delay = 1
    while True:
        try:
            return call()
        except Exception as exc:
            if not retried(exc) or time.monotonic() + delay > deadline:
                raise
            log.warning(describe(exc, delay))
        time.sleep(delay)
        delay = min(delay * 2, MAX_DELAY)
