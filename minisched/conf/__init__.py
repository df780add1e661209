"""Registers every minisched option on ``cfg.CONF`` at import (only ``cmd/`` reads CONF)."""
from oslo_config import cfg
import oslo_messaging

from minisched.conf import opts

CONF = cfg.CONF

# minisched's control exchange, as Nova sets 'nova': done at import so that every process
# (and the sample config generator) sees the same default, whatever it calls first.
oslo_messaging.set_transport_defaults(control_exchange='minisched')

for _module in opts._MODULES:
    _module.register_opts(CONF)
