"""[upgrade_levels] RPC version caps for rolling upgrades."""
from oslo_config import cfg

GROUP = cfg.OptGroup('upgrade_levels', title='Upgrade levels', help="""
Caps on the RPC API versions a service sends, so that a mixed-version
deployment keeps working during a rolling upgrade. Each value is a version
(``4.4``) or a release alias.""")

OPTS = [
    cfg.StrOpt('scheduler', help="""
Cap for the scheduler RPC API. Aliases: grizzly (2.6), havana (2.9),
icehouse/juno (3.0), kilo/liberty (4.2), mitaka/newton/ocata (4.3), pike
(4.4)."""),
    cfg.StrOpt('conductor', help='Cap for the conductor RPC API (aliases up to ocata mean 3.0).'),
    cfg.StrOpt('compute', help="""
Cap for the compute RPC API: a version (``5.0``, ``6.0``...), one of Nova's
release names (``rocky`` means 5.0, ``wallaby`` 6.0, ``hibiscus`` 6.5...), or
``auto``: the compute RPC version of the oldest compute's service version,
read from the service records. Unset, messages go at 6.0, as Nova 34 sends
them; under a cap below 6.0, at the 5.x version of the same message."""),
    cfg.StrOpt('baseapi', help='Cap for the base RPC API shared by every service.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return {GROUP: OPTS}
