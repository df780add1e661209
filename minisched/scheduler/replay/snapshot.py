"""What the scheduler sees, in one versioned JSON file, and back into a HostManager.

A snapshot is taken through a HostManager of its own, which reads cells, host mappings,
services, compute nodes and aggregates exactly as a scheduler worker does at start-up; it
adds the server groups and the live instances of every cell (with their sizes and owners).
Loaded, it fills a HostManager without a database (``offline.hold``), in the row order the
scheduler had, so that weighing ties fall the same way. ``anonymize`` replaces host names,
projects, users, names and UUIDs consistently: the same input gives the same output
everywhere in the file.
"""
import datetime
import json
import uuid

from oslo_utils import timeutils

from minisched import context as ms_context
from minisched.db.main import api as db
from minisched import exception
from minisched.objects import aggregate as aggregate_obj
from minisched.objects import flavor as flavor_obj
from minisched.objects import instance as instance_obj
from minisched.objects import instance_group as instance_group_obj
from minisched.scheduler.replay import files
from minisched.scheduler.replay import offline
from minisched.scheduler.replay import schema
from minisched.scheduler import plugins

FORMAT = 'minisched-scheduler-snapshot'
VERSION = 1
#: Row columns holding times: ISO 8601 strings in the file, datetimes in rows.
TIME_COLUMNS = ('created_at', 'updated_at', 'deleted_at', 'last_seen_up')
_SECTIONS = ('hosts', 'aggregates', 'server_groups', 'instances', 'flavors')
#: Flavor fields kept: what a request described by flavor name is built from.
FLAVOR_FIELDS = ('id', 'flavorid', 'name', 'memory_mb', 'vcpus', 'root_gb', 'ephemeral_gb',
                 'swap', 'extra_specs')
_INSTANCE_COLUMNS = ('uuid', 'host', 'node', 'project_id', 'user_id', 'instance_type_id',
                     'memory_mb', 'vcpus', 'root_gb', 'ephemeral_gb', 'vm_state')


# -- taking ---------------------------------------------------------------------------


def take(conf, context=None):
    """The snapshot of the deployment ``conf`` points at, as a dict (see :func:`dump`)."""
    context = context or ms_context.get_admin_context()
    hm = plugins.load_driver(plugins.HOST_MANAGERS, conf.scheduler.host_manager, conf)
    hm.ensure_initialized(context)
    mapped = hm.table.columns['mapped']
    states = sorted(hm.host_state_map.values(), key=lambda s: s.row)
    hosts = [{'cell_uuid': state.cell_uuid, 'mapped': bool(mapped[state.row]),
              'service': _plain(hm._services[state.host]), 'node': _plain(state.last_record)}
             for state in states if state.host in hm._services]
    return {
        'format': FORMAT, 'version': VERSION,
        'taken_at': timeutils.utcnow(with_timezone=True).isoformat(),
        'cells': [{'uuid': cell.uuid, 'name': cell.name} for cell in hm.cells
                  if cell is not None],
        'hosts': hosts,
        'aggregates': [_aggregate(agg) for agg in aggregate_obj.AggregateList.get_all(context)],
        'server_groups': [_group(group) for group in
                          instance_group_obj.InstanceGroupList.get_all(context)],
        'instances': _instances(context, hm.cells),
        'flavors': [{name: getattr(flavor, name) for name in FLAVOR_FIELDS}
                    for flavor in flavor_obj.FlavorList.get_all(context)],
    }


def from_rows(pairs, taken=None, flavors=(), aggregates=(), instances=(), server_groups=()):
    """A snapshot of ``pairs`` (``(service row, node row)``, all mapped, in the local cell)
    and the given sections: what a test or a benchmark makes without a deployment."""
    return {'format': FORMAT, 'version': VERSION,
            'taken_at': (taken or timeutils.utcnow(with_timezone=True)).isoformat(),
            'cells': [], 'hosts': [{'cell_uuid': None, 'mapped': True, 'service': _plain(s),
                                    'node': _plain(n)} for s, n in pairs],
            'flavors': list(flavors), 'aggregates': list(aggregates),
            'instances': list(instances), 'server_groups': list(server_groups)}


def _plain(row):
    return {key: _to_json(value) for key, value in row.items()}


def _to_json(value):
    if isinstance(value, datetime.datetime):
        return timeutils.normalize_time(value).isoformat()
    return value


def _aggregate(agg):
    return {'id': agg.id, 'uuid': agg.uuid, 'name': agg.name, 'hosts': sorted(agg.hosts),
            'metadata': dict(agg.metadata)}


def _group(group):
    return {'uuid': group.uuid, 'name': group.name, 'policy': group.policy,
            'rules': dict(group.rules or {}), 'members': list(group.members or []),
            'hosts': list(group.hosts or []), 'project_id': group.project_id,
            'user_id': group.user_id}


def _instances(context, cells):
    """Every live instance on a host, with its sizes and flavor name, cell by cell."""
    found = []
    for cell in cells:
        with ms_context.target_cell(context, cell) as cctxt:
            rows = db.instance_get_all_by_filters(cctxt, {'deleted': False}, sort_key='id',
                                                  sort_dir='asc')
        for row in rows:
            if row['host']:
                instance = {key: row[key] for key in _INSTANCE_COLUMNS}
                instance['flavor'] = _flavor_name(row.get('flavor'))
                found.append(instance)
    return found


def _flavor_name(raw):
    try:
        flavor = json.loads(raw) if raw else None
    except ValueError:
        return None
    if isinstance(flavor, dict):
        data = flavor.get('minisched_object.data', flavor)
        return data.get('name') if isinstance(data, dict) else None
    return None


def dump(snapshot, path):
    """Write ``snapshot`` to ``path`` (``-``: stdout), whole or not at all
    (:class:`~minisched.exception.SnapshotNotWritten` says why)."""
    text = json.dumps(snapshot, indent=1, sort_keys=True)
    if path == '-':
        files.write_stdout(text + '\n', exception.SnapshotNotWritten)
        return
    files.write_text(path, text + '\n', exception.SnapshotNotWritten)


# -- loading --------------------------------------------------------------------------


def load(path):
    """The snapshot in ``path``, checked; :class:`~minisched.exception.InvalidSnapshot` names
    what is wrong with a file that is not one (truncated, another format or version, a
    field of the wrong type or out of bounds, a FIFO, a device, a file too large)."""
    return check(files.read_json(path, exception.InvalidSnapshot, files.MAX_SNAPSHOT_BYTES,
                                 'snapshot'), path)


def check(snapshot, path='<snapshot>'):
    """``snapshot`` when it is one this minisched reads, every field as :mod:`.schema`
    describes it; :class:`~minisched.exception.InvalidSnapshot` otherwise."""
    def bad(reason):
        return exception.InvalidSnapshot(path=path, reason=reason)
    if not isinstance(snapshot, dict) or snapshot.get('format') != FORMAT:
        raise bad('not a scheduler snapshot (no "format": "%s"; made by "minisched-manage '
                  'scheduler snapshot"?)' % FORMAT)
    if snapshot.get('version') != VERSION:
        raise bad('version %r, this minisched reads version %d' % (snapshot.get('version'),
                                                                   VERSION))
    missing = [key for key in _SECTIONS + ('taken_at',) if key not in snapshot]
    if missing:
        raise bad('no %s' % ', '.join(missing))
    found = (schema.problem('SNAPSHOT', snapshot) or schema.node_problem(snapshot) or
             schema.host_problem(snapshot))
    if found:
        raise bad(found)
    return snapshot


def taken_at(snapshot):
    """When the snapshot was taken, as an aware UTC datetime."""
    moment = datetime.datetime.fromisoformat(snapshot['taken_at'])
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment


def _row(record, ratios=None):
    row = dict(record)
    for key in TIME_COLUMNS:
        if isinstance(row.get(key), str):
            row[key] = datetime.datetime.fromisoformat(row[key])
    row.update(ratios or {})
    return row


def fill(host_manager, snapshot, ratios=None):
    """Give ``host_manager`` the snapshot's host states, aggregates and instances.

    ``ratios`` (``{'cpu_allocation_ratio': 4.0, ...}``) replace the nodes' own, as if every
    compute had been restarted with them.
    """
    offline.hold(host_manager, ((_row(h['service']), _row(h['node'], ratios),
                                 h.get('cell_uuid'), h.get('mapped', True))
                                for h in snapshot['hosts']))
    aggregates = [aggregate_obj.Aggregate(id=a['id'], uuid=a['uuid'], name=a['name'],
                                          hosts=list(a['hosts']), metadata=dict(a['metadata']))
                  for a in snapshot['aggregates']]
    if aggregates:
        host_manager.update_aggregates(aggregates)
    by_host = {}
    for inst in snapshot['instances']:
        by_host.setdefault(inst['host'], {})[inst['uuid']] = instance_obj.Instance(
            uuid=inst['uuid'], instance_type_id=inst.get('instance_type_id'))
    for host in host_manager._states_by_host:
        host_manager._set_host_instances(host, by_host.get(host, {}), True)


# -- anonymizing ----------------------------------------------------------------------


class _Names:
    """Consistent replacements: the n-th distinct value of a kind becomes ``<kind>-<n>``."""

    def __init__(self):
        self.seen = {}
        self.counts = {}

    def __call__(self, kind, value):
        if value is None or value == '':
            return value
        key = (kind, value)
        if key not in self.seen:
            count = self.counts[kind] = self.counts.get(kind, 0) + 1
            self.seen[key] = (str(uuid.uuid5(uuid.NAMESPACE_OID, 'anonymized-%d' % count))
                              if kind == 'uuid' else '%s-%04d' % (kind, count))
        return self.seen[key]


def anonymize(snapshot):
    """A copy of ``snapshot`` with host and node names, projects, users, names, addresses
    and UUIDs replaced; each value gets the same replacement wherever it appears (a node
    named as its host keeps that name)."""
    names = _Names()
    out = json.loads(json.dumps(snapshot))

    def host(value):
        return names('host', value)

    cells = {}
    for cell in out['cells']:
        cells[cell['uuid']] = cell['uuid'] = names('uuid', cell['uuid'])
        cell['name'] = names('cell', cell['name'])
    for entry in out['hosts']:
        service, node = entry['service'], entry['node']
        entry['cell_uuid'] = cells.get(entry['cell_uuid'], names('uuid', entry['cell_uuid']))
        service['host'] = host(service['host'])
        service['uuid'] = names('uuid', service.get('uuid'))
        if service.get('disabled_reason'):
            service['disabled_reason'] = 'disabled'
        node['host'] = host(node['host'])
        node['hypervisor_hostname'] = host(node['hypervisor_hostname'])
        node['uuid'] = names('uuid', node.get('uuid'))
        node['host_ip'] = '192.0.2.1' if node.get('host_ip') else node.get('host_ip')
    for agg in out['aggregates']:
        agg['uuid'] = names('uuid', agg['uuid'])
        agg['name'] = names('aggregate', agg['name'])
        agg['hosts'] = [host(h) for h in agg['hosts']]
    for group in out['server_groups']:
        group['uuid'] = names('uuid', group['uuid'])
        group['name'] = names('group', group['name'])
        group['members'] = [names('uuid', m) for m in group['members']]
        group['hosts'] = [host(h) for h in group['hosts']]
        group['project_id'] = names('project', group['project_id'])
        group['user_id'] = names('user', group['user_id'])
    for inst in out['instances']:
        inst['uuid'] = names('uuid', inst['uuid'])
        inst['host'], inst['node'] = host(inst['host']), host(inst['node'])
        inst['project_id'] = names('project', inst['project_id'])
        inst['user_id'] = names('user', inst['user_id'])
    out['anonymized'] = True
    return out
