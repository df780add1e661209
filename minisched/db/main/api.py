"""Cell database API: services, compute nodes, instances, instance faults and actions.

Every function takes the request context first, runs in its own transaction on the cell the
context targets (``engines.main_engine(context)``) and returns plain dicts (or lists of them).
Reads honour ``context.read_deleted``; writes only touch live rows; deletes are soft
(``deleted = id``); writes are retried on deadlock; duplicates raise named exceptions.

Authorization is Nova's (see ``minisched.context``): service and compute node writes need an
admin context; instance functions need an admin's or a user's context, and a user's reaches
only its own project's instances (Nova's ``project_only``): another project's instance is
InstanceNotFound, as if it did not exist. Instance faults, actions and events go with their
instance: a user's context reads and writes only those of its project's instances.
"""
import datetime

import sqlalchemy as sa
from oslo_utils import uuidutils

from minisched import context as ms_context
from minisched import exception
from minisched.db import engines, markers, utils
from minisched.db.main import models

#: Binary of the compute service (``service_get_by_compute_host``, ``service_destroy``).
COMPUTE_BINARY = 'minisched-compute'
#: Task state that turns an unexpected-task-state error into UnexpectedDeletingTaskStateError.
TASK_DELETING = 'deleting'
#: The task state of a rebooting instance, and the vm state of a soft-deleted one.
TASK_REBOOTING = 'rebooting'
VM_SOFT_DELETED = 'soft-delete'

services = models.services
nodes = models.compute_nodes
instances = models.instances
faults = models.instance_faults
actions = models.instance_actions
events = models.instance_actions_events


def _begin(context):
    return engines.main_engine(context).begin()


def _get(context, table, *where):
    with _begin(context) as conn:
        return utils.fetch(conn, table, *utils.visible(table, context), *where)


def _get_or_raise(context, error, table, *where):
    row = _get(context, table, *where)
    if row is None:
        raise error
    return row


def _list(context, table, *where, order_by=None):
    with _begin(context) as conn:
        return utils.fetch_all(conn, table, *utils.visible(table, context), *where,
                               order_by=order_by)


def _with_uuid(values):
    values = dict(values)
    if not values.get('uuid'):
        values['uuid'] = uuidutils.generate_uuid()
    return values


def _live(table, *where):
    return (table.c.deleted == 0, *where)


def _update_live(context, error, table, where, values):
    """Update the live row matching ``where`` and return it, or raise ``error``."""
    with _begin(context) as conn:
        row = utils.update_and_fetch(conn, table, _live(table, *where), values)
        if row is None:
            raise error
        return row


def _soft_delete(conn, table, *where):
    return utils.update(conn, table, _live(table, *where), utils.soft_delete_values(table))


# -- authorization --------------------------------------------------------------------------------

#: Nova's ``@require_context``: an admin's context or a user's (instances and their records).
_user_or_admin = ms_context.checked(ms_context.require_context)
#: Records only services and operators write: services and compute nodes.
_admin_only = ms_context.checked(ms_context.require_admin_context)


def _project_only(context, table=None):
    """Nova's ``project_only``: the WHERE clause keeping a user's context to its project."""
    if not ms_context.is_user_context(context):
        return []
    return [(instances if table is None else table).c.project_id == context.project_id]


def _of_own_instances(context, column):
    """The WHERE clause keeping a user's context to rows whose ``column`` names an instance of
    its project (deleted or not: the history of a deleted instance stays its owner's)."""
    if not ms_context.is_user_context(context):
        return []
    return [column.in_(sa.select(instances.c.uuid).where(*_project_only(context)))]


def _hidden_if_exists(conn, error, table, *where):
    """``error``, marked as a refusal (``ms_context.hide``) when a row matching ``where``
    exists: a user's context missed it only because it belongs to another project."""
    if utils.exists(conn, table, *where):
        ms_context.hide(error)
    return error


def _instance_or_raise(conn, context, instance_uuid, *where, for_update=False):
    """The instance row matching ``where`` that ``context`` may see, or InstanceNotFound."""
    where = (instances.c.uuid == instance_uuid, *where)
    row = utils.fetch(conn, instances, *where, *_project_only(context), for_update=for_update)
    if row is None:
        error = exception.InstanceNotFound(instance_id=instance_uuid)
        if ms_context.is_user_context(context):
            _hidden_if_exists(conn, error, instances, *where)
        raise error
    return row


def _check_instance_in_project(conn, context, instance_uuid):
    """Nova's ``_check_instance_exists_in_project``, before a user's context writes a record
    of an instance; deleted instances count (their delete action still gets its events)."""
    if ms_context.is_user_context(context):
        _instance_or_raise(conn, context, instance_uuid)


# -- services -------------------------------------------------------------------------------------
# Read by an admin's context or a user's, never an anonymous one (Nova checks no context here).

def _service_exists(values):
    def make(error):
        if 'topic' in error.columns and 'binary' not in error.columns:
            return exception.ServiceTopicExists(host=values.get('host'),
                                                topic=values.get('topic'))
        return exception.ServiceBinaryExists(host=values.get('host'),
                                             binary=values.get('binary'))
    return make


@_admin_only
@utils.writer
def service_create(context, values):
    values = _with_uuid(values)
    with utils.duplicate_as(_service_exists(values)), _begin(context) as conn:
        return utils.insert(conn, services, values)


@_user_or_admin
def service_get(context, service_id):
    return _get_or_raise(context, exception.ServiceNotFound(service_id=service_id),
                         services, services.c.id == service_id)


@_user_or_admin
def service_get_by_uuid(context, service_uuid):
    return _get_or_raise(context, exception.ServiceNotFound(service_id=service_uuid),
                         services, services.c.uuid == service_uuid)


@_user_or_admin
def service_get_by_host_and_binary(context, host, binary):
    return _get_or_raise(context, exception.HostBinaryNotFound(host=host, binary=binary),
                         services, services.c.host == host, services.c.binary == binary)


@_user_or_admin
def service_get_by_host_and_topic(context, host, topic):
    """The enabled service of ``topic`` on ``host`` (``ServiceNotFound`` if none)."""
    return _get_or_raise(context, exception.ServiceNotFound(service_id='%s/%s' % (host, topic)),
                         services, services.c.host == host, services.c.topic == topic,
                         services.c.disabled == sa.false())


@_user_or_admin
def service_get_all(context, disabled=None):
    where = [] if disabled is None else [services.c.disabled == bool(disabled)]
    return _list(context, services, *where)


@_user_or_admin
def service_get_all_by_topic(context, topic):
    return _list(context, services, services.c.topic == topic,
                 services.c.disabled == sa.false())


@_user_or_admin
def service_get_all_by_binary(context, binary, include_disabled=False):
    where = [] if include_disabled else [services.c.disabled == sa.false()]
    return _list(context, services, services.c.binary == binary, *where)


_SERVICES_CHANGED = utils.changed_since_select(services,
                                               services.c.binary == sa.bindparam('binary'))
_NODES_CHANGED = utils.changed_since_select(nodes)


@_user_or_admin
def service_get_all_changed_since(context, binary, since):
    """``binary`` services created, updated or deleted at/after ``since`` (deleted included),
    for the scheduler's incremental refresh."""
    with _begin(context) as conn:
        return utils.fetch_changed_since(conn, _SERVICES_CHANGED, since=since, binary=binary)


def changes_marker(context):
    """A marker that stays equal while nothing is committed to the cell database ``context``
    targets, or None when the backend gives none (see ``minisched.db.markers``)."""
    return markers.current(engines.main_url(context))


#: Service and compute node columns whose values repeat across rows (a host's name is in its
#: node row twice and in its service row): one string object each in the scheduler's rows.
SHARED_HOST_COLUMNS = frozenset((
    'host', 'hypervisor_hostname', 'binary', 'topic', 'disabled_reason', 'hypervisor_type',
    'cpu_info', 'host_ip', 'supported_instances', 'metrics', 'pci_stats', 'numa_topology',
    'extra_resources'))


#: What identifies the version of a row (``compute_changes_since``, ``compute_hosts_get_all``).
VERSION_COLUMNS = ('id', 'updated_at', 'created_at')
#: What identifies a row's host (``compute_hosts_get_all``), after its version.
KEY_COLUMNS = {'services': ('host',), 'compute_nodes': ('host', 'hypervisor_hostname')}


def _columns(table, names):
    return [table.c[name] for name in names]


def _tagged_versions(index, table, *where):
    """The versions of ``table``'s rows changed since ``since``, tagged with ``index``."""
    return utils.changed_since_select(
        table, *where,
        columns=[sa.literal_column(str(index)).label('tbl'), *_columns(table, VERSION_COLUMNS)])


#: The versions of both tables' changed rows in one statement: one round trip, and one
#: snapshot on every backend. Its first column is the table's index in ``_VERSIONED_TABLES``.
_VERSIONED_TABLES = (services, nodes)
_CHANGED_VERSIONS = sa.union_all(
    _tagged_versions(0, services, services.c.binary == sa.bindparam('binary')),
    _tagged_versions(1, nodes))
_LIVE_SERVICE_VERSIONS = sa.select(
    *_columns(services, VERSION_COLUMNS + KEY_COLUMNS['services'])).where(
        *_live(services, services.c.binary == sa.bindparam('binary')))
_LIVE_NODE_VERSIONS = sa.select(
    *_columns(nodes, VERSION_COLUMNS + KEY_COLUMNS['compute_nodes'])).where(*_live(nodes))


def compute_hosts_get_all(context, binary, unheld=None):
    """``(services, nodes)`` for the scheduler's full read of a cell, in one transaction:
    every ``binary`` service (disabled ones too) and every compute node, as FrozenRows.

    With ``unheld``, every row is listed first by version and key (``VERSION_COLUMNS``, then
    ``KEY_COLUMNS`` of its table), and only the ids that ``unheld(table_name, versions)``
    returns are read whole (see ``compute_changes_since``; here they may have been deleted
    since they were listed). The scheduler's periodic full read applies few rows, if any.
    """
    with _begin(context) as conn:
        if unheld is None:
            return (utils.fetch_all(conn, services, *utils.visible(services, context),
                                    services.c.binary == binary, frozen=SHARED_HOST_COLUMNS),
                    utils.fetch_all(conn, nodes, *utils.visible(nodes, context),
                                    frozen=SHARED_HOST_COLUMNS))
        return (_unheld_rows(conn, services, _LIVE_SERVICE_VERSIONS, unheld, binary=binary),
                _unheld_rows(conn, nodes, _LIVE_NODE_VERSIONS, unheld))


def compute_changes_since(context, binary, since, unheld=None):
    """``(services, nodes)``: ``service_get_all_changed_since`` and
    ``compute_node_get_all_changed_since`` in one transaction (one snapshot, one checkout),
    as FrozenRows (the scheduler's incremental read).

    With ``unheld``, the changed rows of both tables are listed by version first (their
    ``VERSION_COLUMNS``, in one statement), and ``unheld(table_name, versions)`` returns the
    ids among them to read whole: the rows whose version the caller does not hold. The
    scheduler's reads look back before the newest timestamp they saw, and in a cluster whose
    computes report, that window holds hundreds of rows already applied: reading them whole
    cost most of a refresh.
    """
    with _begin(context) as conn:
        if unheld is None:
            return (utils.fetch_changed_since(conn, _SERVICES_CHANGED, since=since,
                                              binary=binary, frozen=SHARED_HOST_COLUMNS),
                    utils.fetch_changed_since(conn, _NODES_CHANGED, since=since,
                                              frozen=SHARED_HOST_COLUMNS))
        # Fetched at once: row by row, a window of ~600 rows cost 1 ms more on PostgreSQL.
        rows = conn.execute(_CHANGED_VERSIONS, {'since': since, 'binary': binary}).all()
        return tuple(_whole_rows(conn, table, unheld(table.name, [
            row[1:] for row in rows if row[0] == index]))
            for index, table in enumerate(_VERSIONED_TABLES))


def _unheld_rows(conn, table, versions, unheld, **params):
    return _whole_rows(conn, table, unheld(table.name, conn.execute(versions, params).all()))


def _whole_rows(conn, table, ids):
    return utils.fetch_by_ids(conn, table, ids, frozen=SHARED_HOST_COLUMNS) if ids else []


@_user_or_admin
def service_get_all_computes_by_hv_type(context, hv_type, include_disabled=False):
    """Live compute services (whatever the context's ``read_deleted``) of a host with a node
    of hypervisor type ``hv_type``; as Nova's join, which filters the services only, a
    deleted node counts too."""
    where = [services.c.deleted == 0, services.c.binary == COMPUTE_BINARY,
             services.c.host.in_(sa.select(nodes.c.host).where(
                 nodes.c.hypervisor_type == hv_type))]
    if not include_disabled:
        where.append(services.c.disabled == sa.false())
    with _begin(context) as conn:
        return utils.fetch_all(conn, services, *where)


@_user_or_admin
def service_get_all_by_host(context, host):
    return _list(context, services, services.c.host == host)


@_user_or_admin
def service_get_by_compute_host(context, host):
    return _get_or_raise(context, exception.ComputeHostNotFound(host=host), services,
                         services.c.host == host, services.c.binary == COMPUTE_BINARY)


@_admin_only
@utils.writer
def service_update(context, service_id, values):
    """Update a service; a growing ``report_count`` also sets ``last_seen_up`` to now.

    The comparison happens inside the UPDATE (atomic). ``last_seen_up`` is assigned first:
    MySQL evaluates SET assignments left to right, so it must still see the old report_count.
    """
    assignments = [(services.c[key], value) for key, value in values.items()]
    if values.get('report_count') is not None:
        grew = services.c.report_count < values['report_count']
        seen = sa.case((grew, utils.now()), else_=services.c.last_seen_up)
        assignments.insert(0, (services.c.last_seen_up, seen))
    where = _live(services, services.c.id == service_id)
    with utils.duplicate_as(_service_exists(values)), _begin(context) as conn:
        row = utils.update_and_fetch(conn, services, where, assignments)
        if row is None:
            raise exception.ServiceNotFound(service_id=service_id)
        return row


@_admin_only
@utils.writer
def service_destroy(context, service_id):
    """Soft-delete a service and its compute nodes (a compute's also found by host)."""
    with _begin(context) as conn:
        service = utils.fetch(conn, services, *_live(services, services.c.id == service_id))
        if service is None:
            raise exception.ServiceNotFound(service_id=service_id)
        _soft_delete(conn, services, services.c.id == service_id)
        owned = nodes.c.service_id == service_id
        if service['binary'] == COMPUTE_BINARY:
            owned = sa.or_(owned, nodes.c.host == service['host'])
        _soft_delete(conn, nodes, owned)


@_user_or_admin
def service_get_minimum_version(context, binaries):
    """{binary: lowest version among live, not forced-down services}; absent if none."""
    stmt = (sa.select(services.c.binary, sa.func.min(services.c.version))
            .where(services.c.binary.in_(list(binaries)), services.c.deleted == 0,
                   services.c.forced_down == sa.false())
            .group_by(services.c.binary))
    with _begin(context) as conn:
        return {binary: version for binary, version in conn.execute(stmt)}


# -- compute nodes --------------------------------------------------------------------------------

def _node_exists(values):
    def make(error):
        return exception.ComputeNodeExists(host=values.get('host'),
                                           nodename=values.get('hypervisor_hostname'))
    return make


@_admin_only
@utils.writer
def compute_node_create(context, values):
    values = _with_uuid(values)
    with utils.duplicate_as(_node_exists(values)), _begin(context) as conn:
        return utils.insert(conn, nodes, values)


def compute_node_get(context, compute_id):
    return _get_or_raise(context, exception.ComputeNodeNotFound(compute_id=compute_id),
                         nodes, nodes.c.id == compute_id)


def compute_node_get_by_uuid(context, compute_uuid):
    return _get_or_raise(context, exception.ComputeNodeNotFound(compute_id=compute_uuid),
                         nodes, nodes.c.uuid == compute_uuid)


def compute_node_get_by_host_and_nodename(context, host, nodename):
    return _get_or_raise(context, exception.ComputeHostNotFound(host=host), nodes,
                         nodes.c.host == host, nodes.c.hypervisor_hostname == nodename)


def compute_node_get_by_nodename(context, hypervisor_hostname):
    """The node named ``hypervisor_hostname`` (the lowest id if several hosts have one)."""
    rows = _list(context, nodes, nodes.c.hypervisor_hostname == hypervisor_hostname)
    if not rows:
        raise exception.ComputeHostNotFound(host=hypervisor_hostname)
    return rows[0]


def compute_node_get_all(context):
    return _list(context, nodes)


def compute_node_get_all_by_pagination(context, limit=None, marker=None):
    """Nodes in id order, ``limit`` of them after the node of id ``marker``
    (``MarkerNotFound`` when the context sees no such node)."""
    where = []
    if marker is not None:
        if _get(context, nodes, nodes.c.id == marker) is None:
            raise exception.MarkerNotFound(marker=marker)
        where.append(nodes.c.id > marker)
    stmt = (sa.select(nodes).where(*utils.visible(nodes, context), *where)
            .order_by(nodes.c.id))
    if limit is not None:
        stmt = stmt.limit(limit)
    with _begin(context) as conn:
        return utils.to_dicts(conn.execute(stmt))


def compute_node_get_all_by_hypervisor_type(context, hv_type):
    return _list(context, nodes, nodes.c.hypervisor_type == hv_type)


def compute_node_get_all_by_host(context, host):
    rows = _list(context, nodes, nodes.c.host == host)
    if not rows:
        raise exception.ComputeHostNotFound(host=host)
    return rows


def compute_node_get_all_by_uuids(context, compute_uuids):
    return _list(context, nodes, nodes.c.uuid.in_(list(compute_uuids)))


def compute_nodes_get_by_service_id(context, service_id):
    rows = _list(context, nodes, nodes.c.service_id == service_id)
    if not rows:
        raise exception.ServiceNotFound(service_id=service_id)
    return rows


def compute_node_get_all_by_not_mapped(context, mapped_less_than):
    return _list(context, nodes, nodes.c.mapped < mapped_less_than)


def compute_node_get_all_changed_since(context, since):
    """Nodes created or updated at/after ``since``, deleted ones included (whatever the context
    says), so that an incremental refresh also learns about deletions."""
    with _begin(context) as conn:
        return utils.fetch_changed_since(conn, _NODES_CHANGED, since=since)


@_admin_only
@utils.writer
def compute_node_update(context, compute_id, values):
    with utils.duplicate_as(_node_exists(values)):
        return _update_live(context, exception.ComputeNodeNotFound(compute_id=compute_id),
                            nodes, [nodes.c.id == compute_id], values)


@_admin_only
@utils.writer
def compute_node_delete(context, compute_id):
    with _begin(context) as conn:
        if _soft_delete(conn, nodes, nodes.c.id == compute_id) != 1:
            raise exception.ComputeNodeNotFound(compute_id=compute_id)


# -- instances ------------------------------------------------------------------------------------

@_user_or_admin
@utils.writer
def instance_create(context, values, action=None, event=None):
    """Create an instance; a user's context only in its own project (Forbidden otherwise).

    With ``action`` (and ``event``): also its first instance action and an event of it, in
    the same transaction (the conductor records the ``create`` action and its finished
    ``schedule`` event with the instance it places: one round trip instead of four).
    """
    ms_context.authorize_project_context(context, values.get('project_id'))
    values = _with_uuid(values)
    with utils.duplicate_as(lambda error: exception.InstanceExists(name=values['uuid'])), \
            _begin(context) as conn:
        instance = utils.insert(conn, instances, values)
        if action is not None:
            action_row = utils.insert(conn, actions, dict(action, instance_uuid=values['uuid']))
            if event is not None:
                utils.insert(conn, events, dict(event, action_id=action_row['id']))
        return instance


@_user_or_admin
def instance_get(context, instance_id):
    row = _get(context, instances, instances.c.id == instance_id, *_project_only(context))
    if row is None:
        raise exception.InstanceNotFound(instance_id=instance_id)
    return row


@_user_or_admin
def instance_get_by_uuid(context, instance_uuid):
    with _begin(context) as conn:
        return _instance_or_raise(conn, context, instance_uuid,
                                  *utils.visible(instances, context))


def _expectations(values, expected_vm_state, expected_task_state):
    """{column: expected value or list}. ``None`` arguments mean "no check"; Nova-style
    ``expected_*`` keys inside ``values`` are honoured too (there None means "must be None")."""
    expected = {}
    for column, given in (('vm_state', expected_vm_state), ('task_state', expected_task_state)):
        key = 'expected_' + column
        if key in values:
            given = values.pop(key)
        elif given is None:
            continue
        expected[column] = list(given) if isinstance(given, (list, tuple, set)) else given
    return expected


def _matches(actual, expected):
    return actual in expected if isinstance(expected, list) else actual == expected


def _unexpected_state(instance_uuid, actual, expected):
    if actual is None:
        return exception.InstanceNotFound(instance_id=instance_uuid)
    if 'vm_state' in expected and not _matches(actual['vm_state'], expected['vm_state']):
        return exception.UnexpectedVMStateError(expected=expected['vm_state'],
                                                actual=actual['vm_state'])
    error = exception.UnexpectedTaskStateError
    if actual['task_state'] == TASK_DELETING:
        error = exception.UnexpectedDeletingTaskStateError
    return error(expected=expected.get('task_state'), actual=actual['task_state'])


@_user_or_admin
@utils.writer
def instance_update_and_get_original(context, instance_uuid, values, expected_vm_state=None,
                                     expected_task_state=None):
    """Update an instance and return ``(old, new)`` rows.

    ``expected_vm_state`` / ``expected_task_state`` (a value, or a list that may hold None)
    make the write conditional: the check is part of the UPDATE's WHERE clause, so no
    concurrent writer can slip in between; a mismatch raises UnexpectedVMStateError or
    UnexpectedTaskStateError (UnexpectedDeletingTaskStateError when the instance is deleting).
    """
    return _instance_update(context, instance_uuid, values, expected_vm_state,
                            expected_task_state, original=True)


@_user_or_admin
@utils.writer
def instance_update(context, instance_uuid, values, expected_vm_state=None,
                    expected_task_state=None):
    """:func:`instance_update_and_get_original`'s write, returning the updated row only.

    ``Instance.save`` has no use for the row as it was: reading (and locking) it first cost
    every save a statement. Here a save is one statement where the backend returns what it
    updated; the row is read only to tell why an update matched nothing.
    """
    return _instance_update(context, instance_uuid, values, expected_vm_state,
                            expected_task_state, original=False)[1]


def _instance_update(context, instance_uuid, values, expected_vm_state, expected_task_state,
                     original):
    values = dict(values)
    expected = _expectations(values, expected_vm_state, expected_task_state)
    where = _live(instances, instances.c.uuid == instance_uuid, *_project_only(context))
    checks = [utils.match(instances.c[column], value) for column, value in expected.items()]
    with utils.duplicate_as(lambda error: exception.InstanceExists(name=instance_uuid)), \
            _begin(context) as conn:
        old = _instance_or_raise(conn, context, instance_uuid, instances.c.deleted == 0,
                                 for_update=True) if original else None
        new = utils.update_and_fetch(conn, instances, where, values, checks)
        if new is None:
            raise _unexpected_state(instance_uuid, _instance_or_raise(
                conn, context, instance_uuid, instances.c.deleted == 0), expected)
        return old, new


@_user_or_admin
@utils.writer
def instance_column_update(context, instance_uuid, column, change):
    """Set ``column`` of the live instance to ``change(its current value)``, the row locked
    between the read and the write (an instance's tags); returns the new value."""
    where = [instances.c.uuid == instance_uuid, instances.c.deleted == 0,
             *_project_only(context)]
    with _begin(context) as conn:
        row = utils.fetch(conn, instances, *where, for_update=True)
        if row is None:
            raise exception.InstanceNotFound(instance_id=instance_uuid)
        value = change(row[column])
        utils.update(conn, instances, where, {column: value})
        return value


@_user_or_admin
def instance_get_all_by_host(context, host):
    return _list(context, instances, instances.c.host == host, *_project_only(context))


@_user_or_admin
def instance_get_all_by_host_and_node(context, host, node):
    return _list(context, instances, instances.c.host == host, instances.c.node == node,
                 *_project_only(context))


@_user_or_admin
def instance_get_uuids_by_host(context, host):
    return [row['uuid'] for row in instance_get_all_by_host(context, host)]


def _instance_filters(context, filters):
    """WHERE clauses of ``filters``: exact match per column (a list means IN), ``deleted``
    True/False (overrides read_deleted), ``changes-since`` (also returns deleted rows)."""
    filters = dict(filters or {})
    since = filters.pop('changes-since', None)
    deleted = filters.pop('deleted', None)
    if deleted is not None:
        clauses = [instances.c.deleted != 0 if deleted else instances.c.deleted == 0]
    elif since is not None:
        clauses = []
    else:
        clauses = utils.visible(instances, context)
    if since is not None:
        clauses.append(utils.changed_since(instances, since))
    for key, value in filters.items():
        if key not in instances.c:
            raise exception.Invalid(reason='unknown instance filter %r' % key)
        clauses.append(utils.match(instances.c[key], value))
    return clauses + _project_only(context)


def _after_marker(column, marker_row, sort_key, descending):
    """Rows that follow ``marker_row`` in (``column`` NULLs last, id) order."""
    def beyond(col, value):
        return col < value if descending else col > value
    value, row_id = marker_row[sort_key], marker_row['id']
    if value is None:
        return sa.and_(column.is_(None), beyond(instances.c.id, row_id))
    return sa.or_(column.is_(None), beyond(column, value),
                  sa.and_(column == value, beyond(instances.c.id, row_id)))


@_user_or_admin
def instance_get_all_by_filters(context, filters, sort_key='created_at', sort_dir='desc',
                                limit=None, marker=None, exclude=None):
    """Instances matching ``filters`` whose ``exclude`` columns differ from the values given
    ({column: value}, by SQL's ``!=``: a NULL column differs from nothing), sorted by
    ``sort_key`` (then id; NULLs last), paged by ``limit`` and ``marker`` (the uuid of the
    last instance of the previous page)."""
    if sort_key not in instances.c or sort_dir not in ('asc', 'desc'):
        raise exception.Invalid(reason='cannot sort by %r %r' % (sort_key, sort_dir))
    column, descending = instances.c[sort_key], sort_dir == 'desc'
    order = [column.is_(None)] + [c.desc() if descending else c.asc()
                                  for c in (column, instances.c.id)]
    where = _instance_filters(context, filters)
    for key, value in (exclude or {}).items():
        where.append(instances.c[key] != value)
    stmt = sa.select(instances).where(*where).order_by(*order)
    with _begin(context) as conn:
        if marker is not None:
            ref = utils.fetch(conn, instances, instances.c.uuid == marker,
                              *_project_only(context))
            if ref is None:
                raise exception.MarkerNotFound(marker=marker)
            stmt = stmt.where(_after_marker(column, ref, sort_key, descending))
        if limit is not None:
            stmt = stmt.limit(limit)
        return utils.to_dicts(conn.execute(stmt))


@_user_or_admin
@utils.writer
def instance_destroy(context, instance_uuid, hard_delete=False, host_unset=False):
    """Delete an instance, softly (its row returned as deleted) or, with ``hard_delete``,
    for good (its row returned as it was). With ``host_unset``, only while it has no host:
    ObjectActionError ('host changed') if a compute took it meanwhile."""
    with _begin(context) as conn:
        row = _instance_or_raise(conn, context, instance_uuid, instances.c.deleted == 0,
                                 for_update=True)
        if host_unset and row['host'] is not None:
            raise exception.ObjectActionError(action='destroy', reason='host changed')
        if hard_delete:
            conn.execute(sa.delete(instances).where(instances.c.id == row['id']))
            return row
        _soft_delete(conn, instances, instances.c.id == row['id'])
        return utils.fetch(conn, instances, instances.c.id == row['id'])


@_user_or_admin
def instance_get_all_hung_in_rebooting(context, reboot_window):
    """Live instances rebooting since ``reboot_window`` seconds or more (``updated_at``)."""
    before = utils.now() - datetime.timedelta(seconds=reboot_window)
    return _list(context, instances, instances.c.task_state == TASK_REBOOTING,
                 instances.c.updated_at <= before, *_project_only(context))


@_user_or_admin
def instance_get_active_by_window_joined(context, begin, end=None, project_id=None,
                                         host=None, limit=None, marker=None):
    """Instances, deleted ones too, not terminated before ``begin`` nor launched after
    ``end``, of ``project_id`` and ``host`` when given, by project and uuid, paged after the
    instance ``marker`` (Nova's query, for usage audits)."""
    where = [sa.or_(instances.c.terminated_at.is_(None), instances.c.terminated_at > begin)]
    if end:
        where.append(instances.c.launched_at < end)
    if project_id:
        where.append(instances.c.project_id == project_id)
    if host:
        where.append(instances.c.host == host)
    with _begin(context) as conn:
        if marker is not None:
            ref = utils.fetch(conn, instances, instances.c.uuid == marker,
                              *_project_only(context))
            if ref is None:
                raise exception.MarkerNotFound(marker=marker)
            where.append(sa.or_(instances.c.project_id > ref['project_id'], sa.and_(
                instances.c.project_id == ref['project_id'], instances.c.uuid > marker)))
        stmt = sa.select(instances).where(*where, *_project_only(context)).order_by(
            instances.c.project_id, instances.c.uuid)
        if limit is not None:
            stmt = stmt.limit(limit)
        return utils.to_dicts(conn.execute(stmt))


@_user_or_admin
def instance_count(context, project_id, user_id=None, vm_state=None):
    """``{'instances', 'cores', 'ram'}`` of the project's (user's) live instances that are
    neither soft-deleted nor hidden (of ``vm_state`` only, when given): Nova's quota
    usage counts."""
    where = [instances.c.deleted == 0, instances.c.project_id == project_id,
             sa.or_(instances.c.vm_state.is_(None), instances.c.vm_state != VM_SOFT_DELETED),
             sa.or_(instances.c.hidden.is_(None), instances.c.hidden == sa.false())]
    if user_id is not None:
        where.append(instances.c.user_id == user_id)
    if vm_state is not None:
        where.append(instances.c.vm_state == vm_state)
    stmt = sa.select(sa.func.count(instances.c.id), sa.func.sum(instances.c.vcpus),
                     sa.func.sum(instances.c.memory_mb)).where(*where, *_project_only(context))
    with _begin(context) as conn:
        count, cores, ram = conn.execute(stmt).first()
    return {'instances': int(count or 0), 'cores': int(cores or 0), 'ram': int(ram or 0)}


# -- instance faults ------------------------------------------------------------------------------

@_user_or_admin
@utils.writer
def instance_fault_create(context, values):
    with _begin(context) as conn:
        _check_instance_in_project(conn, context, values.get('instance_uuid'))
        return utils.insert(conn, faults, values)


@_user_or_admin
def instance_fault_get_by_instance_uuids(context, instance_uuids):
    """{instance_uuid: [faults, newest first]} with an entry for every uuid asked about."""
    uuids = list(instance_uuids)
    result = {uuid: [] for uuid in uuids}
    with _begin(context) as conn:
        rows = utils.fetch_all(conn, faults, faults.c.instance_uuid.in_(uuids),
                               *_of_own_instances(context, faults.c.instance_uuid),
                               order_by=(faults.c.created_at.desc(), faults.c.id.desc()))
    for row in rows:
        result[row['instance_uuid']].append(row)
    return result


# -- instance actions and their events ------------------------------------------------------------

_NEWEST_FIRST = {'actions': (actions.c.created_at.desc(), actions.c.id.desc()),
                 'events': (events.c.created_at.desc(), events.c.id.desc())}


def _action(conn, instance_uuid, request_id, *where):
    return utils.fetch(conn, actions, actions.c.instance_uuid == instance_uuid,
                       actions.c.request_id == request_id, *where,
                       order_by=_NEWEST_FIRST['actions'])


def _action_or_raise(conn, instance_uuid, request_id):
    action = _action(conn, instance_uuid, request_id)
    if action is None:
        raise exception.InstanceActionNotFound(request_id=request_id,
                                               instance_uuid=instance_uuid)
    return action


def _without(values, *keys):
    return {key: value for key, value in values.items() if key not in keys}


@_user_or_admin
@utils.writer
def action_start(context, values):
    with _begin(context) as conn:
        _check_instance_in_project(conn, context, values.get('instance_uuid'))
        return utils.insert(conn, actions, values)


@_user_or_admin
@utils.writer
def action_finish(context, values):
    """Finish the newest action of ``values``' instance_uuid and request_id; returns it."""
    with _begin(context) as conn:
        _check_instance_in_project(conn, context, values['instance_uuid'])
        action = _action_or_raise(conn, values['instance_uuid'], values['request_id'])
        return utils.update_and_fetch(conn, actions, [actions.c.id == action['id']],
                                      _without(values, 'instance_uuid', 'request_id'))


@_user_or_admin
def action_get_by_request_id(context, instance_uuid, request_id):
    """The newest action of that instance and request, or None."""
    with _begin(context) as conn:
        return _action(conn, instance_uuid, request_id,
                       *_of_own_instances(context, actions.c.instance_uuid))


@_user_or_admin
def actions_get(context, instance_uuid, limit=None, marker=None, filters=None):
    """The instance's actions, newest first; after the action of request ``marker``
    (MarkerNotFound if it has none), at most ``limit``, ``filters``' ``changes-since`` /
    ``changes-before`` bounding their ``updated_at`` as Nova's."""
    filters = filters or {}
    where = [actions.c.instance_uuid == instance_uuid]
    if filters.get('changes-since'):
        where.append(actions.c.updated_at >= filters['changes-since'])
    if filters.get('changes-before'):
        where.append(actions.c.updated_at <= filters['changes-before'])
    with _begin(context) as conn:
        own = _of_own_instances(context, actions.c.instance_uuid)
        if marker is not None:
            ref = _action(conn, instance_uuid, marker, *own)
            if ref is None:
                raise exception.MarkerNotFound(marker=marker)
            where.append(sa.or_(actions.c.created_at < ref['created_at'], sa.and_(
                actions.c.created_at == ref['created_at'], actions.c.id < ref['id'])))
        stmt = sa.select(actions).where(*where, *own).order_by(*_NEWEST_FIRST['actions'])
        if limit is not None:
            stmt = stmt.limit(limit)
        return utils.to_dicts(conn.execute(stmt))


@_user_or_admin
@utils.writer
def action_event_start(context, values):
    """Record an event of the action named by ``values['instance_uuid']`` + ``request_id``.

    Where the backend returns what it updated, the action's ``updated_at`` is touched and
    its id read in one statement (the newest action of that request, as ``_action`` reads
    it), else read and then touched."""
    with _begin(context) as conn:
        _check_instance_in_project(conn, context, values['instance_uuid'])
        uuid, request_id = values['instance_uuid'], values['request_id']
        if conn.dialect.update_returning:
            action_id = conn.execute(sa.update(actions).where(
                actions.c.id == _newest_action_id(uuid, request_id)).values(
                updated_at=utils.now()).returning(actions.c.id)).scalar()
            if action_id is None:
                raise exception.InstanceActionNotFound(request_id=request_id,
                                                       instance_uuid=uuid)
        else:
            action_id = _action_or_raise(conn, uuid, request_id)['id']
            utils.update(conn, actions, [actions.c.id == action_id],
                         {'updated_at': utils.now()})
        event = dict(_without(values, 'instance_uuid', 'request_id'), action_id=action_id)
        return utils.insert(conn, events, event)


def _newest_action_id(instance_uuid, request_id):
    """The id of the action ``_action`` finds, as a subquery."""
    return sa.select(actions.c.id).where(
        actions.c.instance_uuid == instance_uuid, actions.c.request_id == request_id).order_by(
        *_NEWEST_FIRST['actions']).limit(1).scalar_subquery()


def _finish_event_in_one(conn, values, by_host, finished):
    """``action_event_finish``'s update of the event, found by subqueries, in one statement
    that returns it; None when nothing matched (the caller then tells why)."""
    newest = sa.select(events.c.id).where(
        events.c.action_id == _newest_action_id(values['instance_uuid'], values['request_id']),
        events.c.event == values['event'], *by_host).order_by(
        *_NEWEST_FIRST['events']).limit(1).scalar_subquery()
    return utils.to_dict(conn.execute(sa.update(events).where(events.c.id == newest).values(
        finished).returning(*events.c)).first())


@_user_or_admin
@utils.writer
def action_event_finish(context, values):
    """Set finish_time/result/traceback of the newest such event; an 'error' result also
    marks the action's message 'Error'. Returns the event."""
    with _begin(context) as conn:
        _check_instance_in_project(conn, context, values['instance_uuid'])
        # The host tells apart the same event of two attempts (a reschedule's failed host
        # may finish after the next host started).
        by_host = [events.c.host == values['host']] if values.get('host') else []
        finished = _without(values, 'instance_uuid', 'request_id', 'event', 'host')
        # Where the backend returns what it updated, one statement finds and finishes the
        # event; the action and the event are read apart to tell why it found none.
        event = _finish_event_in_one(conn, values, by_host, finished) \
            if conn.dialect.update_returning else None
        if event is None:
            action = _action_or_raise(conn, values['instance_uuid'], values['request_id'])
            event = utils.fetch(conn, events, events.c.action_id == action['id'],
                                events.c.event == values['event'], *by_host,
                                order_by=_NEWEST_FIRST['events'])
            if event is None:
                raise exception.InstanceActionEventNotFound(event=values['event'],
                                                            action_id=action['id'])
            event = utils.update_and_fetch(conn, events, [events.c.id == event['id']],
                                           finished)
        if (values.get('result') or '').lower() == 'error':
            utils.update(conn, actions, [actions.c.id == event['action_id']],
                         {'message': 'Error'})
        return event


def _event_or_raise(conn, context, action_id, event_id):
    own = _of_own_instances(context, actions.c.instance_uuid)
    of_own_actions = [events.c.action_id.in_(sa.select(actions.c.id).where(*own))] if own else []
    event = utils.fetch(conn, events, events.c.id == event_id, events.c.action_id == action_id,
                        *of_own_actions)
    if event is None:
        raise exception.InstanceActionEventNotFound(event=event_id, action_id=action_id)
    return event


@_user_or_admin
def action_event_get_by_id(context, action_id, event_id):
    with _begin(context) as conn:
        return _event_or_raise(conn, context, action_id, event_id)


@_user_or_admin
@utils.writer
def action_event_finish_by_id(context, action_id, event_id, values):
    """:func:`action_event_finish` of the one event ``event_id`` of ``action_id``: the event
    a service started, told apart from the same event another attempt started since."""
    with _begin(context) as conn:
        _event_or_raise(conn, context, action_id, event_id)
        event = utils.update_and_fetch(conn, events, [events.c.id == event_id], values)
        if (values.get('result') or '').lower() == 'error':
            utils.update(conn, actions, [actions.c.id == action_id], {'message': 'Error'})
        return event


@_user_or_admin
def action_events_get(context, action_id):
    own = _of_own_instances(context, actions.c.instance_uuid)
    of_own_actions = [events.c.action_id.in_(sa.select(actions.c.id).where(*own))] if own else []
    with _begin(context) as conn:
        return utils.fetch_all(conn, events, events.c.action_id == action_id, *of_own_actions,
                               order_by=_NEWEST_FIRST['events'])
