"""Registers every minisched option on ``cfg.CONF`` at import (only ``cmd/`` reads CONF)."""
from oslo_config import cfg

from minisched.conf import opts

CONF = cfg.CONF

for _module in opts._MODULES:
    _module.register_opts(CONF)
