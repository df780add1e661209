"""Random scenarios (JSON) for the Nova vs minisched filter/weigher diff."""
import json
import random
import sys

NOW = '2026-01-01T12:00:00'
UUIDS = ['%08x-0000-4000-8000-%012x' % (i, i) for i in range(1, 13)]
AGG_KEYS = ['ram_allocation_ratio', 'cpu_allocation_ratio', 'disk_allocation_ratio',
            'max_io_ops_per_host', 'max_instances_per_host', 'availability_zone', 'ssd',
            'filter_tenant_id', 'filter_tenant_id2', 'instance_type', 'hw_architecture',
            'img_hv_type', 'os_distro', 'ns.hw_vm_mode', 'gpu',
            'ram_weight_multiplier', 'cpu_weight_multiplier', 'disk_weight_multiplier',
            'io_ops_weight_multiplier', 'build_failure_weight_multiplier',
            'soft_affinity_weight_multiplier', 'soft_anti_affinity_weight_multiplier',
            'metrics_weight_multiplier', 'hypervisor_version_weight_multiplier',
            'num_instances_weight_multiplier']
AGG_VALUES = {
    'ratio': ['0.5', '1', '1.5', '2.0', '16', '0', 'bad', '3', ' 4 ', '1e3'],
    'int': ['0', '1', '2', '5', '8', '50', 'x', '3.5', '-1'],
    'availability_zone': ['az1', 'az2', 'nova', 'az1,az2'],
    'ssd': ['true', 'false', 'true, false', '1'],
    'filter_tenant_id': ['p1', 'p2', 'p1,p2', 'p3, p1', ''],
    'instance_type': ['m1.small', 'm1.large', 'm1.small, m1.large', 'm1.tiny,m1.small'],
    'hw_architecture': ['x86_64', 'aarch64', 'x86_64, aarch64'],
    'img_hv_type': ['kvm', 'qemu', 'kvm,qemu'],
    'os_distro': ['ubuntu', 'centos', 'ubuntu, centos'],
    'ns.hw_vm_mode': ['hvm', 'xen'],
    'gpu': ['nv', 'amd', '2', '10'],
    'weight': ['0', '1', '-1', '2.5', '1000000', 'bad', '-0.5'],
}


def agg_value(rng, key):
    if key.endswith('allocation_ratio'):
        return rng.choice(AGG_VALUES['ratio'])
    if key.startswith('max_'):
        return rng.choice(AGG_VALUES['int'])
    if key.endswith('weight_multiplier'):
        return rng.choice(AGG_VALUES['weight'])
    if key.startswith('filter_tenant_id'):
        return rng.choice(AGG_VALUES['filter_tenant_id'])
    return rng.choice(AGG_VALUES[key])


def aggregates(rng, hosts, weights):
    aggs = []
    keys = [k for k in AGG_KEYS if weights or not k.endswith('weight_multiplier')]
    for i in range(rng.randint(0, 4)):
        members = [h for h in hosts if rng.random() < 0.5]
        metadata = {}
        for key in rng.sample(keys, rng.randint(0, 3)):
            metadata[key] = agg_value(rng, key)
        aggs.append({'id': i + 1, 'name': 'agg%d' % (i + 1), 'hosts': members,
                     'metadata': metadata})
    return aggs


def cpu_info(rng):
    return rng.choice([None, '', '{"vendor": "Intel", "topology": {"cores": 4, "threads": 2}, '
                       '"features": ["vmx", "sse"]}',
                       '{"vendor": "AMD", "topology": {"cores": "8"}, '
                       '"maxphysaddr": {"bits": 46}}'])


def compute(rng, index, host, node):
    mem = rng.choice([1024, 2048, 4096, 8192, 16384, 65536])
    local_gb = rng.choice([10, 20, 40, 100, 500])
    vcpus = rng.choice([0, 1, 2, 4, 8, 16])
    free_ram = mem - rng.randint(-512, mem + 1024)
    used_gb = rng.randint(0, local_gb + 10)
    free_gb = local_gb - used_gb
    stats = {}
    if rng.random() < 0.8:
        stats['num_instances'] = str(rng.randint(0, 60))
    if rng.random() < 0.8:
        stats['io_workload'] = str(rng.randint(0, 10))
    if rng.random() < 0.5:
        stats['failed_builds'] = str(rng.choice([0, 0, 1, 3]))
    if rng.random() < 0.3:
        stats['gpu'] = rng.choice(['nv', 'amd', '2'])
    metrics = []
    for name in ('cpu.frequency', 'cpu.percent', 'cpu.idle.percent'):
        if rng.random() < 0.6:
            metrics.append({'name': name, 'value': rng.choice([0, 1, 10, 2400, 0.5, 97.5]),
                            'source': 'fake', 'timestamp': NOW})
    return {
        'uuid': (UUIDS[index] if index < len(UUIDS)
                 else '%08x-1111-4000-8000-%012x' % (index, index)),
        'host': host, 'hypervisor_hostname': node,
        'memory_mb': mem, 'free_ram_mb': free_ram, 'memory_mb_used': mem - free_ram,
        'local_gb': local_gb, 'local_gb_used': used_gb, 'free_disk_gb': free_gb,
        'disk_available_least': rng.choice([None, free_gb, free_gb - 5, free_gb + 5]),
        'vcpus': vcpus, 'vcpus_used': rng.randint(0, vcpus * 3 + 1),
        'cpu_allocation_ratio': rng.choice([16.0, 1.0, 2.0, 0.5, 4.0]),
        'ram_allocation_ratio': rng.choice([1.5, 1.0, 2.0, 0.5]),
        'disk_allocation_ratio': rng.choice([1.0, 1.5, 2.0, 0.5]),
        'hypervisor_type': rng.choice(['QEMU', 'fake', 'xen']),
        'hypervisor_version': rng.choice([0, 1000, 2011000, 6002000, 7000000]),
        'host_ip': rng.choice(['10.0.0.5', '10.0.1.7', '192.168.0.3']),
        'cpu_info': cpu_info(rng),
        'supported_hv_specs': rng.choice([[], [['x86_64', 'kvm', 'hvm']],
                                          [['x86_64', 'qemu', 'hvm'], ['aarch64', 'qemu', 'hvm']],
                                          [['x86_64', 'xen', 'xen']]]),
        'stats': stats,
        'metrics': json.dumps(metrics),
        'updated_at': NOW,
    }


def service(rng, host):
    ago = rng.choice([0, 10, 59, 61, 120, 3600, None])
    return {'host': host, 'disabled': rng.random() < 0.15, 'forced_down': rng.random() < 0.1,
            'last_seen_up_ago': ago, 'created_ago': rng.choice([0, 30, 100000])}


def spec(rng, hosts):
    extra = {}
    for key in rng.sample(['ssd', 'aggregate_instance_extra_specs:ssd', 'hw:cpu_policy',
                           'capabilities:hypervisor_type', 'capabilities:cpu_info:vendor',
                           'capabilities:cpu_info:topology:cores', 'capabilities:stats:gpu',
                           'gpu', 'hypervisor_type', 'capabilities:gpu',
                           'aggregate_instance_extra_specs:gpu', 'vcpus_total',
                           'capabilities:vcpus_total'], rng.randint(0, 2)):
        extra[key] = rng.choice(['true', 'false', '<or> true <or> false', 's== true',
                                 '<in> ru', 'QEMU', 'Intel', '<in> nv', '4', 's>= 40', '= 2',
                                 '>= 4', '<all-in> nv', 'nv', '8', '== 8', '!= 8', '<= 4',
                                 's< a'])
    props = {}
    for key, values in (('hw_architecture', ['x86_64', 'aarch64', 'AMD64', 'i686']),
                        ('img_hv_type', ['kvm', 'qemu', 'xen', 'QEMU']),
                        ('hw_vm_mode', ['hvm', 'xen']),
                        ('img_hv_requested_version', ['>= 6.0', '< 7.0', '>= 2.11, < 7']),
                        ('os_distro', ['ubuntu', 'centos'])):
        if rng.random() < 0.25:
            props[key] = rng.choice(values)
    hints = {}
    if rng.random() < 0.2:
        hints['same_host'] = rng.sample(UUIDS, rng.randint(1, 2))
    if rng.random() < 0.2:
        hints['different_host'] = rng.sample(UUIDS, rng.randint(1, 2))
    if rng.random() < 0.15:
        hints['build_near_host_ip'] = rng.choice(['10.0.0.1', '192.168.0.9'])
        if rng.random() < 0.5:
            hints['cidr'] = rng.choice(['/24', '/16', '/32'])
    if rng.random() < 0.25:
        hints['query'] = rng.choice([
            '[">=", "$free_ram_mb", 1024]', '["in", "$host", "h0", "h2"]',
            '["not", ["=", "$nodename", "h1"]]',
            '["and", [">", "$vcpus_total", 4], ["<", "$num_io_ops", 3]]',
            '["or", ["=", "$hypervisor_type", "QEMU"], [">", "$free_disk_mb", 20000]]',
            '["=", "$stats.gpu", "nv"]', '[">", "$total_usable_ram_mb", 4000, 9000]'])
    group = None
    if rng.random() < 0.4:
        policy = rng.choice(['affinity', 'anti-affinity', 'soft-affinity', 'soft-anti-affinity'])
        group = {'policy': policy, 'members': rng.sample(UUIDS, rng.randint(0, 5)),
                 'hosts': rng.sample(hosts, rng.randint(0, min(2, len(hosts)))),
                 'rules': ({'max_server_per_host': rng.choice([1, 2, 3])}
                           if policy == 'anti-affinity' and rng.random() < 0.5 else {})}
    flavor_name = rng.choice(['m1.tiny', 'm1.small', 'm1.large'])
    return {
        'flavor': {'name': flavor_name, 'flavorid': flavor_name, 'id': rng.choice([1, 2, 3]),
                   'memory_mb': rng.choice([64, 512, 2048, 4096, 8192]),
                   'vcpus': rng.choice([1, 2, 4, 8]), 'root_gb': rng.choice([0, 1, 10, 40]),
                   'ephemeral_gb': rng.choice([0, 0, 5]), 'swap': rng.choice([0, 0, 512]),
                   'extra_specs': extra},
        'image': {'id': rng.choice(['11111111-2222-4333-8444-555555555555',
                                    '99999999-2222-4333-8444-555555555555']),
                  'properties': props},
        'project_id': rng.choice(['p1', 'p2', 'p4']),
        'user_id': 'u1',
        'availability_zone': rng.choice([None, None, 'az1', 'az2', 'nova']),
        'instance_uuid': rng.choice(UUIDS + ['aaaaaaaa-0000-4000-8000-000000000000'] * 6),
        'scheduler_hints': hints,
        'group': group,
        'num_instances': 1,
        'retry': ({'num_attempts': rng.randint(1, 3),
                   'hosts': [[h, h if rng.random() < 0.7 else h + '-n']
                             for h in rng.sample(hosts, rng.randint(0, len(hosts)))]}
                  if rng.random() < 0.4 else None),
    }


def conf(rng):
    fs = {}
    if rng.random() < 0.5:
        fs['max_io_ops_per_host'] = rng.choice([0, 1, 3, 8])
    if rng.random() < 0.5:
        fs['max_instances_per_host'] = rng.choice([1, 5, 30, 50])
    if rng.random() < 0.3:
        fs['isolated_images'] = ['11111111-2222-4333-8444-555555555555']
        fs['isolated_hosts'] = ['h1', 'h3']
        fs['restrict_isolated_hosts_to_isolated_images'] = rng.random() < 0.5
    if rng.random() < 0.3:
        fs['aggregate_image_properties_isolation_namespace'] = rng.choice(['ns', 'hw'])
        fs['aggregate_image_properties_isolation_separator'] = rng.choice(['.', '_'])
    if rng.random() < 0.2:
        fs['image_properties_default_architecture'] = rng.choice(['x86_64', 'aarch64'])
    for opt in ('ram_weight_multiplier', 'cpu_weight_multiplier', 'disk_weight_multiplier',
                'io_ops_weight_multiplier', 'build_failure_weight_multiplier',
                'hypervisor_version_weight_multiplier', 'num_instances_weight_multiplier'):
        if rng.random() < 0.3:
            fs[opt] = rng.choice([0.0, 1.0, -1.0, 2.5, 1000.0])
    for opt in ('soft_affinity_weight_multiplier', 'soft_anti_affinity_weight_multiplier'):
        if rng.random() < 0.3:
            fs[opt] = rng.choice([0.0, 1.0, 2.5])
    metrics = {}
    if rng.random() < 0.4:
        metrics['weight_setting'] = rng.sample(['cpu.frequency=1', 'cpu.percent=-2.5',
                                                'cpu.idle.percent=0.5', 'cpu.frequency=0'],
                                               rng.randint(1, 2))
        metrics['required'] = rng.random() < 0.3
        metrics['weight_multiplier'] = rng.choice([1.0, 0.0, -1.0])
    default = {'default_availability_zone': rng.choice(['nova', 'az1']),
               'service_down_time': 60}
    return {'filter_scheduler': fs, 'metrics': metrics, 'DEFAULT': default}


def scenario(seed, weights=True):
    rng = random.Random(seed)
    count = rng.randint(1, 6)
    names = ['h%d' % i for i in range(count)]
    hosts = []
    pool = list(UUIDS)
    for i, name in enumerate(names):
        node = name if rng.random() < 0.8 else name + '-n'
        insts = [u for u in pool if rng.random() < 0.15]
        hosts.append({'host': name, 'node': node, 'compute': compute(rng, i, name, node),
                      'service': service(rng, name), 'instances': insts})
    return {'seed': seed, 'now': NOW, 'conf': conf(rng), 'hosts': hosts,
            'aggregates': aggregates(rng, names, weights), 'spec': spec(rng, names)}


if __name__ == '__main__':
    first, count = int(sys.argv[1]), int(sys.argv[2])
    json.dump([scenario(s) for s in range(first, first + count)], sys.stdout)
