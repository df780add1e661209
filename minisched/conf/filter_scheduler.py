"""[filter_scheduler] and [metrics] options: which filters and weighers run, and their knobs."""
from oslo_config import cfg

GROUP = cfg.OptGroup('filter_scheduler', title='Filter scheduler',
                     help='How the filter scheduler narrows and orders candidate hosts.')
METRICS_GROUP = cfg.OptGroup('metrics', title='Metrics', help="""
Host metrics used by MetricsFilter and MetricsWeigher.""")

#: Nova 34's default list: Placement's allocation candidates do the resource gating.
DEFAULT_FILTERS = [
    'ComputeFilter', 'ComputeCapabilitiesFilter', 'ImagePropertiesFilter',
    'ServerGroupAntiAffinityFilter', 'ServerGroupAffinityFilter',
]
#: Ocata's default list, the one that applies without Placement (``[placement] enabled =
#: false``) while ``enabled_filters`` is left unset: RamFilter and DiskFilter gate resources.
LEGACY_FILTERS = [
    'RetryFilter', 'AvailabilityZoneFilter', 'RamFilter', 'DiskFilter', 'ComputeFilter',
    'ComputeCapabilitiesFilter', 'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
    'ServerGroupAffinityFilter',
]
ALL_FILTERS = 'minisched.scheduler.filters.all_filters'
ALL_WEIGHERS = 'minisched.scheduler.weights.all_weighers'

OPTS = [
    cfg.IntOpt('host_subset_size', default=1, min=1,
               deprecated_opts=[cfg.DeprecatedOpt('scheduler_host_subset_size')], help="""
The scheduler picks at random among this many best-weighed hosts. 1 always
takes the best host; larger values spread concurrent requests and reduce
claim races."""),
    cfg.BoolOpt('shuffle_best_same_weighed_hosts', default=False, help="""
Shuffle the hosts that tie for the best weight before the subset pick."""),
    cfg.IntOpt('max_io_ops_per_host', default=8, min=0, help="""
IoOpsFilter rejects hosts with this many or more concurrent I/O-heavy
operations."""),
    cfg.IntOpt('max_instances_per_host', default=50, min=1, help="""
NumInstancesFilter rejects hosts with this many or more instances."""),
    cfg.BoolOpt('track_instance_changes', default=True, help="""
Computes send their instance lists to the schedulers
(``update_instance_info`` and friends) and the schedulers keep them, instead
of reading instances from the database per request. Read by both the
scheduler and the compute."""),
    cfg.IntOpt('consumption_ttl_seconds', default=120, min=1, help="""
Seconds a scheduler worker keeps the resources it took from a host it chose
while no newer record of that host follows.

Each worker subtracts an instance's resources (RAM, disk, vCPUs, NUMA
cells, PCI devices, I/O operations) from its copy of the chosen host at
once, so that the next requests see them used before the compute reports.
A compute node record written after the choice replaces that copy; when
none comes (the build never reached the compute, or the compute stopped
reporting), the consumption is dropped after this many seconds and the
host is seen as last reported. Dry runs (``minisched-manage scheduler
select``) consume nothing that outlives their request.

Lower values give the capacity of abandoned builds back sooner, but a host
whose reports take longer than this may be offered more than it has (its
claims then fail and the builds are rescheduled); higher values keep
abandoned capacity unused longer. Valid values: an integer of at least 1.
Keep it above the computes' resource update interval (60 s by default).
Nova has no such setting: its scheduler rebuilds host states from the
database for every request.

Related options: ``[DEFAULT] update_resources_interval``"""),
    cfg.MultiStrOpt('available_filters', default=[ALL_FILTERS], help="""
Filters the scheduler may use: entry point names, dotted paths to filter
classes or to functions returning them, or Nova's names of its filters.

Each value is one of:

* an entry point name in ``minisched.scheduler.filters`` (``RamFilter``);
* a dotted path to a filter class, e.g. one of your own package subclassing
  ``minisched.scheduler.filters.BaseHostFilter``;
* a dotted path to a function returning filter classes, such as
  ``minisched.scheduler.filters.all_filters`` (every installed filter);
* Nova's names, so that a nova.conf works unchanged:
  ``nova.scheduler.filters.all_filters`` (every installed filter) and
  ``nova.scheduler.filters.<module>.<Class>`` (the filter installed as
  ``<Class>``).

An unknown name stops the scheduler at start-up.

Related options: ``enabled_filters``"""),
    cfg.ListOpt('enabled_filters', default=DEFAULT_FILTERS,
                deprecated_name='scheduler_default_filters', deprecated_group='DEFAULT', help="""
Filters applied to each request, in this order. Each must be among
``available_filters``; an unknown name stops the scheduler at start-up.

The default is Nova 34's list: Placement's allocation candidates have
already left out the hosts without room for the request's resources. Left
unset with ``[placement] enabled = false``, the list is Ocata's instead
(RetryFilter, AvailabilityZoneFilter, RamFilter, DiskFilter, ComputeFilter,
ComputeCapabilitiesFilter, ImagePropertiesFilter,
ServerGroupAntiAffinityFilter, ServerGroupAffinityFilter): without
Placement the resource filters do that work. A value set here is used as
given on both paths.

Related options: ``available_filters``, ``weight_classes``,
``[placement] enabled``"""),
    cfg.ListOpt('weight_classes', default=[ALL_WEIGHERS], help="""
Weighers that order the hosts that passed the filters, in this order: entry
point names, dotted paths to weigher classes or to functions returning them,
or Nova's names of its weighers.

Each value is one of:

* an entry point name in ``minisched.scheduler.weights`` (``RAMWeigher``);
* a dotted path to a weigher class, e.g. one of your own package subclassing
  ``minisched.scheduler.weights.BaseHostWeigher``;
* a dotted path to a function returning weigher classes, such as
  ``minisched.scheduler.weights.all_weighers`` (every installed weigher);
* Nova's names, so that a nova.conf works unchanged:
  ``nova.scheduler.weights.all_weighers`` (every installed weigher) and
  ``nova.scheduler.weights.<module>.<Class>`` (the weigher installed as
  ``<Class>``).

An unknown name stops the scheduler at start-up."""),
    cfg.BoolOpt('use_baremetal_filters', default=False, help="""
With ``ironic_host_manager``: use ``baremetal_enabled_filters`` instead of
``enabled_filters``."""),
    cfg.ListOpt('baremetal_enabled_filters', default=[
        'RetryFilter', 'AvailabilityZoneFilter', 'ComputeFilter', 'ComputeCapabilitiesFilter',
        'ImagePropertiesFilter', 'ExactRamFilter', 'ExactDiskFilter', 'ExactCoreFilter'],
        help='Filters for baremetal nodes when ``use_baremetal_filters`` is set.'),
    cfg.FloatOpt('ram_weight_multiplier', default=1.0, help="""
Multiplier for RAMWeigher. Positive spreads instances over hosts with more
free RAM, negative stacks them."""),
    cfg.FloatOpt('cpu_weight_multiplier', default=1.0, help="""
Multiplier for CPUWeigher. Positive prefers hosts with more free vCPUs,
negative stacks."""),
    cfg.FloatOpt('disk_weight_multiplier', default=1.0, help="""
Multiplier for DiskWeigher. Positive prefers hosts with more free disk,
negative stacks."""),
    cfg.FloatOpt('io_ops_weight_multiplier', default=-1.0, help="""
Multiplier for IoOpsWeigher. Negative (default) prefers lightly loaded
hosts."""),
    cfg.FloatOpt('pci_weight_multiplier', default=1.0, min=0.0,
                 help='Multiplier for PCIWeigher.'),
    cfg.FloatOpt('soft_affinity_weight_multiplier', default=1.0, min=0.0,
                 help='Multiplier for ServerGroupSoftAffinityWeigher.'),
    cfg.FloatOpt('soft_anti_affinity_weight_multiplier', default=1.0, min=0.0,
                 help='Multiplier for ServerGroupSoftAntiAffinityWeigher.'),
    cfg.FloatOpt('build_failure_weight_multiplier', default=1000000.0, help="""
Multiplier for BuildFailureWeigher: hosts with recent failed builds weigh
less by this much times their normalised failure count."""),
    cfg.FloatOpt('cross_cell_move_weight_multiplier', default=1000000.0, help="""
Multiplier for CrossCellWeigher: during a move, hosts in the instance's
current cell are preferred by this much."""),
    cfg.FloatOpt('hypervisor_version_weight_multiplier', default=1.0, help="""
Multiplier for HypervisorVersionWeigher. Positive prefers newer hypervisors."""),
    cfg.FloatOpt('num_instances_weight_multiplier', default=0.0, help="""
Multiplier for NumInstancesWeigher. Positive prefers hosts with more
instances (pack), negative fewer (spread). 0 (default) turns it off."""),
    cfg.FloatOpt('image_props_weight_multiplier', default=0.0, help="""
Multiplier for ImagePropertiesWeigher. Positive prefers hosts whose instances
run images with the requested image's properties (pack), negative the
others (spread). 0 (default) turns it off.

The weigher counts, per host, the instances whose image shares each property
(name and value) of the requested image, reading the instances' image
properties from their cell database; it reads nothing while this is 0. An
aggregate's ``image_props_weight_multiplier`` metadata overrides the value
for its hosts, but cannot turn the weigher on while this is 0.

Related options: ``image_props_weight_setting``, ``weight_classes``"""),
    cfg.ListOpt('image_props_weight_setting', default=[], help="""
Image properties ImagePropertiesWeigher counts, with their ratios, as
``name=ratio`` pairs, e.g. ``os_distro=1.0,hw_machine_type=-1.0``.

Empty (default): every property counts, each with ratio 1. Otherwise a
shared property adds the number of instances having it times its ratio, and
a property not listed (or listed with ratio 0) adds nothing. Malformed pairs
are ignored with a warning.

Related options: ``image_props_weight_multiplier``"""),
    cfg.StrOpt('image_properties_default_architecture', help="""
Architecture assumed by ImagePropertiesFilter for images without
``hw_architecture``."""),
    cfg.ListOpt('isolated_images', default=[],
                help='Image ids that may only run on isolated hosts (IsolatedHostsFilter).'),
    cfg.ListOpt('isolated_hosts', default=[],
                help='Hosts reserved for isolated images (IsolatedHostsFilter).'),
    cfg.BoolOpt('restrict_isolated_hosts_to_isolated_images', default=True,
                help='Isolated hosts accept only isolated images.'),
    cfg.StrOpt('aggregate_image_properties_isolation_namespace', help="""
Only aggregate metadata keys with this prefix are checked by
AggregateImagePropertiesIsolation."""),
    cfg.StrOpt('aggregate_image_properties_isolation_separator', default='.',
               help='Separator between that namespace and the property name.'),
]

METRICS_OPTS = [
    cfg.FloatOpt('weight_multiplier', default=1.0, help='Multiplier for MetricsWeigher.'),
    cfg.ListOpt('weight_setting', default=[], help="""
Metrics to weigh and their ratios, as ``name=ratio`` pairs, e.g.
``cpu.frequency=1.0``."""),
    cfg.BoolOpt('required', default=True, help="""
True: a host missing a weighed metric makes MetricsWeigher raise; False: it
gets ``weight_of_unavailable``."""),
    cfg.FloatOpt('weight_of_unavailable', default=-10000.0,
                 help='Weight of a host missing a metric when ``required`` is False.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)
    conf.register_group(METRICS_GROUP)
    conf.register_opts(METRICS_OPTS, group=METRICS_GROUP)


def list_opts():
    return {GROUP: OPTS, METRICS_GROUP: METRICS_OPTS}


def enabled_filters(conf):
    """The filters each request runs through: ``enabled_filters`` as set, or its default for
    the path ``[placement] enabled`` chooses (Nova 34's with Placement, Ocata's without)."""
    names = conf.filter_scheduler.enabled_filters
    if conf.placement.enabled:
        return names
    location = conf.get_location('enabled_filters', GROUP.name)
    if location is None or location.location in (cfg.Locations.opt_default,
                                                  cfg.Locations.set_default):
        return list(LEGACY_FILTERS)
    return names
