"""Compute service options: driver, overcommit, reservations and periodic task spacing."""
from oslo_config import cfg

GROUP = 'DEFAULT'
COMPUTE_GROUP = cfg.OptGroup('compute', title='Compute', help='Compute service behaviour.')

OPTS = [
    cfg.StrOpt('compute_driver', default='fake.FakeDriver', help="""
Virt driver the compute service loads, by its entry point name in
``minisched.compute.driver``. minisched ships ``fake.FakeDriver``, whose
resources come from the ``[fake_driver]`` options."""),
    cfg.FloatOpt('cpu_allocation_ratio', default=0.0, min=0.0, help="""
Virtual CPU to physical CPU overcommit ratio written to this compute's node
record. 0.0 means "not set": the scheduler then uses its own value of this
option, or 16.0."""),
    cfg.FloatOpt('ram_allocation_ratio', default=0.0, min=0.0, help="""
Virtual RAM to physical RAM overcommit ratio written to this compute's node
record. 0.0 means "not set": the scheduler then uses its own value of this
option, or 1.5."""),
    cfg.FloatOpt('disk_allocation_ratio', default=0.0, min=0.0, help="""
Virtual disk to physical disk overcommit ratio written to this compute's
node record. 0.0 means "not set": the scheduler then uses its own value of
this option, or 1.0."""),
    cfg.FloatOpt('initial_cpu_allocation_ratio', default=4.0, min=0.0, help="""
VCPU allocation ratio of a compute node's new inventory in Placement, when
``cpu_allocation_ratio`` is not set; afterwards the ratio in Placement is
kept (an operator may change it there). As Nova's.

Related options: ``cpu_allocation_ratio``, ``[placement] enabled``"""),
    cfg.FloatOpt('initial_ram_allocation_ratio', default=1.0, min=0.0, help="""
MEMORY_MB allocation ratio of a compute node's new inventory in Placement,
when ``ram_allocation_ratio`` is not set. As Nova's.

Related options: ``ram_allocation_ratio``, ``[placement] enabled``"""),
    cfg.FloatOpt('initial_disk_allocation_ratio', default=1.0, min=0.0, help="""
DISK_GB allocation ratio of a compute node's new inventory in Placement,
when ``disk_allocation_ratio`` is not set. As Nova's.

Related options: ``disk_allocation_ratio``, ``[placement] enabled``"""),
    cfg.IntOpt('reserved_host_memory_mb', default=512, min=0,
               help='Memory in MB kept for the host; counted as used on every node.'),
    cfg.IntOpt('reserved_host_disk_mb', default=0, min=0,
               help='Disk in MB kept for the host; counted as used on every node.'),
    cfg.IntOpt('reserved_host_cpus', default=0, min=0,
               help='Number of vCPUs kept for the host; counted as used on every node.'),
    cfg.IntOpt('max_concurrent_builds', default=10, min=0,
               help='Builds a compute runs at once; 0 means unlimited.'),
    cfg.IntOpt('update_resources_interval', default=0, help="""
Seconds between resource updates of the compute node record. 0 runs the task
at the default periodic spacing (60 s); a negative value disables it."""),
    cfg.IntOpt('scheduler_instance_sync_interval', default=120, help="""
Seconds between the compute's ``sync_instance_info`` casts to the
schedulers. 0 means the default spacing (60 s); a negative value disables
the sync."""),
    cfg.IntOpt('sync_power_state_interval', default=600, help="""
Seconds between power state syncs between the database and the driver;
negative disables."""),
    cfg.IntOpt('sync_power_state_pool_size', default=5, min=1,
               help='Maximum concurrent power state syncs (threads).'),
    cfg.IntOpt('instance_build_timeout', default=0, min=0, help="""
Seconds an instance may stay in BUILDING before it is set to ERROR; 0
disables the check."""),
    cfg.IntOpt('reclaim_instance_interval', default=0, help="""
Seconds a soft-deleted instance is kept before it is reclaimed; 0 or less
disables soft delete."""),
    cfg.IntOpt('instance_delete_interval', default=300, help="""
Seconds between retries of incomplete deletes; 0 means the default spacing,
negative disables."""),
    cfg.IntOpt('maximum_instance_delete_attempts', default=5, min=1,
               help='Attempts at cleaning up a deleted instance before giving up.'),
    cfg.IntOpt('reboot_timeout', default=0, min=0,
               help='Seconds after which a stuck reboot is retried; 0 disables.'),
    cfg.IntOpt('rescue_timeout', default=0, min=0,
               help='Seconds after which a rescued instance is unrescued; 0 disables.'),
    cfg.IntOpt('resize_confirm_window', default=0, min=0,
               help='Seconds after which an unconfirmed resize is confirmed; 0 disables.'),
    cfg.IntOpt('shelved_poll_interval', default=3600,
               help='Seconds between checks for shelved instances to offload; negative disables.'),
    cfg.IntOpt('shelved_offload_time', default=0, min=-1, help="""
Seconds before a shelved instance is offloaded; 0 offloads at once, -1
never."""),
    cfg.StrOpt('running_deleted_instance_action', default='reap',
               choices=[('reap', 'power down and destroy'), ('log', 'log only'),
                        ('shutdown', 'power down'), ('noop', 'do nothing')],
               help='What to do with instances deleted in the DB but still running.'),
    cfg.IntOpt('running_deleted_instance_poll_interval', default=1800,
               help='Seconds between checks for running deleted instances; 0 disables.'),
    cfg.IntOpt('running_deleted_instance_timeout', default=0, min=0,
               help='Seconds an instance must be deleted before the action applies.'),
]

COMPUTE_OPTS = [
    cfg.IntOpt('consecutive_build_service_disable_threshold', default=10, min=0, help="""
Non-zero: count consecutive failed builds on the node
(``stats['failed_builds']``), which BuildFailureWeigher uses to steer new
builds away. 0 turns counting off."""),
    cfg.BoolOpt('packing_host_numa_cells_allocation_strategy', default=False, help="""
Which host NUMA cells an instance's NUMA cells are tried on first. False
spreads: the cells with the most free resources first. True packs: the
busiest cells first, filled up before a free cell is used. The scheduler's
NUMATopologyFilter and the compute's claim both read it: set it alike on
schedulers and computes."""),
    cfg.StrOpt('cpu_shared_set', help="""
Host CPUs on which instances without pinned CPUs float (the NUMA cells'
``cpuset``), as a CPU spec: ranges, single CPUs and ``^`` exclusions, e.g.
``0-3,8-11,^10``.

Unset: every host CPU, unless ``cpu_dedicated_set`` is set, which then leaves
no shared CPU. With neither option set, every CPU serves both floating and
pinned instances (Nova's legacy behaviour).

Related options: ``[compute] cpu_dedicated_set``"""),
    cfg.StrOpt('cpu_dedicated_set', help="""
Host CPUs that pinned instances (``hw:cpu_policy=dedicated``) may be given
for their own (the NUMA cells' ``pcpuset``), as a CPU spec like
``cpu_shared_set``. Unset: no dedicated CPU unless ``cpu_shared_set`` is
unset too (then every CPU, as in Nova).

Related options: ``[compute] cpu_shared_set``"""),
    cfg.ListOpt('image_type_exclude_list', default=[], help="""
A list of image formats that should not be advertised as supported by this
compute node.

In some situations, it may be desirable to have a compute node refuse to
support an expensive or complex image format. This factors into the
decisions made by the scheduler about which compute node to select when
booted with a given image: the node's resource provider in Placement loses
the ``COMPUTE_IMAGE_TYPE_<format>`` trait of each format listed (at the
compute's next resource refresh, start-up included), even when the virt
driver supports the format.

Possible values:

* Any glance image ``disk_format`` name (i.e. ``raw``, ``qcow2``, etc)

Related options:

* ``[scheduler] query_placement_for_image_type_support`` - enables
  filtering computes based on supported image types, which is required to
  be enabled for this to take effect.
* ``[placement] enabled`` - computes report traits to Placement only with it.
"""),
]

FAKE_GROUP = cfg.OptGroup('fake_driver', title='Fake virt driver', help="""
Resources the fake virt driver reports, so that computes of different sizes
run side by side on one machine.""")

FAKE_OPTS = [
    cfg.IntOpt('vcpus', default=16, min=0, help='Physical CPUs of each fake node.'),
    cfg.IntOpt('memory_mb', default=32768, min=0, help='Memory of each fake node, in MB.'),
    cfg.IntOpt('local_gb', default=1024, min=0, help='Local disk of each fake node, in GB.'),
    cfg.StrOpt('hypervisor_type', default='fake', help='Hypervisor type reported.'),
    cfg.StrOpt('hypervisor_version', default='1.0', help='Hypervisor version, dotted.'),
    cfg.StrOpt('cpu_arch', default='x86_64',
               help='Architecture in cpu_info and supported instances.'),
    cfg.ListOpt('nodes', default=[], help="""
Node names this compute manages. Empty: one node named after ``host``.
Several names make a baremetal-style compute with one node per name."""),
    cfg.DictOpt('host_sizes', default={}, help="""
Per-host sizes overriding vcpus/memory_mb/local_gb, as
``host:vcpus/memory_mb/local_gb`` pairs, e.g.
``compute1:4/8192/100,compute2:16/32768/400``. Lets several fake computes of
different sizes share one config (and one process, as the local cluster's
fallback does)."""),
    cfg.IntOpt('numa_nodes', default=0, min=0, max=64, help="""
NUMA nodes (cells) the fake host reports. 0 reports no NUMA topology, as
Nova's fake driver does: such a host takes no instance that asks for one
(``hw:numa_nodes``, ``hw:cpu_policy=dedicated``, ``hw:mem_page_size``).

The host's ``vcpus`` and ``memory_mb`` are split evenly over the nodes:
CPUs ``0..vcpus/numa_nodes-1`` on node 0, and so on; ``vcpus`` must be a
multiple of ``numa_nodes * cpu_threads``.

Related options: ``cpu_threads``, ``hugepages``,
``[compute] cpu_dedicated_set``, ``[compute] cpu_shared_set``"""),
    cfg.IntOpt('cpu_threads', default=1, min=1, max=8, help="""
Hardware threads per core of the fake NUMA host: consecutive CPUs of a node
are siblings in groups of this size (``hw:cpu_thread_policy`` reads them).
Only used with ``numa_nodes`` > 0."""),
    cfg.ListOpt('hugepages', default=[], help="""
Huge pages on every NUMA node of the fake host, as ``size_kb:count`` items,
e.g. ``2048:512,1048576:2`` (512 pages of 2 MB and two of 1 GB per node).
Their memory comes out of the node's small (4 KB) pages. Flavors with
``hw:mem_page_size=large`` need them. Only used with ``numa_nodes`` > 0."""),
    cfg.MultiStrOpt('pci_devices', default=[], help="""
PCI devices the fake host has: JSON objects, one per entry (repeat the
option for more) or several in a JSON list, e.g.
``{"vendor_id": "8086", "product_id": "1520", "count": 2, "numa_node": 0}``.
Keys: ``vendor_id`` and ``product_id`` (4 hex digits, required), ``count``
(default 1), ``numa_node`` (default none). Devices get addresses
``0000:NN:00.M`` in the order given. As on a real compute, only the devices
that a ``[pci] device_spec`` entry admits are offered, with that entry's tags
(``physical_network``, ...).

Related options: ``[pci] device_spec``, ``[pci] alias``"""),
    cfg.FloatOpt('spawn_delay_seconds', default=0.0, min=0.0,
                 help='Seconds each spawn takes; for tests and demos.'),
    cfg.StrOpt('spawn_failure', default='none',
               choices=[('none', 'spawns succeed'),
                        ('reschedule', 'every spawn fails with a reschedulable error'),
                        ('first_reschedule',
                         'the first spawn of each instance fails, reschedulable'),
                        ('abort', 'every spawn fails without reschedule')],
               help='Failure injection for tests.'),
]


def register_opts(conf):
    conf.register_opts(OPTS)
    conf.register_group(COMPUTE_GROUP)
    conf.register_opts(COMPUTE_OPTS, group=COMPUTE_GROUP)
    conf.register_group(FAKE_GROUP)
    conf.register_opts(FAKE_OPTS, group=FAKE_GROUP)


def list_opts():
    return {'DEFAULT': OPTS, COMPUTE_GROUP: COMPUTE_OPTS, FAKE_GROUP: FAKE_OPTS}
