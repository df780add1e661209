"""JSON Schemas (draft 7) of the snapshot, of a trace line and of a mix file, and their checks.

Every field that snapshot and replay read is checked before it is used: its type, its bounds
(sizes are the database's non-negative 32-bit integers, allocation ratios at most
:data:`MAX_RATIO`), the number of items of each list, and the JSON a node holds in a text
column (``stats``, ``numa_topology``...: :data:`NODE_JSON`, checked once per distinct text).
What a schema cannot say (a host listed twice, a node whose service is another host's) is
checked after it. :func:`problem` reports the first problem found, with its place in the
document (``hosts[3].node.memory_mb``).

The schemas are compiled with fastjsonschema: it checks a snapshot of 10,000 hosts in half
a second, where the ``jsonschema`` package's interpreter takes twenty times as long.
"""
import datetime
import functools

import fastjsonschema
import sqlalchemy as sa

from minisched.conf import api as api_conf
from minisched.db.main import models
from minisched.scheduler.replay import files

#: The database's integer columns: sizes and counts never exceed it.
MAX_INT = 2 ** 31 - 1
#: An allocation ratio, at most.
MAX_RATIO = 10000.0
#: A text column (``cpu_info``, ``stats``...), at most, in characters.
MAX_TEXT = 256 * 1024
MAX_HOSTS = 100000
MAX_INSTANCES = 1000000
MAX_AGGREGATES = 10000
MAX_GROUPS = 100000
MAX_FLAVORS = 10000
MAX_CELLS = 1000
#: Requests one replay runs, at most (about three minutes over 10,000 hosts).
MAX_REQUESTS = 100000
#: Instances of one request, at most (the scheduler's own bound).
MAX_PER_REQUEST = api_conf.SCHEDULER_MAX_INSTANCES
#: Entries of a mix file, at most.
MAX_MIX_ENTRIES = 1000
#: Node columns that may be negative: what is left once overcommitted.
_SIGNED = {'free_ram_mb', 'free_disk_gb', 'disk_available_least', 'current_workload'}

SCALAR = {'type': ['null', 'boolean', 'integer', 'number', 'string'], 'maxLength': MAX_TEXT}
NAME = {'type': 'string', 'maxLength': 255}
OPTIONAL_NAME = {'type': ['string', 'null'], 'maxLength': 255}
UUID = {'type': 'string', 'maxLength': 36}
TIME = {'type': 'string', 'format': 'an ISO 8601 time', 'maxLength': 64}
SIZE = {'type': 'integer', 'minimum': 0, 'maximum': MAX_INT}


def _array(items, most):
    return {'type': 'array', 'items': items, 'maxItems': most}


def _object(properties, required=(), extra=False):
    """An object of ``properties``; other keys hold scalars when ``extra`` (a column a
    later minisched may add), else none is allowed."""
    return {'type': 'object', 'properties': properties, 'required': list(required),
            'additionalProperties': SCALAR if extra else False}


def _nullable(schema):
    types = schema['type'] if isinstance(schema['type'], list) else [schema['type']]
    return dict(schema, type=types + ['null'])


#: A count a compute reports in its stats: a number, or the digits of one.
_COUNT = {'type': ['integer', 'string'], 'minimum': 0, 'maximum': MAX_INT,
          'pattern': '^[0-9]{1,10}$'}
#: The JSON a node's text columns hold.
NODE_JSON = {
    'stats': {'type': 'object', 'maxProperties': 1000, 'additionalProperties': SCALAR,
              'properties': {name: _COUNT for name in ('num_instances', 'io_workload',
                                                       'failed_builds')}},
    'supported_instances': _array(dict(_array(OPTIONAL_NAME, 3), minItems=3), 1000),
    'metrics': _array({'type': 'object', 'additionalProperties': SCALAR}, 1000),
    'numa_topology': {'type': 'object', 'required': ['minisched_object.data'],
                      'properties': {'minisched_object.name': {'const': 'NUMATopology'}}},
    'pci_stats': {'type': ['object', 'array', 'null']},
    'extra_resources': {'type': ['object', 'array', 'null']},
}


def _column(table, column):
    kind = column.type
    if isinstance(kind, sa.Boolean):
        schema = {'type': ['boolean', 'integer'], 'minimum': 0, 'maximum': 1}
    elif isinstance(kind, sa.Integer):
        low = -MAX_INT if column.name in _SIGNED or column.name == 'deleted' else 0
        schema = {'type': 'integer', 'minimum': low, 'maximum': MAX_INT}
    elif isinstance(kind, sa.Float):
        schema = {'type': 'number', 'minimum': 0, 'maximum': MAX_RATIO}
    elif isinstance(kind, sa.DateTime):
        schema = TIME
    elif isinstance(kind, sa.String) and kind.length:
        schema = {'type': 'string', 'maxLength': kind.length}
    else:
        schema = {'type': 'string', 'maxLength': MAX_TEXT}
    if column.nullable and not column.primary_key:
        schema = _nullable(schema)
    return schema


def _row(table, required):
    """A row of ``table`` as ``snapshot`` writes it: every column, typed as stored."""
    return _object({c.name: _column(table, c) for c in table.columns},
                   required=required, extra=True)


SERVICE = _row(models.services, ('host', 'binary', 'disabled', 'forced_down',
                                 'last_seen_up', 'updated_at', 'created_at'))
NODE = _row(models.compute_nodes, (
    'host', 'hypervisor_hostname', 'vcpus', 'memory_mb', 'local_gb', 'vcpus_used',
    'memory_mb_used', 'local_gb_used', 'free_ram_mb', 'free_disk_gb', 'stats',
    'supported_instances', 'ram_allocation_ratio', 'cpu_allocation_ratio',
    'disk_allocation_ratio', 'updated_at', 'created_at'))
FLAVOR = _object({
    'id': {'type': ['integer', 'null'], 'minimum': 0, 'maximum': MAX_INT},
    'flavorid': OPTIONAL_NAME, 'name': NAME,
    'memory_mb': dict(SIZE, minimum=1), 'vcpus': dict(SIZE, minimum=1), 'root_gb': SIZE,
    'ephemeral_gb': SIZE, 'swap': SIZE,
    'extra_specs': {'type': 'object', 'maxProperties': 1000,
                    'additionalProperties': {'type': 'string', 'maxLength': 255}},
}, required=('name', 'memory_mb', 'vcpus'))

SNAPSHOT = _object({
    'format': {'type': 'string'}, 'version': {'type': 'integer'}, 'taken_at': TIME,
    'anonymized': {'type': 'boolean'},
    'cells': _array(_object({'uuid': UUID, 'name': OPTIONAL_NAME}, ('uuid',)), MAX_CELLS),
    'hosts': _array(_object({
        'cell_uuid': _nullable(UUID), 'mapped': {'type': ['boolean', 'integer']},
        'service': SERVICE, 'node': NODE}, ('service', 'node')), MAX_HOSTS),
    'aggregates': _array(_object({
        'id': dict(SIZE), 'uuid': UUID, 'name': NAME, 'hosts': _array(NAME, MAX_HOSTS),
        'metadata': {'type': 'object', 'maxProperties': 1000,
                     'additionalProperties': {'type': ['string', 'null'],
                                              'maxLength': 255}}},
        ('id', 'uuid', 'name', 'hosts', 'metadata')), MAX_AGGREGATES),
    'server_groups': _array(_object({
        'uuid': UUID, 'name': OPTIONAL_NAME, 'policy': OPTIONAL_NAME,
        'rules': {'type': ['object', 'null'], 'additionalProperties': SCALAR},
        'members': _array(UUID, MAX_INSTANCES), 'hosts': _array(NAME, MAX_INSTANCES),
        'project_id': OPTIONAL_NAME, 'user_id': OPTIONAL_NAME},
        ('uuid', 'members', 'hosts')), MAX_GROUPS),
    'instances': _array(_object({
        'uuid': UUID, 'host': NAME, 'node': OPTIONAL_NAME, 'project_id': OPTIONAL_NAME,
        'user_id': OPTIONAL_NAME,
        'instance_type_id': {'type': ['integer', 'null'], 'minimum': 0, 'maximum': MAX_INT},
        'memory_mb': _nullable(SIZE), 'vcpus': _nullable(SIZE), 'root_gb': _nullable(SIZE),
        'ephemeral_gb': _nullable(SIZE), 'vm_state': OPTIONAL_NAME,
        'flavor': OPTIONAL_NAME}, ('uuid', 'host'), extra=True), MAX_INSTANCES),
    'flavors': _array(FLAVOR, MAX_FLAVORS),
}, required=('format', 'version', 'taken_at', 'hosts', 'aggregates', 'server_groups',
             'instances', 'flavors'))

#: One line of a trace (see the recorder). The request spec's own fields are checked by the
#: object layer when it is read back, then :func:`check_spec`.
TRACE_LINE = _object({
    'version': {'type': 'integer'},
    'request_spec': {
        'type': 'object', 'required': ['minisched_object.name', 'minisched_object.data'],
        'properties': {'minisched_object.name': {'const': 'RequestSpec'},
                       'minisched_object.data': {'type': 'object'}}},
    'instance_uuids': {'type': ['array', 'null'], 'items': UUID,
                       'maxItems': MAX_PER_REQUEST},
    'return_alternates': {'type': 'boolean'}, 'time': TIME,
    'pid': dict(SIZE), 'sequence': {'type': 'integer', 'minimum': 0},
    'answer': _array(_object({'host': NAME, 'nodename': NAME}, ('host', 'nodename')),
                     MAX_PER_REQUEST),
    'error': _object({'type': NAME, 'reason': {'type': 'string', 'maxLength': MAX_TEXT}},
                     ('type',)),
}, required=('version', 'request_spec'))

MIX = _array(_object({
    # A flavor of the snapshot by name, or one given by its sizes (each keyword applies to
    # the type it is about: a single message says what is wrong with either).
    'flavor': dict(_object(FLAVOR['properties'], ('memory_mb', 'vcpus')),
                   type=['string', 'object'], maxLength=255),
    'count': {'type': 'integer', 'minimum': 0, 'maximum': MAX_REQUESTS},
    'num_instances': {'type': 'integer', 'minimum': 1, 'maximum': MAX_PER_REQUEST},
}, ('flavor',)), MAX_MIX_ENTRIES)


def _iso_time(value):
    try:
        datetime.datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


@functools.lru_cache(maxsize=None)
def _validator(name):
    return fastjsonschema.compile(globals()[name], formats={'an ISO 8601 time': _iso_time})


def problem(name, document):
    """The first way ``document`` breaks the schema ``name`` (``'SNAPSHOT'``,
    ``'TRACE_LINE'``, ``'MIX'``), as one short line; None if none."""
    try:
        _validator(name)(document)
    except fastjsonschema.JsonSchemaValueException as exc:
        return _shown(exc)
    return None


def _shown(exc):
    message = exc.message
    if message.startswith('data.') or message.startswith('data['):
        message = message[5:] if message.startswith('data.') else message[4:]
    elif message.startswith('data '):
        message = 'the document ' + message[5:]
    if isinstance(exc.value, (str, int, float)) or exc.value is None:
        shown = repr(exc.value)
        message += ' (got %s)' % (shown if len(shown) <= 40 else shown[:36] + '...')
    return message if len(message) <= 200 else message[:196] + '...'


def node_problem(snapshot):
    """The first node text column of ``snapshot`` (valid against SNAPSHOT) that holds no
    JSON or JSON that :data:`NODE_JSON` does not describe; None if none."""
    known = {}
    for index, entry in enumerate(snapshot['hosts']):
        node = entry['node']
        for column in NODE_JSON:
            text = node.get(column)
            if not text:
                continue
            if (column, text) not in known:
                known[column, text] = _text_problem(column, text)
            if known[column, text]:
                return 'hosts[%d].node.%s %s' % (index, column, known[column, text])
    return None


@functools.lru_cache(maxsize=None)
def _column_validator(column):
    return fastjsonschema.compile(NODE_JSON[column])


def _text_problem(column, text):
    try:
        value = files.loads(text)
    except ValueError as exc:
        return 'holds no JSON (%s)' % exc
    try:
        _column_validator(column)(value)
    except fastjsonschema.JsonSchemaValueException as exc:
        return 'holds JSON that %s' % _shown(exc).replace('the document ', '', 1)
    return None


def host_problem(snapshot):
    """What the schema cannot see in a valid snapshot's hosts: a node listed twice, or a
    node and its service naming different hosts; None if nothing."""
    seen = set()
    for index, entry in enumerate(snapshot['hosts']):
        service, node = entry['service'], entry['node']
        key = (node['host'], node['hypervisor_hostname'])
        if node['host'] != service['host']:
            return ('hosts[%d]: the node of host %r has the service of host %r'
                    % (index, node['host'], service['host']))
        if key in seen:
            return 'hosts[%d]: host %r node %r is listed twice' % ((index,) + key)
        seen.add(key)
    return None
