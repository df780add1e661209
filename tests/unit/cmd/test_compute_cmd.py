"""minisched-compute stops at once, with one line and exit 1, on a driver setting it cannot
run with (before it waits for a conductor that may never come)."""
import subprocess
import sys

import pytest


def _run(tmp_path, lines):
    conf = tmp_path / 'compute.conf'
    conf.write_text('\n'.join(['[DEFAULT]', 'transport_url = fake://', 'host = c1'] + lines))
    return subprocess.run([sys.executable, '-m', 'minisched.cmd.compute', '--config-file',
                           str(conf)], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize('lines, words', [
    (['[fake_driver]', 'numa_nodes = 3'], '[fake_driver] vcpus (16) must be a multiple'),
    (['[fake_driver]', 'pci_devices = {"vendor_id": "8086"}'], "'product_id'"),
    (['[fake_driver]', 'host_sizes = c1:4/x/10'], '[fake_driver] host_sizes for c1'),
    (['compute_driver = libvirt.LibvirtDriver'], 'libvirt.LibvirtDriver'),
])
def test_bad_driver_settings_stop_the_compute_with_one_line(tmp_path, lines, words):
    result = _run(tmp_path, lines)
    assert result.returncode == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith('minisched-compute: error: ') and words in last, result.stderr
    assert 'Traceback' not in result.stderr
