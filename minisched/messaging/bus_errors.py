"""Errors of the message bus that pass by themselves: the broker is away, or the reply is lost.

A conductor call fails this way while RabbitMQ restarts or is unreachable:

* ``MessagingTimeout``: no reply in time (the request or its answer was lost);
* ``MessageDeliveryFailure``: oslo.messaging's rabbit driver gave up reconnecting ("Unable
  to connect to AMQP server ... after N tries"), as every call prepared with a bounded
  ``retry`` does (``minisched.rpc`` bounds them to the call's timeout);
* a connection error of kombu or py-amqp, or a socket error, that escaped the driver.

Each is worth trying again later, as a database that is away is (``DBTransientError``); none
says that the call was refused. A remote error (the conductor answered with an exception) is
never one of them.
"""
import amqp.exceptions
import kombu.exceptions
import oslo_messaging as messaging

from minisched import exception

#: What a conductor call raises while the message bus is away.
UNREACHABLE = (messaging.MessagingTimeout, messaging.MessageDeliveryFailure,
               kombu.exceptions.OperationalError, amqp.exceptions.ConnectionError,
               ConnectionError, TimeoutError)


def is_unreachable(error):
    """Whether ``error`` says the message bus (not the callee) failed the call."""
    return isinstance(error, UNREACHABLE)


def describe(error):
    """What failed the call, in one line: the error's class and its first line (a remote
    error's later lines are its traceback)."""
    return '%s: %s' % (type(error).__name__, exception.first_line(error))
