"""minisched-manage scheduler snapshot and replay: output, figures, and one line per bad input.

In-process (test_manage_cli's ``run``: main() over SQLite databases of the test's own)."""
import json
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


def test_plot_writes_the_figures(run, files, tmp_path):
    pytest.importorskip('matplotlib')
    code, _out, err = replay(run, files, '--flavor', 'small', '--count', 2, '--compare',
                             files['spread'], files['stack'], '--plot', str(tmp_path / 'png'))
    assert code == 0, err
    for name in ('utilization.png', 'funnel.png'):
        assert (tmp_path / 'png' / name).read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


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
