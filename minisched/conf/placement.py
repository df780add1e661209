"""[placement] options: whether minisched uses Placement, and how to reach it (keystoneauth1).

As Nova's ``[placement]`` group: keystoneauth1's Session, auth and Adapter options, registered
with ``keystoneauth1.loading``, less the Adapter's version options (the microversions are the
code's choice, not the operator's). The auth plugin's own options (``endpoint`` and ``token``
of ``admin_token``, ``username`` ... of ``password``) are registered when the client loads
the plugin named by ``auth_type``, as in Nova.
"""
import textwrap

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

GROUP = cfg.OptGroup('placement', title='Placement Service Options', help="""
Whether minisched uses the Placement service, and how its services reach it.

With Keystone, as Nova: ``auth_type = password`` and its options. Without
Keystone (Placement's ``[api] auth_strategy = noauth2``, as
``minisched-cluster`` runs it): ``auth_type = admin_token``,
``endpoint = http://127.0.0.1:<port>`` and ``token = admin`` (noauth2
takes the token ``admin`` as a user with the admin role).""")

DEFAULT_SERVICE_TYPE = 'placement'
#: The Adapter's version options, which Nova leaves out: the code picks microversions.
_ADAPTER_VERSION_OPTS = ('version', 'min_version', 'max_version')
_HELP_WIDTH = 76

ENABLED_OPT = cfg.BoolOpt('enabled', default=True, help="""
Use the Placement service, as Nova has since Ocata: computes report their
resource providers, inventories, traits and aggregates to it, and the
scheduler asks it for allocation candidates and claims the chosen host's
allocations before it answers. True (the default) is Nova 34's path; set the
same value on every service of a cluster.

False: the path without Placement, as an Ocata FilterScheduler without
allocation candidates: resources are gated by RamFilter, DiskFilter (and
CoreFilter where enabled) and by the compute's own claim, a Selection
carries no allocation request, and ``[filter_scheduler] enabled_filters``,
when not set, is Ocata's list. minisched's own setting: Nova has no path
without Placement since Pike.

Related options: the other ``[placement]`` options (how to reach it),
``[filter_scheduler] enabled_filters``""")


def _wrapped(opts):
    """keystoneauth1's options with their help wrapped for the sample config."""
    for opt in opts:
        opt.help = '\n'.join(textwrap.fill(paragraph, _HELP_WIDTH)
                             for paragraph in (opt.help or '').split('\n'))
    return opts


def _adapter_opts():
    opts = [opt for opt in ks_loading.get_adapter_conf_options(include_deprecated=False)
            if opt.dest not in _ADAPTER_VERSION_OPTS]
    cfg.set_defaults(opts, valid_interfaces=['internal', 'public'],
                     service_type=DEFAULT_SERVICE_TYPE)
    return opts


#: Built once: the options listed for the sample are the very ones registered.
KSA_OPTS = _wrapped(ks_loading.get_session_conf_options()
                    + ks_loading.get_auth_common_conf_options() + _adapter_opts())


def _ignored_opt(name):
    """An option nobody can set, present because keystoneauth1's Adapter loader reads it."""
    return cfg.Opt(name, type=lambda value: None, help='Not used (the code picks it).')


#: Module constants, as the group object keeps what was registered in it.
_IGNORED_OPTS = [_ignored_opt(name) for name in _ADAPTER_VERSION_OPTS]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opt(ENABLED_OPT, group=GROUP)
    conf.register_opts(KSA_OPTS + _IGNORED_OPTS, group=GROUP)


def list_opts():
    return {GROUP: [ENABLED_OPT] + KSA_OPTS}
