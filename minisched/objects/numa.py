"""A host's NUMA topology: its cells, their CPUs, memory and page sizes, and what is used.

The virt driver reports it, the compute node record stores it as the JSON of its primitive
(``ComputeNode.numa_topology``), and the scheduler and the compute's claims fit instance
topologies onto it (``minisched.virt.hardware``). Fields, versions and methods are Nova's
(``nova/objects/numa.py``), so that the same rules give the same answers.
"""
from oslo_serialization import jsonutils
from oslo_utils import versionutils

from minisched import exception
from minisched.objects import base
from minisched.objects import fields
from minisched.virt import hardware


def _same_fields(obj_a, obj_b):
    """True when both objects have the same fields set, to equal values (Nova's equality for
    these value-like objects)."""
    if obj_b is None:
        return False
    for name in obj_a.fields:
        is_set = name in obj_a
        if is_set != (name in obj_b):
            return False
        if is_set and getattr(obj_a, name) != getattr(obj_b, name):
            return False
    return True


class _ValueEquality:
    """Equality by set fields and values, not identity."""

    def __eq__(self, other):
        return _same_fields(self, other)

    def __ne__(self, other):
        return not self == other

    __hash__ = None


@base.MinischedObjectRegistry.register
class NUMACell(_ValueEquality, base.MinischedObject):
    """One host NUMA node.

    ``cpuset`` holds the host CPUs for shared (floating) guest CPUs, ``pcpuset`` those that
    can be pinned, of which ``pinned_cpus`` are taken; ``cpu_usage`` counts the shared guest
    CPUs placed here and ``memory_usage`` the MiB used. ``siblings`` lists the SMT thread
    sibling sets, ``mempages`` the page sizes with their counts.

    Version history (Nova's): 1.1 pinned_cpus and siblings, 1.2 mempages,
    1.3 network_metadata, 1.4 pcpuset, 1.5 socket.
    """

    VERSION = '1.5'

    fields = {
        'id': fields.IntegerField(read_only=True),
        'cpuset': fields.SetOfIntegersField(),
        'pcpuset': fields.SetOfIntegersField(),
        'memory': fields.IntegerField(),
        'cpu_usage': fields.IntegerField(default=0),
        'memory_usage': fields.IntegerField(default=0),
        'pinned_cpus': fields.SetOfIntegersField(),
        'siblings': fields.ListOfSetsOfIntegersField(),
        'mempages': fields.ListOfObjectsField('NUMAPagesTopology'),
        'network_metadata': fields.ObjectField('NetworkMetadata'),
        'socket': fields.IntegerField(nullable=True),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = versionutils.convert_version_to_tuple(target_version)
        for added_in, name in (((1, 5), 'socket'), ((1, 4), 'pcpuset'),
                               ((1, 3), 'network_metadata')):
            if target < added_in:
                primitive.pop(name, None)

    @property
    def free_pcpus(self):
        """The dedicated CPUs not pinned yet."""
        return self.pcpuset - self.pinned_cpus or set()

    @property
    def free_siblings(self):
        """Each sibling set, reduced to its free dedicated CPUs."""
        free = self.free_pcpus
        return [siblings & free for siblings in self.siblings]

    @property
    def avail_pcpus(self):
        return len(self.free_pcpus)

    @property
    def avail_memory(self):
        return self.memory - self.memory_usage

    @property
    def has_threads(self):
        """True when some core has more than one thread (SMT, HyperThreading)."""
        return any(len(siblings) > 1 for siblings in self.siblings)

    def pin_cpus(self, cpus):
        """Mark ``cpus`` (dedicated CPUs of this cell, none pinned yet) as pinned."""
        if cpus - self.pcpuset:
            raise exception.CPUPinningUnknown(requested=list(cpus),
                                              available=list(self.pcpuset))
        if cpus & self.pinned_cpus:
            raise exception.CPUPinningInvalid(
                requested=list(cpus), available=list(self.pcpuset - self.pinned_cpus))
        self.pinned_cpus |= cpus

    def unpin_cpus(self, cpus):
        """Release ``cpus`` (dedicated CPUs of this cell, all of them pinned)."""
        if cpus - self.pcpuset:
            raise exception.CPUUnpinningUnknown(requested=list(cpus),
                                                available=list(self.pcpuset))
        if cpus - self.pinned_cpus:
            raise exception.CPUUnpinningInvalid(requested=list(cpus),
                                                available=list(self.pinned_cpus))
        self.pinned_cpus -= cpus

    def _with_siblings(self, cpus):
        """``cpus`` plus every thread sibling of theirs."""
        whole_cores = set()
        for siblings in self.siblings:
            if siblings & cpus:
                whole_cores |= siblings
        return whole_cores

    def pin_cpus_with_siblings(self, cpus):
        """Pin the whole cores ``cpus`` are on: the ``isolate`` thread policy leaves a pinned
        CPU's siblings to no one."""
        self.pin_cpus(self._with_siblings(cpus))

    def unpin_cpus_with_siblings(self, cpus):
        """Release the whole cores ``cpus`` are on (the inverse of the above)."""
        self.unpin_cpus(self._with_siblings(cpus))

    def can_fit_pagesize(self, pagesize, memory, use_free=True):
        """Whether ``memory`` KiB fits in pages of ``pagesize`` KiB of this cell.

        It must be a whole number of pages, and no more than the free pages hold (all the
        pages with ``use_free=False``: overcommit, which huge pages never allow).

        :raises: MemoryPageSizeNotSupported when the cell has no pages of that size
        """
        for pages in self.mempages:
            if pages.size_kb == pagesize:
                avail_kb = pages.free_kb if use_free else pages.total_kb
                return memory <= avail_kb and memory % pagesize == 0
        raise exception.MemoryPageSizeNotSupported(pagesize=pagesize)


@base.MinischedObjectRegistry.register
class NUMAPagesTopology(_ValueEquality, base.MinischedObject):
    """The pages of one size in a NUMA cell: how many, how many used, how many kept back.

    Version history (Nova's): 1.1 reserved.
    """

    VERSION = '1.1'

    fields = {
        'size_kb': fields.IntegerField(),
        'total': fields.IntegerField(),
        'used': fields.IntegerField(default=0),
        'reserved': fields.IntegerField(default=0),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        if versionutils.convert_version_to_tuple(target_version) < (1, 1):
            primitive.pop('reserved', None)

    @property
    def free(self):
        """Pages neither used nor reserved."""
        if 'reserved' not in self:
            # A record from before 1.1 has no reserved pages; Nova sets the field here.
            self.reserved = 0
        return self.total - self.used - self.reserved

    @property
    def free_kb(self):
        return self.free * self.size_kb

    @property
    def total_kb(self):
        return self.total * self.size_kb


@base.MinischedObjectRegistry.register
class NUMATopology(_ValueEquality, base.MinischedObject):
    """A host's NUMA cells. Its length is the number of cells.

    Version history (Nova's): 1.1 NUMACell 1.1, 1.2 NUMACell 1.2.
    """

    VERSION = '1.2'

    fields = {
        'cells': fields.ListOfObjectsField('NUMACell'),
    }

    def __len__(self):
        return len(self.cells)

    @property
    def has_threads(self):
        """True when some cell has SMT threads."""
        return any(cell.has_threads for cell in self.cells)

    def _to_json(self):
        """The form the compute node record stores: the JSON of the primitive, its lists of
        changed fields sorted, so that equal topologies give equal text (the compute saves
        its record when the text changes; schedulers parse each text once)."""
        return jsonutils.dumps(_sorted_changes(self.obj_to_primitive()))

    @classmethod
    def obj_from_db_obj(cls, db_obj):
        """The topology a compute node record stores (see :meth:`_to_json`)."""
        return cls.obj_from_primitive(jsonutils.loads(db_obj))

    @classmethod
    def from_legacy_object(cls, primitive):
        """The JSON of a topology from the JSON of Nova's pre-Liberty, unversioned form
        (``{'cells': [{'id', 'cpus': '0-3', 'mem': {'total', 'used'}, 'cpu_usage'}]}``)."""
        cells = []
        for cell in jsonutils.loads(primitive).get('cells', []):
            memory = cell.get('mem', {})
            cells.append(NUMACell(
                id=cell.get('id'), cpuset=hardware.parse_cpu_spec(cell.get('cpus', '')),
                cpu_usage=cell.get('cpu_usage', 0), memory=memory.get('total', 0),
                memory_usage=memory.get('used', 0), mempages=[], pinned_cpus=set(),
                siblings=[]))
        return cls(cells=cells)._to_json()


@base.MinischedObjectRegistry.register
class NUMATopologyLimits(base.MinischedObject):
    """The overcommit the NUMA fitting allows per cell, for shared CPUs and small pages only,
    and the host's network NUMA affinity (set by the NUMATopologyFilter from the request).

    Version history (Nova's): 1.1 network_metadata.
    """

    VERSION = '1.1'

    fields = {
        'cpu_allocation_ratio': fields.FloatField(),
        'ram_allocation_ratio': fields.FloatField(),
        'network_metadata': fields.ObjectField('NetworkMetadata'),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        if versionutils.convert_version_to_tuple(target_version) < (1, 1):
            primitive.pop('network_metadata', None)


def _sorted_changes(primitive):
    """``primitive`` with every ``*.changes`` list sorted (they list a set)."""
    if isinstance(primitive, dict):
        return {key: sorted(value) if key.endswith('.changes') else _sorted_changes(value)
                for key, value in primitive.items()}
    if isinstance(primitive, list):
        return [_sorted_changes(item) for item in primitive]
    return primitive
