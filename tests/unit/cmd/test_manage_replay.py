"""minisched-manage scheduler snapshot and replay: output, figures, and one line per bad input.

In-process (test_manage_cli's ``run``: main() over SQLite databases of the test's own)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from minisched.scheduler.replay import snapshot
from tests.unit.cmd import test_manage_cli as cli
from tests.unit.scheduler import replay_hosts

run, templates, rows = cli.run, cli.templates, cli.rows

FILTERS = '[filter_scheduler]\nenabled_filters = %s\nweight_classes = RAMWeigher\n' % \
    ','.join(replay_hosts.FILTERS)


@pytest.fixture
def files(tmp_path):
    """The two-host snapshot, and configurations that spread, stack, or name no filter."""
    paths = {'snapshot': tmp_path / 'snap.json'}
    snapshot.dump(replay_hosts.two_hosts(), str(paths['snapshot']))
    for name, text in (('spread', FILTERS),
                       ('stack', FILTERS + 'ram_weight_multiplier = -1.0\n'),
                       ('bad', '[filter_scheduler]\nenabled_filters = RamFilter,NoSuch\n')):
        paths[name] = tmp_path / ('%s.conf' % name)
        paths[name].write_text(text)
    return {name: str(path) for name, path in paths.items()}


def replay(run, files, *args):
    return run('scheduler', 'replay', files['snapshot'], *args)


def test_compare_sets_both_configurations_side_by_side(run, files):
    code, out, err = replay(run, files, '--flavor', 'small', '--count', 3, '--compare',
                            files['spread'], files['stack'])
    assert code == 0, err
    table = {row['Figure']: row for row in rows(out)}
    assert table['hosts used (before -> after)'] == {
        'Figure': 'hosts used (before -> after)', 'spread.conf': '0 -> 2',
        'stack.conf': '0 -> 1'}
    assert table['small that still fit (before -> after)']['stack.conf'] == '8 -> 5'
    assert table['requests placed differently']['spread.conf'] == '1'
    assert table['request #2 (small)']['spread.conf'] == 'b'
    assert table['request #2 (small)']['stack.conf'] == 'a'


def test_json_output_has_a_record_per_figure_and_host(run, files):
    code, out, err = replay(run, files, '--flavor', 'big', '--count', 3, '--config-file',
                            files['spread'], '-f', 'json', '--per-host')
    assert code == 0, err
    figures = {item['Figure']: item['spread.conf'] for item in json.loads(out)}
    assert figures['instances placed'] == 2
    assert figures['NoValidHost'] == 1
    assert figures['NoValidHost: emptied by RamFilter'] == 1
    # A big one (4 GB, 2 vCPUs, 10 GB) on each host of 4 GB, 4 vCPUs, 40 GB.
    assert figures['host a RAM/vCPU/disk used % of allocatable'] == '100.0/50.0/25.0'
    assert figures['host b RAM/vCPU/disk used % of allocatable'] == '100.0/50.0/25.0'


def test_plot_writes_the_figures_and_says_where(run, files, tmp_path):
    pytest.importorskip('matplotlib')
    code, _out, err = replay(run, files, '--flavor', 'small', '--count', 2, '--compare',
                             files['spread'], files['stack'], '--plot', str(tmp_path / 'png'))
    assert code == 0, err
    names = ('capacity.png', 'utilization.png', 'funnel.png')
    assert err.splitlines() == ['Wrote %s' % (tmp_path / 'png' / name) for name in names]
    for name in names:
        assert (tmp_path / 'png' / name).read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


def test_figures_that_cannot_be_written_are_one_line(run, files, tmp_path):
    pytest.importorskip('matplotlib')
    blocker = tmp_path / 'a-file'
    blocker.write_text('')
    code, out, err = replay(run, files, '--flavor', 'small', '--plot', str(blocker / 'png'))
    assert (code, out) == (1, '')
    assert err == 'Cannot write the replay figures to %s: Not a directory\n' % (blocker / 'png')


def test_plot_without_matplotlib_says_what_to_install(run, files, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, 'matplotlib', None)  # import matplotlib fails
    code, out, err = replay(run, files, '--flavor', 'small', '--plot', str(tmp_path))
    assert (code, out) == (1, '')
    assert 'pip install "minisched[plot]"' in err and err.count('\n') == 1


def _cut(path):
    with open(path) as handle:
        text = handle.read()
    with open(path, 'w') as handle:
        handle.write(text[:len(text) // 2])


def _versioned(path, version):
    with open(path) as handle:
        value = json.load(handle)
    with open(path, 'w') as handle:
        json.dump(dict(value, version=version), handle)


@pytest.mark.parametrize('spoil, args, message', [
    (lambda f: _cut(f['snapshot']), ('--flavor', 'small'), 'not JSON, or cut short'),
    (lambda f: _versioned(f['snapshot'], 2), ('--flavor', 'small'),
     'version 2, this minisched reads version 1'),
    (None, ('--flavor', 'small', '--config-file', '{bad}'),
     'Cannot replay with the configuration bad.conf: Scheduler Host Filter NoSuch could not '
     'be found'),
    (None, ('--flavor', 'small', '--config-file', '/nonexistent.conf'),
     'Cannot replay with the configuration /nonexistent.conf'),
    (None, ('{trace}',), 'Cannot read the request trace'),
    (None, ('--flavor', 'huge'), "no flavor 'huge' in the snapshot"),
    (None, (), 'give the requests one way'),
])
def test_bad_input_is_one_line_and_exit_1(run, files, tmp_path, spoil, args, message):
    if spoil:
        spoil(files)
    trace = tmp_path / 'requests-1.jsonl'
    trace.write_text('{"version": 1, "request_spec": {"minisched_object.da')
    args = [a.format(bad=files['bad'], trace=trace) for a in args]
    code, out, err = replay(run, files, *args)
    assert (code, out) == (1, ''), err
    assert message in err and err.count('\n') == 1, err
    assert 'Traceback' not in err


def test_snapshot_reads_the_deployment_through_the_scheduler_objects(run, tmp_path):
    assert run('flavor', 'create', 'm1.tiny', '--ram', 512, '--vcpus', 1, '--disk', 1)[0] == 0
    path = tmp_path / 'out.json'
    code, out, err = run('scheduler', 'snapshot', '-o', str(path), '--anonymize')
    assert code == 0, err
    assert cli.fields(out)['Flavors'] == '1'
    taken = snapshot.load(str(path))
    assert [f['name'] for f in taken['flavors']] == ['m1.tiny']
    assert taken['hosts'] == [] and taken['anonymized'] is True


# -- hostile files and failed writes: one line on stderr, exit 1 -----------------------


def _node_set(field, value):
    def spoil(snap):
        snap['hosts'][0]['node'][field] = value
    return spoil


def _set(path, value):
    def spoil(snap):
        *parents, last = path
        target = snap
        for key in parents:
            target = target[key]
        target[last] = value
    return spoil


def _duplicate_host(snap):
    snap['hosts'].append(snap['hosts'][0])


@pytest.mark.parametrize('spoil, message', [
    (_node_set('memory_mb', 'abc'), "hosts[0].node.memory_mb must be integer (got 'abc')"),
    (_node_set('memory_mb', 1e308), 'hosts[0].node.memory_mb must be smaller than or equal '
                                    'to 2147483647'),
    (_node_set('memory_mb', -1), 'hosts[0].node.memory_mb must be bigger than or equal to 0'),
    (_node_set('vcpus', None), 'hosts[0].node.vcpus must be integer (got None)'),
    (_node_set('stats', '[1]'), 'hosts[0].node.stats holds JSON that must be object'),
    (_node_set('numa_topology', '{bad'), 'hosts[0].node.numa_topology holds no JSON'),
    (_node_set('updated_at', 'never'), 'hosts[0].node.updated_at must be an ISO 8601 time'),
    (_set(('instances',), [5]), 'instances[0] must be object (got 5)'),
    # Valid JSON of the right shape whose content the object layer refuses:
    (_node_set('numa_topology', json.dumps({
        'minisched_object.name': 'NUMATopology', 'minisched_object.namespace': 'minisched',
        'minisched_object.version': '1.2', 'minisched_object.data': {'cells': 5}})),
     "host 'a' node 'a' cannot be held: TypeError"),
    (_node_set('pci_stats', '{"a": 1}'), "host 'a' node 'a' cannot be held: KeyError"),
    (_duplicate_host, "hosts[2]: host 'a' node 'a' is listed twice"),
    (_set(('flavors', 0, 'memory_mb'), -5), 'flavors[0].memory_mb must be bigger than or equal'),
])
def test_a_hostile_snapshot_field_is_named_in_one_line(run, files, spoil, message):
    with open(files['snapshot']) as handle:
        snap = json.load(handle)
    spoil(snap)
    with open(files['snapshot'], 'w') as handle:
        json.dump(snap, handle)
    code, out, err = replay(run, files, '--flavor', 'small')
    assert (code, out) == (1, ''), err
    assert message in err and err.count('\n') == 1, err


def test_names_from_a_file_reach_the_terminal_escaped(run, files, tmp_path):
    with open(files['snapshot']) as handle:
        snap = json.load(handle)
    for entry in snap['hosts']:  # host 'a' renamed, everywhere it is named
        if entry['service']['host'] == 'a':
            for record in (entry['service'], entry['node']):
                record['host'] = 'a\x1b[31m\x07'
            entry['node']['hypervisor_hostname'] = 'a\x1b[31m\x07'
    snap['flavors'][0]['name'] = 'small\x1b[2J'
    with open(files['snapshot'], 'w') as handle:
        json.dump(snap, handle)
    code, out, err = replay(run, files, '--flavor', 'small\x1b[2J', '--per-host', '--count', 2)
    assert code == 0, err
    assert '\x1b' not in out + err and '\x07' not in out + err
    assert 'host a\\x1b[31m\\x07 RAM/vCPU/disk' in out
    assert 'small\\x1b[2J that still fit' in out
    code, out, err = replay(run, files, '--flavor', 'no\x1bsuch')
    assert code == 1 and "no flavor 'no\\x1bsuch'" in err and '\x1b' not in err


def test_fifos_devices_and_oversized_files_are_refused_without_reading(run, files, tmp_path):
    fifo = tmp_path / 'fifo'
    os.mkfifo(fifo)  # no writer: opening it to read would block
    for path, message in ((str(fifo), 'not a regular file (a FIFO)'),
                          ('/dev/zero', 'not a regular file (a character device)'),
                          (str(tmp_path), 'is a directory')):
        code, out, err = run('scheduler', 'replay', path, '--flavor', 'small')
        assert (code, out) == (1, ''), err
        assert message in err and err.count('\n') == 1, err
    code, out, err = replay(run, files, '--mix', '/dev/zero')
    assert code == 1 and 'not a regular file' in err and err.count('\n') == 1, err


@pytest.mark.parametrize('mix, message', [
    ([{'flavor': 'small', 'count': -5}], 'count must be bigger than or equal to 0'),
    ([{'flavor': 'small', 'count': 0}], '0 requests: give 1 to 100000'),
    ([{'flavor': 'small', 'count': 60000}] * 2, '120000 requests: give 1 to 100000'),
    ([{'flavor': 'small', 'count': 'x'}], 'count must be integer'),
    ([{'flavor': {'memory_mb': -1, 'vcpus': 1}}], 'flavor.memory_mb must be bigger than or '
                                                   'equal to 1'),
    ([{'flavor': 5}], 'flavor must be string or object'),
    ({'flavor': 'small'}, 'must be array'),
])
def test_mix_counts_and_flavors_are_bounded(run, files, tmp_path, mix, message):
    path = tmp_path / 'mix.json'
    path.write_text(json.dumps(mix))
    code, out, err = replay(run, files, '--mix', str(path))
    assert (code, out) == (1, ''), err
    assert message in err and err.count('\n') == 1, err


def test_count_is_bounded_before_anything_is_read(run, files):
    with pytest.raises(SystemExit) as stopped:
        replay(run, files, '--flavor', 'small', '--count', 1000000000)
    assert stopped.value.code == 2  # argparse's usage error


def test_a_failed_snapshot_write_is_one_line_and_leaves_no_file(run, tmp_path):
    small = tmp_path / 'small'
    small.mkdir()
    readonly = tmp_path / 'readonly'
    readonly.mkdir()
    mounted = [replay_hosts.need_tmpfs(small, 'size=16k'),
               replay_hosts.need_tmpfs(readonly, 'size=16k', 'ro')]
    try:
        replay_hosts.fill(small)
        for output, message in (
                (str(tmp_path), 'is a directory'),
                (str(tmp_path / 'missing' / 'snap.json'), 'No such file or directory'),
                ('/dev/full', 'No space left on device'),
                (str(readonly / 'snap.json'), 'Read-only file system'),
                (str(small / 'snap.json'), 'No space left on device')):
            code, out, err = run('scheduler', 'snapshot', '-o', output)
            assert (code, out) == (1, ''), (output, err)
            assert err == 'Cannot write the scheduler snapshot to %s: %s\n' % (
                output, message), err
        assert sorted(os.listdir(small)) == ['filler']  # no temporary file left behind
    finally:
        for umount in mounted:
            subprocess.run(umount, check=True)


def test_a_deprecated_filter_warns_once_and_not_at_all_by_default(tmp_path):
    """In a process of its own: the warning goes once per process."""
    snap = tmp_path / 'snap.json'
    snapshot.dump(replay_hosts.two_hosts(), str(snap))
    retry = tmp_path / 'retry.conf'
    retry.write_text('[filter_scheduler]\nenabled_filters = RetryFilter,RamFilter\n')
    conf = tmp_path / 'base.conf'
    conf.write_text('[DEFAULT]\nstate_path = %s\n' % tmp_path)
    manage = os.path.join(os.path.dirname(sys.executable), 'minisched-manage')
    env = dict(os.environ, PYTHONWARNINGS='ignore::DeprecationWarning')

    def stderr(*args):
        done = subprocess.run([manage, '--config-file', str(conf), 'scheduler', 'replay',
                               str(snap), '--flavor', 'small', '-f', 'value'] + list(args),
                              capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stderr

    assert 'RetryFilter' not in stderr()  # the default list names it: not the operator
    assert stderr('--compare', str(retry), str(retry)).count('RetryFilter is deprecated') == 1


def test_a_snapshot_to_a_full_standard_output_is_one_line(templates, tmp_path):
    """In a process of its own, its standard output ``/dev/full``."""
    for path in templates:
        shutil.copy(path, tmp_path / path.name)
    conf = tmp_path / 'minisched.conf'
    conf.write_text('[DEFAULT]\nstate_path = %s\n' % tmp_path)
    manage = os.path.join(os.path.dirname(sys.executable), 'minisched-manage')
    with open('/dev/full', 'w') as full:
        done = subprocess.run([manage, '--config-file', str(conf), 'scheduler', 'snapshot',
                               '-o', '-'], stdout=full, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONWARNINGS='ignore::DeprecationWarning'),
                              timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[-1] == ('Cannot write the scheduler snapshot to standard '
                                            'output: No space left on device'), done.stderr
    assert 'Traceback' not in done.stderr


@pytest.mark.parametrize('cells, message', [
    ('[' * 100000 + ']' * 100000, 'nested deeper than 32 levels'),  # past the recursion limit
    ('[' * 40 + ']' * 40, 'nested deeper than 32 levels'),
    ('[NaN]', 'NaN is not a JSON number'),
    ('[{"uuid": "x", "name": "\\u001b[2J"}], "junk": [1e999]', '1e999 is out of range'),
])
def test_json_that_python_would_take_is_refused(run, files, cells, message):
    with open(files['snapshot']) as handle:
        text = handle.read()
    assert '"cells": []' in text
    with open(files['snapshot'], 'w') as handle:
        handle.write(text.replace('"cells": []', '"cells": ' + cells))
    code, out, err = replay(run, files, '--flavor', 'small')
    assert (code, out) == (1, ''), err
    assert message in err and err.count('\n') == 1, err
