"""Registers every minisched option on ``cfg.CONF`` at import (only ``cmd/`` reads CONF)."""
from oslo_config import cfg
import oslo_messaging

from minisched.conf import opts

CONF = cfg.CONF

# minisched's control exchange, as Nova sets 'nova': done at import so that every process
# (and the sample config generator) sees the same default, whatever it calls first.
oslo_messaging.set_transport_defaults(control_exchange='minisched')

# Durable topic queues and exchanges by default (Nova leaves them transient): a build request
# the API handed to the broker must survive a broker restart. Messages are persistent and
# publishes confirmed (oslo.messaging always asks RabbitMQ for confirms), so a cast that
# returned is on disk once the queue is durable; see README "Delivery guarantees". The option
# lives in a private module of oslo.messaging; changing the Opt's own default (not just
# CONF's) makes the sample config generator show it too.
from oslo_messaging._drivers import amqp as _amqp  # noqa: E402

cfg.set_defaults(_amqp.amqp_opts, amqp_durable_queues=True)

for _module in opts._MODULES:
    _module.register_opts(CONF)
