"""Small hand-sized snapshots, and small filesystems, for the snapshot, record and replay
tests."""
import datetime
import os
import subprocess

from minisched.scheduler.replay import snapshot

TAKEN = datetime.datetime(2026, 5, 1, 12, 0, tzinfo=datetime.timezone.utc)
SMALL = {'id': 1, 'flavorid': 'f-small', 'name': 'small', 'memory_mb': 1024, 'vcpus': 1,
         'root_gb': 10, 'ephemeral_gb': 0, 'swap': 0, 'extra_specs': {}}
BIG = {'id': 2, 'flavorid': 'f-big', 'name': 'big', 'memory_mb': 4096, 'vcpus': 2, 'root_gb': 10,
       'ephemeral_gb': 0, 'swap': 0, 'extra_specs': {}}
#: RAM, vCPU and disk rejecting filters, and the service check.
FILTERS = ['ComputeFilter', 'RamFilter', 'CoreFilter', 'DiskFilter']


def pair(index, host, vcpus=4, memory_mb=4096, local_gb=40, beat=TAKEN):
    """``(service row, node row)`` of an empty host, all ratios 1.0, last heard at ``beat``."""
    naive = beat.replace(tzinfo=None)
    service = {'id': index, 'uuid': '00000000-0000-0000-0000-%012d' % index, 'host': host,
               'binary': 'minisched-compute', 'topic': 'compute', 'report_count': 3,
               'disabled': False, 'disabled_reason': None, 'last_seen_up': naive,
               'forced_down': False, 'version': 1, 'created_at': naive, 'updated_at': naive,
               'deleted_at': None, 'deleted': 0}
    node = {'id': index, 'uuid': '10000000-0000-0000-0000-%012d' % index,
            'service_id': index, 'host': host, 'hypervisor_hostname': host, 'vcpus': vcpus,
            'memory_mb': memory_mb, 'local_gb': local_gb, 'vcpus_used': 0,
            'memory_mb_used': 0, 'local_gb_used': 0, 'hypervisor_type': 'fake',
            'hypervisor_version': 1000, 'free_ram_mb': memory_mb, 'free_disk_gb': local_gb,
            'current_workload': 0, 'running_vms': 0, 'cpu_info': '',
            'disk_available_least': local_gb, 'host_ip': '10.0.0.%d' % index,
            'supported_instances': '[["x86_64", "fake", "hvm"]]', 'metrics': '[]',
            'pci_stats': None, 'extra_resources': None, 'stats': '{}', 'numa_topology': None,
            'ram_allocation_ratio': 1.0, 'cpu_allocation_ratio': 1.0,
            'disk_allocation_ratio': 1.0, 'mapped': 1, 'created_at': naive,
            'updated_at': naive, 'deleted_at': None, 'deleted': 0}
    return service, node


def two_hosts(**sections):
    """Hosts ``a`` and ``b`` (4 vCPUs, 4 GB, 40 GB each, empty), the small and big flavors."""
    return snapshot.from_rows([pair(1, 'a'), pair(2, 'b')], taken=TAKEN,
                              flavors=[SMALL, BIG], **sections)


def mount_tmpfs(point, *options):
    """Mount a tmpfs with ``options`` (``size=64k``, ``ro``...) on the directory ``point``;
    the command that unmounts it. Needs root: without, None under ``CI=true`` (the caller
    fails), else the error for a skip."""
    done = subprocess.run(['mount', '-t', 'tmpfs', '-o', ','.join(options or ('size=64k',)),
                           'tmpfs', str(point)], capture_output=True, text=True)
    if done.returncode:
        return None, 'cannot mount a tmpfs (needs root): %s' % done.stderr.strip()
    return ['umount', '-l', str(point)], None


def need_tmpfs(point, *options):
    """:func:`mount_tmpfs`, or a failure under ``CI=true`` / a skip elsewhere; returns the
    unmount command."""
    import pytest
    umount, error = mount_tmpfs(point, *options)
    if error:
        if os.environ.get('CI', '').lower() == 'true':
            pytest.fail(error)
        pytest.skip(error)
    return umount


def fill(directory):
    """Take every free page of the filesystem of ``directory`` (a file named ``filler``);
    its path."""
    path = os.path.join(str(directory), 'filler')
    with open(path, 'wb', buffering=0) as handle:
        try:
            while True:
                handle.write(b'x' * 4096)
        except OSError:
            pass
    return path
