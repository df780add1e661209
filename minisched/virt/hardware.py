"""What guest topology a flavor and image ask for, and whether and how it fits on a host.

The rules are Nova's (``nova/virt/hardware.py``), under the same names and signatures, so that
code ported from Nova reads the same and Nova's answers come out:

- ``numa_get_constraints(flavor, image_meta)`` turns the ``hw:`` extra specs and ``hw_`` image
  properties (NUMA nodes, per-node CPUs and memory, CPU policy and thread policy, emulator
  threads, page size, dedicated and realtime masks) into an ``InstanceNUMATopology``, or None
  when nothing asks for one, raising Nova's exceptions on invalid or conflicting requests;
- ``numa_fit_instance_to_host`` and ``numa_usage_from_instance_numa`` (in
  :mod:`minisched.virt.numa_fit`, re-exported here) place such a topology on a host's
  ``NUMATopology`` and account for it.

Flavors, images and topologies are read through the attributes Nova's objects have too, so
Nova's own objects can be passed in.
"""
import re

from oslo_utils import strutils
from oslo_utils import units

from minisched import exception
from minisched.objects import fields
# The fitting lives in a module of its own; its public names are this module's too.
from minisched.virt.numa_fit import MEMPAGES_ANY
from minisched.virt.numa_fit import MEMPAGES_LARGE
from minisched.virt.numa_fit import MEMPAGES_SMALL
from minisched.virt.numa_fit import numa_fit_instance_to_host  # noqa: F401
from minisched.virt.numa_fit import numa_usage_from_instance_numa  # noqa: F401

#: Most guest NUMA nodes a flavor or image may describe one by one (Nova's
#: ``ImageMetaProps.NUMA_NODES_MAX``).
NUMA_NODES_MAX = 128

_PINNED_POLICIES = (fields.CPUAllocationPolicy.DEDICATED, fields.CPUAllocationPolicy.MIXED)
_HYPERTHREADING_TRAIT = 'HW_CPU_HYPERTHREADING'


# -- CPU set strings ("0-3,^2,6") ------------------------------------------------------------

def parse_cpu_spec(spec):
    """The set of CPU numbers ``spec`` names: a comma-separated list of numbers, ranges
    (``2-5``) and exclusions (``^3``, ``^2-3``), the exclusions applied last.

    :raises: Invalid for a malformed element or a range that runs backwards
    """
    included, excluded = set(), set()
    for rule in spec.split(','):
        rule = rule.strip()
        if not rule:
            continue
        target = included
        if '-' in rule:
            start, end = rule.split('-', 1)
            if start.startswith('^'):
                target, start = excluded, start[1:]
            try:
                first, last = int(start.strip()), int(end.strip())
            except ValueError:
                raise exception.Invalid('Invalid range expression %r' % rule) from None
            if first > last:
                raise exception.Invalid('Invalid range expression %r' % rule)
            target.update(range(first, last + 1))
        elif rule.startswith('^'):
            try:
                excluded.add(int(rule[1:].strip()))
            except ValueError:
                raise exception.Invalid('Invalid exclusion expression %r' % rule) from None
        else:
            try:
                included.add(int(rule))
            except ValueError:
                raise exception.Invalid('Invalid inclusion expression %r' % rule) from None
    return included - excluded


def format_cpu_spec(cpuset, allow_ranges=True):
    """``cpuset`` written as :func:`parse_cpu_spec` reads it, runs of consecutive CPUs as
    ranges unless ``allow_ranges`` is False."""
    cpus = sorted(cpuset)
    if not allow_ranges:
        return ','.join(str(cpu) for cpu in cpus)
    runs = []
    for cpu in cpus:
        if runs and runs[-1][1] == cpu - 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ','.join(str(first) if first == last else '%d-%d' % (first, last)
                    for first, last in runs)


# -- reading the flavor and the image -----------------------------------------------------

def _extra_specs(flavor):
    """The flavor's extra specs, ``{}`` when it has none loaded (``flavor.get`` in Nova)."""
    return flavor.extra_specs if 'extra_specs' in flavor else {}


def _get_flavor_image_meta(key, flavor, image_meta, default=None, prefix='hw'):
    """``(flavor value, image value)`` of a setting: ``<prefix>:<key>`` among the extra
    specs and ``<prefix>_<key>`` among the image properties."""
    flavor_value = _extra_specs(flavor).get('%s:%s' % (prefix, key), default)
    image_value = image_meta.properties.get('%s_%s' % (prefix, key), default)
    return flavor_value, image_value


def _get_unique_flavor_image_meta(key, flavor, image_meta, default=None, prefix='hw'):
    """The setting from the flavor or the image; both may give it only if they agree."""
    flavor_value, image_value = _get_flavor_image_meta(key, flavor, image_meta, default,
                                                       prefix)
    if image_value and flavor_value and image_value != flavor_value:
        raise exception.FlavorImageConflict(
            'Flavor %(flavor)s sets %(prefix)s:%(key)s to %(flavor_val)s, but image '
            '%(image)s sets %(prefix)s_%(key)s to %(image_val)s.'
            % {'flavor': flavor.name, 'image': image_meta.name, 'prefix': prefix, 'key': key,
               'flavor_val': flavor_value, 'image_val': image_value})
    return flavor_value or image_value


def _flavor_mappings(flavor, key, parse):
    """``[parse(<key>.0), parse(<key>.1), ...]`` up to the first missing index, or None."""
    extra_specs = _extra_specs(flavor)
    values = []
    for cell in range(NUMA_NODES_MAX):
        name = '%s.%d' % (key, cell)
        if name not in extra_specs:
            break
        values.append(parse(extra_specs[name]))
    return values or None


# -- single constraints --------------------------------------------------------------------

def get_cpu_policy_constraint(flavor, image_meta):
    """The CPU policy asked for (``shared``, ``dedicated``, ``mixed``) or None.

    The flavor's wins; the image may only agree with it or, under ``dedicated``, say
    anything, and under ``mixed`` anything but ``dedicated``.

    :raises: InvalidCPUAllocationPolicy, ImageCPUPinningForbidden
    """
    policies = fields.CPUAllocationPolicy
    flavor_policy, image_policy = _get_flavor_image_meta('cpu_policy', flavor, image_meta)
    for source, policy in (('flavor extra specs', flavor_policy),
                           ('image properties', image_policy)):
        if policy and policy not in policies.ALL:
            raise exception.InvalidCPUAllocationPolicy(
                source=source, requested=policy, available=str(policies.ALL))

    if flavor_policy == policies.DEDICATED:
        return flavor_policy
    if flavor_policy == policies.MIXED:
        if image_policy == policies.DEDICATED:
            raise exception.ImageCPUPinningForbidden()
        return flavor_policy
    if flavor_policy == policies.SHARED:
        if image_policy in (policies.MIXED, policies.DEDICATED):
            raise exception.ImageCPUPinningForbidden()
        return flavor_policy
    return image_policy if image_policy in policies.ALL else None


def get_cpu_thread_policy_constraint(flavor, image_meta):
    """The CPU thread policy asked for (``prefer``, ``isolate``, ``require``) or None.

    A flavor saying nothing or ``prefer`` lets the image choose; otherwise the image may
    only repeat the flavor's.

    :raises: InvalidCPUThreadAllocationPolicy, ImageCPUThreadPolicyForbidden
    """
    policies = fields.CPUThreadAllocationPolicy
    flavor_policy, image_policy = _get_flavor_image_meta('cpu_thread_policy', flavor,
                                                         image_meta)
    for source, policy in (('flavor extra specs', flavor_policy),
                           ('image properties', image_policy)):
        if policy and policy not in policies.ALL:
            raise exception.InvalidCPUThreadAllocationPolicy(
                source=source, requested=policy, available=str(policies.ALL))

    if flavor_policy in (None, policies.PREFER):
        return flavor_policy or image_policy
    if image_policy and image_policy != flavor_policy:
        raise exception.ImageCPUThreadPolicyForbidden()
    return flavor_policy


def get_emulator_thread_policy_constraint(flavor):
    """``hw:emulator_threads_policy`` (``share`` or ``isolate``), or None.

    :raises: InvalidEmulatorThreadsPolicy
    """
    policy = _extra_specs(flavor).get('hw:emulator_threads_policy')
    if not policy:
        return None
    if policy not in fields.CPUEmulatorThreadsPolicy.ALL:
        raise exception.InvalidEmulatorThreadsPolicy(
            requested=policy, available=str(fields.CPUEmulatorThreadsPolicy.ALL))
    return policy


def get_pci_numa_policy_constraint(flavor, image_meta):
    """The PCI NUMA affinity policy asked for (``hw:pci_numa_affinity_policy`` or the
    image's ``hw_pci_numa_affinity_policy``; both only if equal), or None.

    :raises: ImagePCINUMAPolicyForbidden, InvalidPCINUMAAffinity
    """
    flavor_policy, image_policy = _get_flavor_image_meta('pci_numa_affinity_policy', flavor,
                                                         image_meta)
    if flavor_policy and image_policy and flavor_policy != image_policy:
        raise exception.ImagePCINUMAPolicyForbidden()
    policy = flavor_policy or image_policy
    if policy and policy not in fields.PCINUMAAffinityPolicy.ALL:
        raise exception.InvalidPCINUMAAffinity(policy=policy)
    return policy


def is_realtime_enabled(flavor):
    """True when ``hw:cpu_realtime`` says so."""
    return strutils.bool_from_string(_extra_specs(flavor).get('hw:cpu_realtime'))


def _mask_to_cpus(flavor, mask):
    """The guest CPUs a mask names; a mask starting with ``^`` excludes from all of them."""
    if mask.strip().startswith('^'):
        return parse_cpu_spec('0-%d,%s' % (flavor.vcpus - 1, mask))
    return parse_cpu_spec(mask)


def get_dedicated_cpu_constraint(flavor):
    """The guest CPUs ``hw:cpu_dedicated_mask`` pins (``mixed`` policy), or None.

    :raises: InvalidMixedInstanceDedicatedMask unless some but not all CPUs are named, all
        of them the flavor's
    """
    mask = _extra_specs(flavor).get('hw:cpu_dedicated_mask')
    if not mask:
        return None
    pcpus = _mask_to_cpus(flavor, mask)
    cpus = set(range(flavor.vcpus))
    if not pcpus or not cpus - pcpus:
        raise exception.InvalidMixedInstanceDedicatedMask()
    if not pcpus <= cpus:
        raise exception.InvalidMixedInstanceDedicatedMask(
            "The dedicated vCPU mask of a mixed instance names vCPUs the flavor does not "
            "have; see 'hw:cpu_dedicated_mask'.")
    return pcpus


def get_realtime_cpu_constraint(flavor, image_meta):
    """The realtime guest CPUs (``hw:cpu_realtime`` on; the image's mask before the
    flavor's; no mask: all), or None when realtime is off.

    :raises: RealtimeMaskNotFoundOrInvalid when the mask is empty, names CPUs the flavor does
        not have, or names them all without isolated emulator threads
    """
    if not is_realtime_enabled(flavor):
        return None
    flavor_mask, image_mask = _get_flavor_image_meta('cpu_realtime_mask', flavor, image_meta)
    # An image's mask is the more specific one.
    mask = image_mask or flavor_mask
    all_cpus = set(range(flavor.vcpus))
    realtime = _mask_to_cpus(flavor, mask) if mask else set(all_cpus)
    if not realtime:
        raise exception.RealtimeMaskNotFoundOrInvalid()
    if realtime == all_cpus and not get_emulator_thread_policy_constraint(flavor):
        raise exception.RealtimeMaskNotFoundOrInvalid()
    if not realtime <= all_cpus:
        raise exception.RealtimeMaskNotFoundOrInvalid(
            'The realtime vCPU mask (hw:cpu_realtime_mask or hw_cpu_realtime_mask) names '
            'vCPUs the flavor does not have.')
    return realtime


def get_vpmems(flavor):
    """The virtual persistent memory labels ``hw:pmem`` lists (blanks dropped)."""
    labels = _extra_specs(flavor).get('hw:pmem')
    if not labels:
        return []
    return [label.strip() for label in labels.split(',') if label.strip()]


def get_maxphysaddr_mode(flavor, image_meta):
    """``hw:maxphysaddr_mode`` / ``hw_maxphysaddr_mode`` (``passthrough`` or ``emulate``),
    or None.

    :raises: FlavorImageConflict when they differ; Invalid for an unknown mode
    """
    mode = _get_unique_flavor_image_meta('maxphysaddr_mode', flavor, image_meta)
    if mode is None:
        return None
    if mode not in fields.MaxPhyAddrMode.ALL:
        raise exception.Invalid('Invalid Maxphyaddr mode %r. Allowed values: %s.'
                                % (mode, ', '.join(fields.MaxPhyAddrMode.ALL)))
    return mode


def get_locked_memory_constraint(flavor, image_meta, mach_type=None):
    """Whether the guest memory must be locked (``hw:locked_memory`` / ``hw_locked_memory``).

    minisched has no memory encryption, so unlike Nova an encrypted-memory request never
    implies locked memory here (``mach_type`` is accepted for Nova's signature).

    :raises: FlavorImageLockedMemoryConflict when flavor and image disagree;
        LockMemoryForbidden when memory is locked without a page size
    """
    flavor_pages, image_pages = _get_flavor_image_meta('mem_page_size', flavor, image_meta)
    flavor_locked, image_locked = _get_flavor_image_meta('locked_memory', flavor, image_meta)
    if flavor_locked is not None:
        flavor_locked = strutils.bool_from_string(flavor_locked)
        # The image property is a boolean field already.
        if image_locked is not None and image_locked != flavor_locked:
            raise exception.FlavorImageLockedMemoryConflict(image=image_locked,
                                                            flavor=flavor_locked)
        locked = flavor_locked
    else:
        locked = image_locked
    if locked and not (flavor_pages or image_pages):
        raise exception.LockMemoryForbidden()
    return True if locked else locked


def _page_size_from_request(request):
    """A page size request (``small``, ``large``, ``any``, KiB, or a size with a unit) as
    ``MEMPAGES_*`` or KiB."""
    named = {'any': MEMPAGES_ANY, 'large': MEMPAGES_LARGE, 'small': MEMPAGES_SMALL}
    if request in named:
        return named[request]
    if request.isdigit():
        return int(request)
    try:
        # A float, as in Nova: the InstanceNUMACell field makes it an int.
        return strutils.string_to_bytes(request, return_int=True) / units.Ki
    except ValueError:
        raise exception.MemoryPageSizeInvalid(pagesize=request) from None


def _get_numa_pagesize_constraint(flavor, image_meta):
    """The page size asked for (KiB or ``MEMPAGES_*``), or None.

    Only the flavor may ask; the image may then narrow ``any`` or ``large`` to a size.

    :raises: MemoryPageSizeInvalid, MemoryPageSizeForbidden
    """
    flavor_request, image_request = _get_flavor_image_meta('mem_page_size', flavor,
                                                           image_meta)
    if not flavor_request:
        if image_request:
            raise exception.MemoryPageSizeForbidden(pagesize=image_request, against='<empty>')
        return None
    pagesize = _page_size_from_request(flavor_request)
    if image_request:
        if pagesize in (MEMPAGES_ANY, MEMPAGES_LARGE):
            return _page_size_from_request(image_request)
        raise exception.MemoryPageSizeForbidden(pagesize=image_request,
                                                against=flavor_request)
    return pagesize


def _get_numa_node_count_constraint(flavor, image_meta):
    """``hw:numa_nodes`` or ``hw_numa_nodes`` (not both) as an int, or None.

    :raises: ImageNUMATopologyForbidden, InvalidNUMANodesNumber
    """
    flavor_nodes, image_nodes = _get_flavor_image_meta('numa_nodes', flavor, image_meta)
    if flavor_nodes and image_nodes:
        raise exception.ImageNUMATopologyForbidden(name='hw_numa_nodes')
    nodes = flavor_nodes or image_nodes
    if nodes is not None and (not strutils.is_int_like(nodes) or int(nodes) < 1):
        raise exception.InvalidNUMANodesNumber(nodes=nodes)
    return int(nodes) if nodes else nodes


def _get_numa_cell_constraint(flavor, image_meta, name, parse):
    """Per-node values from ``hw:<name>.N`` or the image's ``hw_<name>`` (not both)."""
    from_flavor = _flavor_mappings(flavor, 'hw:' + name, parse)
    from_image = image_meta.properties.get('hw_' + name, None)
    if from_flavor is None:
        return from_image
    if from_image is not None:
        raise exception.ImageNUMATopologyForbidden(name='hw_' + name)
    return from_flavor


def _get_vcpu_pcpu_resources(flavor):
    """``(VCPU, PCPU)`` asked for by ``resources[N]:VCPU`` / ``resources[N]:PCPU`` extra
    specs; unparsable amounts count as 0 (rejected elsewhere)."""
    amounts = {'VCPU': 0, 'PCPU': 0}
    for key, value in _extra_specs(flavor).items():
        for resource in amounts:
            if re.match('resources([1-9][0-9]*)?:%s' % resource, key):
                try:
                    amounts[resource] += int(value)
                except ValueError:
                    pass
    return amounts['VCPU'], amounts['PCPU']


def _get_hyperthreading_trait(flavor, image_meta):
    """``required``/``forbidden`` for the HW_CPU_HYPERTHREADING trait, or None."""
    for key, value in _extra_specs(flavor).items():
        if re.match('trait([1-9][0-9]*)?:%s' % _HYPERTHREADING_TRAIT, key):
            return value
    if _HYPERTHREADING_TRAIT in image_meta.properties.get('traits_required', []):
        return 'required'
    return None


# -- the instance NUMA topology --------------------------------------------------------------

def _cpu_policy_from_resources(flavor, cpu_policy, emu_threads_policy):
    """The CPU policy once explicit ``resources:VCPU``/``PCPU`` requests are considered.

    :raises: InvalidRequest when they are mixed with a CPU policy, with each other, or do
        not match the flavor's vCPUs
    """
    vcpus, pcpus = _get_vcpu_pcpu_resources(flavor)
    if cpu_policy and (vcpus or pcpus):
        raise exception.InvalidRequest(
            "'resources:VCPU' and 'resources:PCPU' extra specs cannot be combined with the "
            "'hw:cpu_policy' extra spec or the 'hw_cpu_policy' image property; use one or "
            "the other")
    if vcpus and pcpus:
        raise exception.InvalidRequest(
            "'resources:VCPU' and 'resources:PCPU' extra specs cannot both be given; use one "
            "or the other")
    if pcpus:
        isolated = emu_threads_policy == fields.CPUEmulatorThreadsPolicy.ISOLATE
        if isolated and pcpus != flavor.vcpus + 1:
            raise exception.InvalidRequest(
                "'hw:emulator_threads_policy=isolate' needs one PCPU more than the flavor's "
                "vCPUs: request exactly flavor.vcpus + 1 PCPUs")
        if not isolated and pcpus != flavor.vcpus:
            raise exception.InvalidRequest(
                "The PCPUs requested with 'resourcesNN:PCPU' do not match the flavor's vCPUs; "
                "request exactly flavor.vcpus PCPUs")
        cpu_policy = fields.CPUAllocationPolicy.DEDICATED
    if vcpus:
        cpu_policy = fields.CPUAllocationPolicy.SHARED
    return cpu_policy


def _thread_policy_from_trait(flavor, image_meta, cpu_thread_policy):
    """The thread policy once the HW_CPU_HYPERTHREADING trait is considered
    (``forbidden``: isolate, ``required``: require).

    :raises: InvalidRequest when both a thread policy and the trait are given
    """
    trait = _get_hyperthreading_trait(flavor, image_meta)
    if cpu_thread_policy and trait:
        raise exception.InvalidRequest(
            "The 'trait:HW_CPU_HYPERTHREADING' extra spec cannot be combined with the "
            "'hw:cpu_thread_policy' extra spec or the 'hw_cpu_thread_policy' image "
            "property; use one or the other")
    if trait == 'forbidden':
        return fields.CPUThreadAllocationPolicy.ISOLATE
    if trait == 'required':
        return fields.CPUThreadAllocationPolicy.REQUIRE
    return cpu_thread_policy


def _check_policy_combination(cpu_policy, cpu_thread_policy, emu_threads_policy,
                              dedicated_cpus, realtime_cpus):
    """The dedicated guest CPUs of a ``mixed`` policy (None otherwise), once the policies
    are checked against each other.

    :raises: CPUThreadPolicyConfigurationInvalid, BadRequirementEmulatorThreadsPolicy,
        RequiredMixedInstancePolicy, RealtimeConfigurationInvalid,
        RequiredMixedOrRealtimeCPUMask
    """
    policies = fields.CPUAllocationPolicy
    if cpu_policy in (policies.SHARED, None):
        if cpu_thread_policy:
            raise exception.CPUThreadPolicyConfigurationInvalid()
        if emu_threads_policy == fields.CPUEmulatorThreadsPolicy.ISOLATE:
            raise exception.BadRequirementEmulatorThreadsPolicy()
        if dedicated_cpus:
            raise exception.RequiredMixedInstancePolicy()
        if realtime_cpus:
            raise exception.RealtimeConfigurationInvalid()
        return dedicated_cpus
    if cpu_policy == policies.DEDICATED:
        if dedicated_cpus:
            raise exception.RequiredMixedInstancePolicy()
        return dedicated_cpus
    # mixed: exactly one of the two masks says which CPUs are pinned (realtime ones are).
    if bool(realtime_cpus) == bool(dedicated_cpus):
        raise exception.RequiredMixedOrRealtimeCPUMask()
    return dedicated_cpus or realtime_cpus


def _numa_topology_auto(nodes, flavor, vcpus, pcpus):
    """``nodes`` equal cells, guest CPUs handed out in order.

    :raises: ImageNUMATopologyAsymmetric when CPUs or memory do not split evenly
    """
    from minisched import objects
    if flavor.vcpus % nodes or flavor.memory_mb % nodes:
        raise exception.ImageNUMATopologyAsymmetric()
    ncpus, memory = flavor.vcpus // nodes, flavor.memory_mb // nodes
    cells = []
    for node in range(nodes):
        cpus = set(range(node * ncpus, (node + 1) * ncpus))
        cells.append(objects.InstanceNUMACell(id=node, cpuset=cpus & vcpus,
                                              pcpuset=cpus & pcpus, memory=memory))
    return objects.InstanceNUMATopology(cells=cells)


def _numa_topology_manual(nodes, flavor, vcpus, pcpus, cpu_list, mem_list):
    """Cells with the CPUs and memory the user gave each node.

    :raises: ImageNUMATopologyCPUOutOfRange, ImageNUMATopologyCPUDuplicates,
        ImageNUMATopologyCPUsUnassigned, ImageNUMATopologyMemoryOutOfRange
    """
    from minisched import objects
    unassigned = set(range(flavor.vcpus))
    cells = []
    for node in range(nodes):
        cpus, memory = cpu_list[node], mem_list[node]
        for cpu in cpus:
            if cpu > flavor.vcpus - 1:
                raise exception.ImageNUMATopologyCPUOutOfRange(cpunum=cpu,
                                                               cpumax=flavor.vcpus - 1)
            if cpu not in unassigned:
                raise exception.ImageNUMATopologyCPUDuplicates(cpunum=cpu)
            unassigned.remove(cpu)
        cells.append(objects.InstanceNUMACell(id=node, cpuset=cpus & vcpus,
                                              pcpuset=cpus & pcpus, memory=memory))
    if unassigned:
        raise exception.ImageNUMATopologyCPUsUnassigned(cpuset=str(unassigned))
    total = sum(mem_list[:nodes])
    if total != flavor.memory_mb:
        raise exception.ImageNUMATopologyMemoryOutOfRange(memsize=total,
                                                          memtotal=flavor.memory_mb)
    return objects.InstanceNUMATopology(cells=cells)


def numa_get_constraints(flavor, image_meta):
    """The guest NUMA topology ``flavor`` and ``image_meta`` ask for, or None.

    A topology is asked for by a NUMA node count, a page size, persistent memory, or a CPU
    policy that pins (``dedicated``, ``mixed``). Without per-node CPUs and memory the guest
    is split evenly; with them, every node needs both. Every cell gets the page size, CPU
    policy and thread policy; the topology gets the emulator threads policy.

    :raises: the Invalid/Forbidden exceptions of the single constraints above, and
        ImageNUMATopologyIncomplete when only some per-node settings are given, plus those
        of the even and explicit splits
    """
    cpu_policy = get_cpu_policy_constraint(flavor, image_meta)
    cpu_thread_policy = get_cpu_thread_policy_constraint(flavor, image_meta)
    realtime_cpus = get_realtime_cpu_constraint(flavor, image_meta)
    dedicated_cpus = get_dedicated_cpu_constraint(flavor)
    emu_threads_policy = get_emulator_thread_policy_constraint(flavor)

    cpu_policy = _cpu_policy_from_resources(flavor, cpu_policy, emu_threads_policy)
    cpu_thread_policy = _thread_policy_from_trait(flavor, image_meta, cpu_thread_policy)
    dedicated_cpus = _check_policy_combination(cpu_policy, cpu_thread_policy,
                                               emu_threads_policy, dedicated_cpus,
                                               realtime_cpus)

    nodes = _get_numa_node_count_constraint(flavor, image_meta)
    pagesize = _get_numa_pagesize_constraint(flavor, image_meta)
    vpmems = get_vpmems(flavor)
    get_locked_memory_constraint(flavor, image_meta)

    if not (nodes or pagesize or vpmems or cpu_policy in _PINNED_POLICIES):
        return None

    all_cpus = set(range(flavor.vcpus))
    # Under ``dedicated`` every guest CPU is pinned.
    if cpu_policy == fields.CPUAllocationPolicy.DEDICATED:
        pcpus = all_cpus
    else:
        pcpus = dedicated_cpus or set()
    vcpus = all_cpus - pcpus
    nodes = nodes or 1
    cpu_list = _get_numa_cell_constraint(flavor, image_meta, 'numa_cpus', parse_cpu_spec)
    mem_list = _get_numa_cell_constraint(flavor, image_meta, 'numa_mem', int)
    if cpu_list is None and mem_list is None:
        topology = _numa_topology_auto(nodes, flavor, vcpus, pcpus)
    elif cpu_list is None or mem_list is None:
        raise exception.ImageNUMATopologyIncomplete()
    elif len(cpu_list) != nodes or len(mem_list) != nodes:
        raise exception.ImageNUMATopologyIncomplete()
    else:
        topology = _numa_topology_manual(nodes, flavor, vcpus, pcpus, cpu_list, mem_list)

    # The same page size and policies for every cell, though stored per cell (as in Nova).
    for cell in topology.cells:
        cell.pagesize = pagesize
        cell.cpu_policy = cpu_policy
        cell.cpu_thread_policy = cpu_thread_policy
    topology.emulator_threads_policy = emu_threads_policy
    return topology
