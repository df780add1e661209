"""Hypothesis fuzz of ``minisched-manage scheduler replay``'s files, through the CLI.

Each example writes a snapshot or a trace spoiled by Hypothesis (a field replaced by a
hostile value: the wrong type, NaN, 1e308, a negative size, control characters, deep
nesting, JSON in a string; or the file cut short, or bytes spliced in) and runs the real
command in a process of its own, under a 1.5 GiB address-space limit. Every run must end in
a result (exit 0, a report on stdout; stderr may name skipped trace lines) or in one line
on stderr with exit 1; never a traceback, a MemoryError or a hang, and the process's peak
memory (``wait4``'s ru_maxrss) stays under 400 MiB.

Each run starts an interpreter (about 1.5 s): the examples are few and fixed
(``derandomize``), about 15 s a test on two cores, so the whole suite stays near its budget.
"""
import json
import os
import resource
import subprocess
import sys
import threading

from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from minisched import exception
from minisched.objects import request_spec
from minisched.scheduler.replay import recorder
from minisched.scheduler.replay import snapshot
from minisched.scheduler.replay import trace
from tests.unit.scheduler import replay_hosts

EXAMPLES = 8
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))
ADDRESS_SPACE = 1536 * 1024 * 1024
PEAK_RSS_KB = 400 * 1024
SECONDS = 60
MANAGE = os.path.join(os.path.dirname(sys.executable), 'minisched-manage')

HOSTILE = st.one_of(
    st.sampled_from([None, True, -1, -2 ** 63, 2 ** 64, 1e308, -0.0, 'abc', '', '[1]',
                     '{bad', 'never', '\x1b[31mred\x07', 'NaN', [], {}, [[[[[]]]]],
                     {'minisched_object.name': 'RequestSpec'}, '{"num_instances": "x"}']),
    st.integers(), st.floats(allow_nan=False), st.text(max_size=20),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)
#: Raw text spliced into a file: what no json.dumps writes.
RAW = st.sampled_from(['NaN', 'Infinity', '-Infinity', '[' * 3000, '{"a":' * 3000, '\x00',
                       '\xff', '"\\ud800"', '1e99999', '\n', '}'])


def _paths(value, prefix=()):
    """Every path to a value inside ``value`` (dict keys and list indexes)."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, prefix + (key,)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_paths(item, prefix + (index,)))
    return found


def _replaced(document, path, value):
    if not path:
        return value
    copy = json.loads(json.dumps(document))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return copy


@st.composite
def spoiled(draw, document):
    """``document`` as JSON text with one hostile change."""
    how = draw(st.sampled_from(['field', 'field', 'field', 'cut', 'splice']))
    if how == 'field':
        path = draw(st.sampled_from(_paths(document)))
        return json.dumps(_replaced(document, path, draw(HOSTILE)))
    text = json.dumps(document)
    at = draw(st.integers(0, len(text)))
    if how == 'cut':
        return text[:at]
    return text[:at] + draw(RAW) + text[at:]


def _limits():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _cli(tmp_path, *args):
    """``(exit code, stdout, stderr, peak RSS in KiB)`` of ``minisched-manage *args``."""
    conf = tmp_path / 'base.conf'
    if not conf.exists():
        conf.write_text('[DEFAULT]\nstate_path = %s\n' % tmp_path)
    env = dict(os.environ, PYTHONWARNINGS='ignore::DeprecationWarning')  # eventlet's import
    proc = subprocess.Popen([MANAGE, '--config-file', str(conf)] + list(args),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            preexec_fn=_limits)
    output = {}
    readers = [threading.Thread(target=lambda n, p: output.__setitem__(n, p.read()),
                                args=(name, pipe))
               for name, pipe in (('out', proc.stdout), ('err', proc.stderr))]
    for reader in readers:
        reader.start()
    timer = threading.Timer(SECONDS, proc.kill)
    timer.start()
    try:
        _pid, status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    for reader in readers:
        reader.join()
    proc.stdout.close()
    proc.stderr.close()
    return (proc.returncode, output['out'].decode('utf-8', 'replace'),
            output['err'].decode('utf-8', 'replace'), usage.ru_maxrss)


def _check(code, out, err, peak):
    assert peak < PEAK_RSS_KB, 'peak RSS %d KiB' % peak
    assert 'Traceback' not in err and 'MemoryError' not in err, err
    lines = err.splitlines()
    if code == 1:
        assert out == '' and len(lines) == 1, (out, err)
    else:
        assert code == 0, (code, err)
        assert 'instances placed' in out, out  # a result (warnings may come with it)


@pytest.fixture(scope='module')
def recorded(tmp_path_factory):
    """The two-host snapshot, and a trace of three recorded requests: its records."""
    directory = tmp_path_factory.mktemp('recorded')
    rec = recorder.RequestRecorder(str(directory))
    made = trace.described_requests(replay_hosts.two_hosts(), flavor='small', count=3)
    for index, request in enumerate(made):
        spec = request_spec.RequestSpec.obj_from_primitive(request.spec)
        rec.finish(rec.start(spec, ['00000000-0000-0000-0000-00000000000%d' % index], False),
                   error=exception.NoValidHost(reason='none'))
    with open(rec._path()) as handle:
        return [json.loads(line) for line in handle]


@SETTINGS
@given(data=st.data())
def test_a_spoiled_snapshot_ends_in_a_report_or_one_line(tmp_path_factory, data):
    tmp_path = tmp_path_factory.mktemp('fuzz-snapshot')
    path = tmp_path / 'snap.json'
    path.write_text(data.draw(spoiled(replay_hosts.two_hosts()), label='snapshot'))
    _check(*_cli(tmp_path, 'scheduler', 'replay', str(path), '--flavor', 'small',
                 '--count', '3', '--per-host'))


@SETTINGS
@given(data=st.data())
def test_a_spoiled_trace_ends_in_a_report_or_one_line(tmp_path_factory, recorded, data):
    tmp_path = tmp_path_factory.mktemp('fuzz-trace')
    snap = tmp_path / 'snap.json'
    snapshot.dump(replay_hosts.two_hosts(), str(snap))
    lines = [json.dumps(record) for record in recorded]
    index = data.draw(st.integers(0, len(lines) - 1), label='line')
    lines[index] = data.draw(spoiled(recorded[index]), label='spoiled line')
    path = tmp_path / 'requests-1.jsonl'
    path.write_text('\n'.join(lines) + '\n')
    _check(*_cli(tmp_path, 'scheduler', 'replay', str(snap), str(path)))
