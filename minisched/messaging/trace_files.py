"""Reading the trace files of :mod:`minisched.messaging.trace`: one process's figures, the change
between two readings, and the sum over processes (the build bench's report uses them)."""
import json
import math
import os

from minisched.messaging import trace


def read_dir(directory):
    """The figures of every process that wrote into ``directory`` (files being replaced or
    of another format are skipped)."""
    processes = []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return processes
    for name in names:
        if not name.endswith('.json'):
            continue
        try:
            with open(os.path.join(directory, name)) as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get('format') == trace.FORMAT:
            processes.append(data)
    return processes


_PROCESS_SUMS = ('cpu_user_s', 'cpu_sys_s')


def _combine(into, row, sign):
    for field, value in row.items():
        if isinstance(value, dict):
            target = into.setdefault(field, {})
            for bucket, count in value.items():
                target[bucket] = target.get(bucket, 0) + sign * count
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            into[field] = into.get(field, 0) + sign * value


def _indexed(rows, section):
    keys = trace.KEYS[section]
    return {tuple(row.get(k) for k in keys): row for row in rows}


def _nonzero(row):
    return any(v for v in row.values() if isinstance(v, (int, float)) and
               not isinstance(v, bool))


def delta(after, before):
    """Per process, what ``after`` (a :func:`read_dir` result) recorded since ``before``:
    processes are matched by pid and start; one absent from ``before`` counts whole."""
    earlier = {(p['pid'], p['started']): p for p in before}
    result = []
    for process in after:
        old = earlier.get((process['pid'], process['started']))
        if old is None:
            result.append(process)
            continue
        new = {k: v for k, v in process.items() if k not in trace.KEYS}
        for field in _PROCESS_SUMS:
            new[field] = process.get(field, 0.0) - old.get(field, 0.0)
        new['window_s'] = process['written'] - old['written']
        for section, keys in trace.KEYS.items():
            previous = _indexed(old.get(section, []), section)
            rows = []
            for row in process.get(section, []):
                key = tuple(row.get(k) for k in keys)
                diff = dict(zip(keys, key))
                _combine(diff, row, 1)
                if key in previous:
                    _combine(diff, previous[key], -1)
                for field in ('hist', 'queued_hist'):
                    if field in diff:
                        diff[field] = {b: n for b, n in diff[field].items() if n}
                if _nonzero(diff):
                    rows.append(diff)
            new[section] = rows
        result.append(new)
    return result


def merge(processes):
    """One figure set adding up ``processes``: the records of equal keys summed, the CPU
    summed, ``processes`` their number and ``window_s`` the longest window (or, for
    snapshots not made by :func:`delta`, the longest time covered)."""
    merged = {'processes': len(processes), 'cpu_user_s': 0.0, 'cpu_sys_s': 0.0,
              'window_s': 0.0}
    tables = {section: {} for section in trace.KEYS}
    for process in processes:
        for field in _PROCESS_SUMS:
            merged[field] += process.get(field, 0.0)
        window = process.get('window_s', process['written'] - process['started'])
        merged['window_s'] = max(merged['window_s'], window)
        for section, keys in trace.KEYS.items():
            table = tables[section]
            for row in process.get(section, []):
                key = tuple(row.get(k) for k in keys)
                into = table.get(key)
                if into is None:
                    into = table[key] = dict(zip(keys, key))
                _combine(into, row, 1)
    for section in trace.KEYS:
        merged[section] = list(tables[section].values())
    return merged


def percentile(hist, pct):
    """The ``pct`` percentile (nearest rank, 0..100) of a histogram, in seconds; NaN when
    it is empty."""
    counts = sorted((int(b), n) for b, n in hist.items() if n > 0)
    total = sum(n for _, n in counts)
    if not total:
        return float('nan')
    rank = max(1, int(math.ceil(pct / 100.0 * total)))
    seen = 0
    for bucket, count in counts:
        seen += count
        if seen >= rank:
            return trace._bucket_value(bucket)
    return trace._bucket_value(counts[-1][0])
