"""The requests a replay runs: a recorded trace, or requests described by flavor or mix.

A trace is read line by line, each line no longer than :data:`files.MAX_LINE_BYTES`, each
record checked against :data:`schema.TRACE_LINE` and its request spec read back as the
object it was (sizes within the database's bounds). A line that fails (cut short by a full
disk, another version, a field of the wrong type) is skipped and named in ``skipped``; the
trace is refused only when no line is left. At most :data:`schema.MAX_REQUESTS` requests and
:data:`MAX_INSTANCES` instances are replayed, whatever their source.
"""
import dataclasses
import os
import random

from minisched import exception
from minisched.objects import flavor as flavor_obj
from minisched.objects import image_meta as image_meta_obj
from minisched.objects import request_spec as request_spec_obj
from minisched.objects import security_group as security_group_obj
from minisched.scheduler.replay import files
from minisched.scheduler.replay import recorder
from minisched.scheduler.replay import schema
from minisched.scheduler.replay import snapshot as snapshot_mod

#: Instances of all the requests of a replay, at most.
MAX_INSTANCES = 1000000
#: Skipped lines named one by one; the rest are counted.
SHOWN_SKIPPED = 10
_SIZES = ('memory_mb', 'vcpus', 'root_gb', 'ephemeral_gb', 'swap')


@dataclasses.dataclass
class Request:
    """One request of a trace: a RequestSpec primitive, its instance uuids (or a count), and
    the answer recorded with it (hosts, or the error's name), if any."""

    spec: dict
    instance_uuids: list = None
    num_instances: int = 1
    recorded: object = None
    label: str = ''


def load_trace(path, skipped=None):
    """The requests recorded in ``path`` (a file, or a ``record_requests_to`` directory with
    every worker's files, rotated ones included), oldest first. Each line that cannot be
    replayed is appended to ``skipped`` as ``(file, line number, reason)``."""
    skipped = [] if skipped is None else skipped
    paths = [path]
    if os.path.isdir(path):
        try:
            names = os.listdir(path)
        except OSError as exc:
            raise exception.InvalidTrace(path=path, reason=exc.strerror or str(exc))
        paths = sorted(os.path.join(path, name) for name in names
                       if name.startswith(recorder.PREFIX) and recorder.SUFFIX in name)
        if not paths:
            raise exception.InvalidTrace(path=path, reason='no %s*%s files in the directory'
                                         % (recorder.PREFIX, recorder.SUFFIX))
    _check_size(path, paths)
    records = []
    for one in paths:
        records.extend(_records(one, skipped))
        if len(records) > schema.MAX_REQUESTS:
            raise exception.InvalidTrace(path=path, reason='more than %d requests: replay '
                                         'fewer files, or a part of one'
                                         % schema.MAX_REQUESTS)
    if not records:
        raise exception.InvalidTrace(path=path, reason='no request in it' + (
            '; %s' % describe_skipped(skipped, 1)[0] if skipped else ''))
    records.sort(key=lambda r: (r.get('time') or '', r.get('pid') or 0,
                                r.get('sequence') or 0))
    requests = [_request(record) for record in records]
    _check_instances(requests, path)
    return requests


def _check_size(path, paths):
    """Refuse trace files that together hold more than a replay reads (before any is)."""
    total = 0
    for one in paths:
        try:
            total += os.stat(one).st_size
        except OSError as exc:
            raise exception.InvalidTrace(path=one, reason=exc.strerror or str(exc))
    if total > files.MAX_TRACE_BYTES:
        raise exception.InvalidTrace(path=path, reason='%d bytes in %d files, more than the '
                                     '%d a replay reads: replay fewer files' % (
                                         total, len(paths), files.MAX_TRACE_BYTES))


def describe_skipped(skipped, most=SHOWN_SKIPPED):
    """Lines telling which trace lines were skipped and why (``most`` named, the rest
    counted)."""
    lines = ['line %d of %s skipped: %s' % (number, path, reason)
             for path, number, reason in skipped[:most]]
    if len(skipped) > most:
        lines.append('%d more trace lines skipped' % (len(skipped) - most))
    return lines


def _records(path, skipped):
    records = []
    try:
        with files.open_regular(path, exception.InvalidTrace, files.MAX_TRACE_BYTES,
                                'trace') as handle:
            for number, line, too_long in _lines(handle):
                if too_long:
                    skipped.append((path, number, 'longer than %d bytes'
                                    % files.MAX_LINE_BYTES))
                    continue
                if not line.strip():
                    continue
                record, reason = _record(line)
                if reason:
                    skipped.append((path, number, reason))
                else:
                    records.append(record)
    except OSError as exc:
        raise exception.InvalidTrace(path=path, reason=exc.strerror or str(exc))
    return records


def _lines(handle):
    """``(number, bytes, too long)`` per line of ``handle``, never holding more than one
    line of :data:`files.MAX_LINE_BYTES`."""
    number = 0
    while True:
        line = handle.readline(files.MAX_LINE_BYTES + 1)
        if not line:
            return
        number += 1
        if len(line) > files.MAX_LINE_BYTES:
            while line and not line.endswith(b'\n'):  # the rest of it, dropped
                line = handle.readline(files.MAX_LINE_BYTES)
            yield number, b'', True
        else:
            yield number, line, False


def _record(line):
    """``(record, None)`` for a line that can be replayed, else ``(None, why not)``."""
    try:
        record = files.loads(line)
    except ValueError as exc:
        return None, 'not JSON (cut short?): %s' % exc
    if isinstance(record, dict) and record.get('version') != recorder.VERSION:
        return None, 'version %r, this minisched reads version %d' % (
            record.get('version'), recorder.VERSION)
    found = schema.problem('TRACE_LINE', record)
    if found:
        return None, found
    try:
        spec = request_spec_obj.RequestSpec.obj_from_primitive(record['request_spec'])
    except Exception as exc:  # whatever the object layer finds wrong in a recorded spec
        return None, 'request_spec is not a RequestSpec: %s: %s' % (type(exc).__name__, exc)
    found = spec_problem(spec)
    return (None, found) if found else (record, None)


def spec_problem(spec):
    """What makes ``spec`` (a RequestSpec read back) unfit to replay; None if nothing."""
    if not isinstance(spec, request_spec_obj.RequestSpec):
        return 'request_spec is a %s, not a RequestSpec' % type(spec).__name__
    if not spec.obj_attr_is_set('flavor') or spec.flavor is None:
        return 'request_spec has no flavor'
    for name in _SIZES:
        value = getattr(spec.flavor, name, 0) if spec.flavor.obj_attr_is_set(name) else 0
        if not 0 <= (value or 0) <= schema.MAX_INT:
            return 'flavor %s %r is out of 0..%d' % (name, value, schema.MAX_INT)
    count = spec.num_instances if spec.obj_attr_is_set('num_instances') else 1
    if not 1 <= count <= schema.MAX_PER_REQUEST:
        return 'num_instances %r is out of 1..%d' % (count, schema.MAX_PER_REQUEST)
    return None


def _request(record):
    if 'error' in record:
        recorded = record['error']['type']
    else:
        recorded = [(a['host'], a['nodename']) for a in record.get('answer') or ()]
    uuids = record.get('instance_uuids')
    count = len(uuids) if uuids else record['request_spec']['minisched_object.data'].get(
        'num_instances', 1)
    return Request(record['request_spec'], uuids, count, recorded)


def _check_instances(requests, source):
    total = sum(r.num_instances for r in requests)
    if total > MAX_INSTANCES:
        raise exception.InvalidTrace(path=source, reason='%d instances, more than the %d a '
                                     'replay places' % (total, MAX_INSTANCES))


def described_requests(snapshot, flavor=None, count=0, mix=None, seed=0):
    """Requests of one instance each: ``count`` of ``flavor`` (a name among the snapshot's
    flavors), or the mix file ``mix``: a JSON list of ``{"flavor": NAME or {memory_mb,
    vcpus, root_gb...}, "count": N, "num_instances": 1}``, shuffled with ``seed``."""
    flavors = {f['name']: f for f in snapshot.get('flavors', ())}
    source = mix or '--flavor'
    entries = [{'flavor': flavor, 'count': count}] if flavor else _mix(mix)
    if not 1 <= sum(e.get('count', 1) for e in entries) <= schema.MAX_REQUESTS:
        raise exception.InvalidTrace(path=source, reason='%d requests: give 1 to %d' % (
            sum(e.get('count', 1) for e in entries), schema.MAX_REQUESTS))
    requests = []
    for entry in entries:
        made = _flavor(entry['flavor'], flavors, source)
        per_request = entry.get('num_instances', 1)
        spec = spec_for(made, per_request).obj_to_primitive()
        requests.extend(Request(spec, None, per_request, label=made.name)
                        for _ in range(entry.get('count', 1)))
    _check_instances(requests, source)
    if mix:
        random.Random(seed).shuffle(requests)
    return requests


def _mix(path):
    entries = files.read_json(path, exception.InvalidTrace, files.MAX_MIX_BYTES, 'mix file')
    found = schema.problem('MIX', entries)
    if found:
        raise exception.InvalidTrace(path=path, reason='a mix is a list of {"flavor": ..., '
                                     '"count": N, "num_instances": N} objects: %s' % found)
    return entries


def _flavor(value, flavors, source):
    if isinstance(value, dict):
        fields = dict({'name': 'adhoc', 'flavorid': 'adhoc', 'ephemeral_gb': 0, 'swap': 0,
                       'root_gb': 0, 'extra_specs': {}}, **value)
    elif value in flavors:
        fields = dict(flavors[value])
    else:
        raise exception.InvalidTrace(
            path=source, reason='no flavor %r in the snapshot (it has: %s)' % (
                value, ', '.join(sorted(flavors)) or 'none'))
    try:
        return flavor_obj.Flavor(**{k: v for k, v in fields.items()
                                    if k in snapshot_mod.FLAVOR_FIELDS})
    except (TypeError, ValueError) as exc:
        raise exception.InvalidTrace(path=source, reason='flavor %r: %s' % (value, exc))


def spec_for(flavor, num_instances=1):
    """The RequestSpec of ``num_instances`` instances of ``flavor``, as a described request
    asks for them."""
    return request_spec_obj.RequestSpec(
        flavor=flavor, image=image_meta_obj.ImageMeta.from_dict({'properties': {}}),
        num_instances=num_instances, project_id='replay', user_id='replay',
        scheduler_hints={}, ignore_hosts=None, force_hosts=None, force_nodes=None, retry=None,
        limits=None, requested_destination=None, instance_group=None,
        security_groups=security_group_obj.SecurityGroupList(objects=[]),
        availability_zone=None, is_bfv=False)
