"""Flavor extra specs: which keys Nova knows, and what each one's value may be.

The rules of Nova's extra spec validators (``nova/api/validation/extra_specs``, enforced from
API microversion 2.86), as a table: a key Nova knows must have a value of its type (integer
within bounds, boolean-like, one of a few words, or matching a pattern); a key in one of
Nova's namespaces (``hw:``, ``pci_passthrough:``, ``capabilities:``, ``resources1:``...)
that no rule knows is refused as a typo; any other key (no namespace, or a namespace of its
own) is accepted as it is. ``validate_extra_specs`` adds the schema of the flavor extra specs
API: keys of 1 to 255 of ``a-z A-Z 0-9 - _ : .`` and space, values of at most 255
characters (strings or numbers, kept as strings).

Two differences with Nova, both deliberate: standard resource class and trait names are
checked by form (``[A-Z0-9_]+``), not against the lists of ``os-resource-classes`` and
``os-traits`` (not dependencies of minisched); and ``hw:maxphysaddr_mode`` /
``hw:maxphysaddr_bits``, which Nova's scheduler reads but for which Nova 34 has no
validator (it refuses them as unknown ``hw:`` keys), are accepted with their types.
"""
import collections
import re

from oslo_utils import strutils

from minisched.api.validation import parameter_types

INT, BOOL, STR = 'integer', 'boolean', 'string'

#: One key's rule: ``name`` is a regular expression matched against the whole key.
Rule = collections.namedtuple('Rule', 'name kind choices pattern minimum maximum')


def _rule(name, kind=STR, choices=(), pattern=None, minimum=None, maximum=None):
    return Rule(name, kind, tuple(choices), pattern, minimum, maximum)


def _key(literal):
    return re.escape(literal)


#: Guest CPUs as a CPU map (``0-3,^2``): ``hw:cpu_realtime_mask`` and the like.
_CPU_MASK = r'\^?\d+((-\d+)?(,\^?\d+(-\d+)?)?)*'
#: A placement request group suffix of ``resourcesN:`` and ``traitN:``.
_GROUP = r'([a-zA-Z0-9_-]{1,64})?'

_HW = [
    _rule(_key('hw:cpu_realtime'), BOOL),
    _rule(_key('hw:cpu_realtime_mask'), pattern=_CPU_MASK),
    _rule(_key('hw:hide_hypervisor_id'), BOOL),
    _rule(_key('hw:cpu_policy'), choices=('dedicated', 'shared', 'mixed')),
    _rule(_key('hw:cpu_thread_policy'), choices=('prefer', 'isolate', 'require')),
    _rule(_key('hw:emulator_threads_policy'), choices=('isolate', 'share')),
    _rule(_key('hw:cpu_dedicated_mask'), pattern=_CPU_MASK),
    _rule(_key('hw:mem_page_size'), pattern=r'(large|small|any|\d+([kKMGT]i?)?(b|bit|B)?)'),
    _rule(_key('hw:locked_memory'), BOOL),
    _rule(_key('hw:numa_nodes'), INT, minimum=1),
    _rule(_key('hw:numa_cpus.') + r'\d+', pattern=_CPU_MASK),
    _rule(_key('hw:numa_mem.') + r'\d+', INT, minimum=1),
    _rule(_key('hw:pci_numa_affinity_policy'),
          choices=('required', 'preferred', 'legacy', 'socket')),
    _rule(_key('hw:boot_menu'), BOOL),
    _rule(_key('hw:vif_multiqueue_enabled'), BOOL),
    _rule(_key('hw:mem_encryption'), BOOL),
    _rule(_key('hw:mem_encryption_model'),
          choices=('amd-sev', 'amd-sev-es', 'amd-sev-snp', 'intel-tdx')),
    _rule(_key('hw:pmem'), pattern='([a-zA-Z0-9_]+(,)?)+'),
    _rule(_key('hw:pmu'), BOOL),
    _rule(_key('hw:serial_port_count'), INT, minimum=0),
    _rule(_key('hw:tpm_model'), choices=('tpm-tis', 'tpm-crb')),
    _rule(_key('hw:tpm_version'), choices=('1.2', '2.0')),
    _rule(_key('hw:tpm_secret_security'), choices=('user', 'host', 'deployment')),
    _rule(_key('hw:watchdog_action'),
          choices=('none', 'pause', 'poweroff', 'reset', 'disabled')),
    _rule(_key('hw:viommu_model'), choices=('intel', 'smmuv3', 'virtio', 'auto')),
    _rule(_key('hw:virtio_packed_ring'), BOOL),
    _rule(_key('hw:sound_model'),
          choices=('sb16', 'es1370', 'pcspk', 'ac97', 'ich6', 'ich9', 'usb', 'virtio')),
    _rule(_key('hw:usb_model'), choices=('none', 'nec-xhci', 'qemu-xhci')),
    _rule(_key('hw:redirected_usb_ports'), INT, minimum=0, maximum=15),
    _rule(_key('hw:ephemeral_encryption'), BOOL),
    _rule(_key('hw:ephemeral_encryption_format'), choices=('plain', 'luks', 'luksv2')),
    # Not in Nova 34's validators (see the module docstring); read by minisched's
    # ComputeCapabilitiesFilter and hardware module as by Nova's.
    _rule(_key('hw:maxphysaddr_mode'), choices=('passthrough', 'emulate')),
    _rule(_key('hw:maxphysaddr_bits'), INT, minimum=1),
] + [_rule(_key('hw:%s' % name), INT, minimum=1)
     for name in ('cpu_sockets', 'cpu_cores', 'cpu_threads', 'cpu_max_sockets',
                  'cpu_max_cores', 'cpu_max_threads')]

_OTHERS = [
    _rule(_key('hide_hypervisor_id'), BOOL),  # deprecated for hw:hide_hypervisor_id
    _rule(_key('group_policy'), choices=('isolate', 'none')),
    _rule(_key('os:secure_boot'), choices=('disabled', 'required')),
    _rule(_key('hw_rng:allowed'), BOOL),
    _rule(_key('hw_rng:rate_bytes'), INT, minimum=0),
    _rule(_key('hw_rng:rate_period'), INT, minimum=0),
    _rule(_key('hw_video:ram_max_mb'), INT, minimum=0),
    _rule(_key('accel:device_profile')),
    _rule(_key('vmware:hw_version')),
    _rule(_key('vmware:storage_policy')),
    # One or more comma-separated ``ALIAS:COUNT``.
    _rule(_key('pci_passthrough:alias'), pattern=r'[^:]+:\d+(?:\s*,\s*[^:]+:\d+)*'),
    # Read by AggregateInstanceExtraSpecsFilter; the value is an operator expression or a
    # plain value, any string.
    _rule(_key('aggregate_instance_extra_specs:') + '.+'),
    _rule('resources%s:[A-Z0-9_]+' % _GROUP, INT),
    _rule('trait%s:[A-Z0-9_]+' % _GROUP, choices=('required', 'forbidden')),
]

#: Host state attributes ComputeCapabilitiesFilter can compare; the second group may be
#: followed by ``:sub:keys`` into the attribute's structure.
_CAPABILITIES = (
    'id', 'uuid', 'service_id', 'host', 'vcpus', 'memory_mb', 'local_gb', 'vcpus_used',
    'memory_mb_used', 'local_gb_used', 'hypervisor_type', 'hypervisor_version',
    'hypervisor_hostname', 'free_ram_mb', 'free_disk_gb', 'current_workload', 'running_vms',
    'disk_available_least', 'host_ip', 'mapped', 'cpu_allocation_ratio',
    'ram_allocation_ratio', 'disk_allocation_ratio', 'total_usable_ram_mb',
    'total_usable_disk_gb', 'disk_mb_used', 'free_disk_mb', 'vcpus_total', 'num_instances',
    'num_io_ops', 'failed_builds', 'aggregates', 'cell_uuid', 'updated')
_STRUCTURED_CAPABILITIES = (
    'cpu_info', 'metrics', 'stats', 'numa_topology', 'supported_hv_specs',
    'pci_device_pools', 'nodename', 'pci_stats', 'supported_instances', 'limits',
    'instances')
_CAPABILITY_RULES = (
    [_rule(_key('capabilities:' + name)) for name in _CAPABILITIES] +
    [_rule(_key('capabilities:' + name) + r'(:\w+)*') for name in _STRUCTURED_CAPABILITIES])


def _quota_rules():
    rules = []
    for resource in ('cpu', 'memory', 'disk_io', 'vif'):
        rules += [_rule(_key('quota:%s_limit' % resource), INT, minimum=0),
                  _rule(_key('quota:%s_reservation' % resource), INT),
                  _rule(_key('quota:%s_shares_level' % resource),
                        choices=('custom', 'high', 'normal', 'low')),
                  _rule(_key('quota:%s_shares_share' % resource), INT, minimum=0)]
    rules += [_rule(_key('quota:cpu_shares'), INT, minimum=0),
              _rule(_key('quota:cpu_period'), INT, minimum=0),
              _rule(_key('quota:cpu_quota'), INT)]
    rules += [_rule(_key('quota:disk_%s_%s_sec' % (stat, metric)), INT, minimum=0)
              for stat in ('read', 'write', 'total') for metric in ('bytes', 'iops')]
    rules += [_rule(_key('quota:vif_%s_%s' % (way, metric)), INT, minimum=0)
              for way in ('inbound', 'outbound') for metric in ('average', 'peak', 'burst')]
    return rules


RULES = _HW + _OTHERS + _CAPABILITY_RULES + _quota_rules()
_COMPILED = [(re.compile(rule.name), rule) for rule in RULES]
#: Namespaces (the part of a key before its first ``:``) whose unknown keys are refused.
NAMESPACES = re.compile('|'.join([
    'hw', 'hw_rng', 'hw_video', 'os', 'accel', 'vmware', 'pci_passthrough',
    'aggregate_instance_extra_specs', 'capabilities', 'quota', 'resources' + _GROUP,
    'trait' + _GROUP]))


def find_rule(key):
    """The rule of ``key``, or None when no rule names it."""
    return next((rule for regex, rule in _COMPILED if regex.fullmatch(key)), None)


def validate(key, value):
    """Refuse (ValidationError) a known ``key`` with a bad ``value``, or an unknown key of
    one of Nova's namespaces; ``value`` is the string the flavor keeps."""
    field = 'extra_specs.%s' % key
    rule = find_rule(key)
    if rule is None:
        namespace, sep, _rest = key.partition(':')
        if sep and NAMESPACES.fullmatch(namespace):
            raise parameter_types.invalid(
                field, value, "Extra spec '%s' does not appear to be a valid extra spec: the "
                "'%s' namespace has no such key." % (key, namespace))
        return
    problem = _value_problem(rule, value)
    if problem:
        raise parameter_types.invalid(field, value, problem)


def _value_problem(rule, value):
    if rule.kind == INT:
        try:
            number = int(value)
        except ValueError:
            return 'Is not a valid integer value.'
        if rule.maximum is not None and number > rule.maximum:
            return 'Is greater than the maximum of %d.' % rule.maximum
        if rule.minimum is not None and number < rule.minimum:
            return 'Is less than the minimum of %d.' % rule.minimum
    elif rule.kind == BOOL:
        try:
            strutils.bool_from_string(value, strict=True)
        except ValueError:
            return 'Is not a valid boolean-like value (true/false, yes/no, on/off, 1/0).'
    elif rule.pattern and not re.fullmatch(rule.pattern, value):
        return "Is not of the format '%s'." % rule.pattern
    elif rule.choices and value not in rule.choices:
        return 'Is not one of: %s.' % ', '.join(rule.choices)
    return None


def validate_extra_specs(specs):
    """``specs`` as a flavor keeps them (``{key: string}``), once each pair passes the
    flavor extra specs API's schema and ``validate``; refuses with a ValidationError."""
    if not isinstance(specs, dict):
        raise parameter_types.invalid('extra_specs', specs, 'Is of type %s, not an object '
                                      '(a dict).' % type(specs).__name__)
    result = {}
    for key, value in specs.items():
        parameter_types.check_metadata('extra_specs', {key: ''})  # the key's schema
        field = 'extra_specs.%s' % key
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)  # numbers are accepted, and kept as strings
        parameter_types.check_string(field, value, 0, parameter_types.MAX_LENGTH)
        validate(key, value)
        result[key] = value
    return result

