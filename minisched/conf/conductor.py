"""[conductor] options."""
from oslo_config import cfg

GROUP = cfg.OptGroup('conductor', title='Conductor', help="""
The conductor executes the database work of services that have no database
access (compute) and drives the build flow.""")

OPTS = [
    cfg.IntOpt('workers', min=1, help="""
Number of conductor worker processes. Default: the number of CPUs."""),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return {GROUP: OPTS}
