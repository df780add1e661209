"""An instance's NUMA topology: its guest NUMA cells and, once placed, the host cells and
host CPUs they landed on.

``minisched.virt.hardware.numa_get_constraints`` builds one from a flavor and image; the
NUMA fitting fills in the host cell ids, page sizes and CPU pinning. Stored with the instance
and carried by the RequestSpec. Fields, versions and methods are Nova's
(``nova/objects/instance_numa.py``).
"""
import itertools
import logging

from oslo_serialization import jsonutils
from oslo_utils import versionutils
from oslo_versionedobjects import base as ovo_base

from minisched.db import lazy
from minisched import exception
from minisched.objects import base
from minisched.objects import fields
from minisched.virt import hardware

LOG = logging.getLogger(__name__)
db = lazy.module('minisched.db.main.api')

_PINNED_POLICIES = (fields.CPUAllocationPolicy.DEDICATED, fields.CPUAllocationPolicy.MIXED)


class _DefaultsAtInit:
    """Fields with a default are set when the object is built (Nova's EphemeralObject): these
    objects are whole values stored as blobs, never partial rows."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.obj_set_defaults()


@base.MinischedObjectRegistry.register
class InstanceNUMACell(_DefaultsAtInit, ovo_base.VersionedObjectDictCompat,
                       base.MinischedObject):
    """One guest NUMA node.

    ``cpuset`` holds its shared (floating) guest CPUs and ``pcpuset`` its dedicated (pinned)
    ones; ``memory`` is in MiB. After fitting, ``id`` is the host cell's, ``pagesize`` the
    page size chosen (KiB), ``cpu_pinning`` maps guest CPU to host CPU and
    ``cpuset_reserved`` holds the host CPUs kept for isolated emulator threads.

    Version history (Nova's): 1.1 pagesize, 1.2 cpu_pinning_raw and cpu_topology,
    1.3 cpu_policy and cpu_thread_policy, 1.4 cpuset_reserved, 1.5 pcpuset (dedicated CPUs
    move there from cpuset), 1.6 ``mixed`` cpu_policy.
    """

    VERSION = '1.6'

    #: ``{guest CPU: host CPU}`` (int keys) over the ``cpu_pinning_raw`` field.
    cpu_pinning = fields.DictProxyField('cpu_pinning_raw')

    fields = {
        'id': fields.IntegerField(),
        'cpuset': fields.SetOfIntegersField(),
        'pcpuset': fields.SetOfIntegersField(),
        'cpuset_reserved': fields.SetOfIntegersField(nullable=True, default=None),
        'memory': fields.IntegerField(),
        'pagesize': fields.IntegerField(nullable=True, default=None),
        # Unused, as in Nova, and kept for the version's sake.
        'cpu_topology': fields.ObjectField('VirtCPUTopology', nullable=True),
        'cpu_pinning_raw': fields.DictOfIntegersField(nullable=True, default=None),
        'cpu_policy': fields.CPUAllocationPolicyField(nullable=True, default=None),
        'cpu_thread_policy': fields.CPUThreadAllocationPolicyField(nullable=True,
                                                                   default=None),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = versionutils.convert_version_to_tuple(target_version)
        if target < (1, 6) and primitive.get('cpu_policy') == fields.CPUAllocationPolicy.MIXED:
            raise exception.ObjectActionError(
                action='obj_make_compatible',
                reason='cpu_policy=mixed not supported in version %s' % target_version)
        if target < (1, 5):
            # Before 1.5 the dedicated CPUs were in cpuset.
            if primitive.get('cpu_policy') == fields.CPUAllocationPolicy.DEDICATED:
                primitive['cpuset'] = primitive.get('pcpuset', [])
            primitive.pop('pcpuset', None)
            LOG.warning('InstanceNUMACell backported to %s: services of older versions may '
                        'lose track of its pinned CPUs', target_version)
        if target < (1, 4):
            primitive.pop('cpuset_reserved', None)
        if target < (1, 3):
            primitive.pop('cpu_policy', None)
            primitive.pop('cpu_thread_policy', None)

    def __len__(self):
        return len(self.total_cpus)

    @property
    def total_cpus(self):
        return self.cpuset | self.pcpuset

    @property
    def siblings(self):
        """The guest's own thread sibling sets, from ``cpu_topology`` (none without one)."""
        threads = 0
        if 'cpu_topology' in self and self.cpu_topology:
            threads = self.cpu_topology.threads
        if threads == 1:
            threads = 0
        cpus = iter(sorted(self.total_cpus))
        # zip() of one iterator repeated: consecutive groups of ``threads`` CPUs.
        return [set(group) for group in zip(*[cpus] * threads)]

    @property
    def cpu_pinning_requested(self):
        """True when some guest CPUs of this cell are pinned (policy dedicated or mixed):
        Nova's name until Ussuri, kept for callers written against it."""
        return self.cpu_policy in _PINNED_POLICIES

    def pin(self, vcpu, pcpu):
        """Record guest CPU ``vcpu`` as pinned to host CPU ``pcpu`` (shared CPUs: ignored)."""
        if vcpu not in self.pcpuset:
            return
        pinning = self.cpu_pinning or {}
        pinning[vcpu] = pcpu
        self.cpu_pinning = pinning

    def pin_vcpus(self, *cpu_pairs):
        for vcpu, pcpu in cpu_pairs:
            self.pin(vcpu, pcpu)

    def clear_host_pinning(self):
        """Forget the host placement (cell id and pinning), as an aborted claim must."""
        self.id = -1
        self.cpu_pinning = {}
        return self


@base.MinischedObjectRegistry.register
class InstanceNUMATopology(ovo_base.VersionedObjectDictCompat, base.MinischedObject):
    """A guest's NUMA cells (its length is their number) and its emulator threads policy.

    Version history (Nova's): 1.1 pagesize, 1.2 InstanceNUMACell 1.2,
    1.3 emulator_threads_policy.
    """

    VERSION = '1.3'

    fields = {
        # Unused, as in Nova.
        'id': fields.IntegerField(),
        'instance_uuid': fields.UUIDField(),
        'cells': fields.ListOfObjectsField('InstanceNUMACell'),
        'emulator_threads_policy': fields.CPUEmulatorThreadsPolicyField(nullable=True),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        if versionutils.convert_version_to_tuple(target_version) < (1, 3):
            primitive.pop('emulator_threads_policy', None)

    def __len__(self):
        return len(self.cells)

    def _to_json(self):
        """The stored form: the JSON of the primitive."""
        return jsonutils.dumps(self.obj_to_primitive())

    @classmethod
    def obj_from_db_obj(cls, context, instance_uuid, db_obj):
        """The topology stored for ``instance_uuid`` (see :meth:`_to_json`).

        Nova's pre-Liberty unversioned form (``cells`` of ``cpus``/``mem``) is converted too;
        unlike Nova, nothing is written back: minisched never stored that form.
        """
        primitive = jsonutils.loads(db_obj)
        if cls._obj_primitive_key('name') in primitive:
            return cls.obj_from_primitive(primitive, context=context)
        return cls(instance_uuid=instance_uuid, cells=[
            InstanceNUMACell(id=cell.get('id'),
                             cpuset=hardware.parse_cpu_spec(cell.get('cpus', '')),
                             pcpuset=set(), memory=cell.get('mem', {}).get('total', 0),
                             pagesize=cell.get('pagesize'))
            for cell in primitive.get('cells', [])])

    @base.remotable
    def create(self):
        """Store the topology as its instance's (the instance row must exist)."""
        db.instance_update(self._context, self.instance_uuid,
                           {'numa_topology': self._to_json()})
        self.obj_reset_changes()

    @base.remotable_classmethod
    def get_by_instance_uuid(cls, context, instance_uuid):
        """The stored topology of the instance, None when it has none;
        NumaTopologyNotFound when there is no such instance."""
        try:
            raw = db.instance_get_by_uuid(context, instance_uuid)['numa_topology']
        except exception.InstanceNotFound:
            raise exception.NumaTopologyNotFound(instance_uuid=instance_uuid)
        return None if raw is None else cls.obj_from_db_obj(context, instance_uuid, raw)

    @property
    def cpu_policy(self):
        """The cells' CPU policy (the same in every cell)."""
        policies = {cell.cpu_policy for cell in self.cells}
        if len(policies) > 1:
            raise exception.InternalError(err='Instance NUMA cells must have the same CPU policy.')
        return policies.pop()

    @property
    def cpu_pinning_requested(self):
        """True when the guest has pinned CPUs (see ``InstanceNUMACell``)."""
        return all(cell.cpu_pinning_requested for cell in self.cells)

    @property
    def cpu_pinning(self):
        """Every host CPU the guest CPUs are pinned to."""
        return set(itertools.chain.from_iterable(
            cell.cpu_pinning.values() for cell in self.cells if cell.cpu_pinning))

    @property
    def cpuset_reserved(self):
        """Every host CPU kept for the guest's emulator threads."""
        return set(itertools.chain.from_iterable(
            cell.cpuset_reserved for cell in self.cells if cell.cpuset_reserved))

    @property
    def emulator_threads_isolated(self):
        """True when the emulator threads get a host CPU of their own."""
        return ('emulator_threads_policy' in self and
                self.emulator_threads_policy == fields.CPUEmulatorThreadsPolicy.ISOLATE)

    def clear_host_pinning(self):
        """Forget every cell's host placement (an aborted claim)."""
        for cell in self.cells:
            cell.clear_host_pinning()
        return self
