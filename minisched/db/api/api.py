"""API database API: cell/host/instance mappings, flavors, aggregates, instance groups,
request specs and build requests.

Every function takes the request context first (for symmetry with the cell API; the API
database is the same whatever cell the context targets), runs in its own transaction on
``engines.api_engine()`` and returns plain dicts. Rows are hard-deleted. Composite rows carry
their children: host and instance mappings a nested ``cell_mapping`` dict, flavors an
``extra_specs`` dict, aggregates a ``hosts`` list and a ``metadata`` dict, instance groups a
``members`` list. Writes retry on deadlock; duplicates raise named exceptions.

Authorization (see ``minisched.context``): cell and host mappings, aggregates and flavors
are written by admin contexts only; cell and host mappings, which carry the cells' database
and transport URLs with their passwords, are read by admin contexts only too (a service
reading them for a user's request elevates its context). Instance mappings, build requests,
request specs and instance groups belong to a project: a user's context reaches only its own
project's (another project's is NotFound, as if it did not exist) and creates only its own,
as Nova's queries filter them (``project_only``, ``_instance_group_get_query``).
"""
import sqlalchemy as sa
from oslo_utils import uuidutils

from minisched import context as ms_context
from minisched import exception
from minisched.db import engines, markers, utils
from minisched.db.api import models

cells = models.cell_mappings
host_mappings = models.host_mappings
instance_mappings = models.instance_mappings
flavors = models.flavors
flavor_specs = models.flavor_extra_specs
flavor_projects = models.flavor_projects
aggregates = models.aggregates
aggregate_hosts = models.aggregate_hosts
aggregate_metadata = models.aggregate_metadata
groups = models.instance_groups
group_members = models.instance_group_member
request_specs = models.request_specs
build_requests = models.build_requests


def _begin():
    return engines.api_engine().begin()


def _with_uuid(values):
    values = dict(values)
    if not values.get('uuid'):
        values['uuid'] = uuidutils.generate_uuid()
    return values


def _fetch_or_raise(conn, error, table, *where):
    row = utils.fetch(conn, table, *where)
    if row is None:
        raise error
    return row


def _delete_or_raise(conn, error, table, *where):
    if conn.execute(sa.delete(table).where(*where)).rowcount == 0:
        raise error


def _update_or_raise(conn, error, table, where, values):
    row = utils.update_and_fetch(conn, table, where, values)
    if row is None:
        raise error
    return row


# -- authorization --------------------------------------------------------------------------------

#: Nova's ``@require_context``: an admin's context or a user's.
_user_or_admin = ms_context.checked(ms_context.require_context)
#: Records only operators (and services for their own hosts) write.
_admin_only = ms_context.checked(ms_context.require_admin_context)


def _project_only(context, table):
    """Nova's ``project_only`` for a table with a ``project_id`` column."""
    if not ms_context.is_user_context(context):
        return []
    return [table.c.project_id == context.project_id]


def _spec_project_only(context):
    """``project_only`` of request specs, which record no project: the instance mapping says
    whose instance it is. A spec whose instance has no mapping (not made yet, or gone) stays
    visible; one whose mapping names another project, or none, does not."""
    if not ms_context.is_user_context(context):
        return []
    not_own = sa.or_(instance_mappings.c.project_id.is_(None),
                     instance_mappings.c.project_id != context.project_id)
    mapped_elsewhere = sa.select(instance_mappings.c.id).where(
        instance_mappings.c.instance_uuid == request_specs.c.instance_uuid, not_own)
    return [~mapped_elsewhere.exists()]


def _own_or_raise(conn, context, error, table, where, scope):
    """The row of ``table`` matching ``where`` and the ``scope`` clauses of ``context``
    (``_project_only``), or ``error``, marked as a refusal (``ms_context.hide``) when the row
    exists out of the scope. Raised at one place either way: the traceback, which RPC carries
    to the caller, must not tell the two apart."""
    row = utils.fetch(conn, table, *where, *scope)
    if row is None:
        if scope and utils.exists(conn, table, *where):
            ms_context.hide(error)
        raise error
    return row


# -- key/value child tables (flavor extra specs, aggregate metadata) -----------------------------

def _pairs(conn, table, owner_column, owner_id):
    rows = conn.execute(sa.select(table.c.key, table.c.value).where(owner_column == owner_id))
    return {key: value for key, value in rows}


def _set_pairs(conn, table, owner_column, owner_id, pairs):
    """Upsert ``pairs`` for one owner; a None value deletes the key."""
    current = _pairs(conn, table, owner_column, owner_id)
    for key, value in pairs.items():
        where = [owner_column == owner_id, table.c.key == key]
        if value is None:
            conn.execute(sa.delete(table).where(*where))
        elif key in current:
            utils.update(conn, table, where, {'value': value})
        else:
            conn.execute(sa.insert(table).values({owner_column.key: owner_id, 'key': key,
                                                  'value': value}))


def _children(conn, table, owner_column, owner_ids, column):
    """{owner id: [values of ``column``]} for the given owners, oldest first."""
    found = {owner_id: [] for owner_id in owner_ids}
    stmt = (sa.select(owner_column, table.c[column]).where(owner_column.in_(list(found)))
            .order_by(table.c.id))
    for owner_id, value in conn.execute(stmt):
        found[owner_id].append(value)
    return found


# -- cell mappings --------------------------------------------------------------------------------

@_admin_only
@utils.writer
def cell_mapping_create(context, values):
    values = _with_uuid(values)
    exists = exception.CellMappingExists(name=values.get('name'), uuid=values['uuid'])
    with utils.duplicate_as(lambda error: exists), _begin() as conn:
        return utils.insert(conn, cells, values)


@_admin_only
def cell_mapping_get_by_uuid(context, cell_uuid):
    with _begin() as conn:
        return _fetch_or_raise(conn, exception.CellMappingNotFound(uuid=cell_uuid), cells,
                               cells.c.uuid == cell_uuid)


@_admin_only
def cell_mapping_get_all(context, disabled=None):
    """Every cell mapping in id order (only the disabled or enabled ones, if ``disabled`` is
    True or False)."""
    where = [] if disabled is None else [cells.c.disabled == bool(disabled)]
    with _begin() as conn:
        return utils.fetch_all(conn, cells, *where)


@_admin_only
@utils.writer
def cell_mapping_update(context, cell_uuid, values):
    with _begin() as conn:
        return _update_or_raise(conn, exception.CellMappingNotFound(uuid=cell_uuid), cells,
                                [cells.c.uuid == cell_uuid], values)


@_admin_only
@utils.writer
def cell_mapping_destroy(context, cell_uuid):
    """Delete a cell mapping; fails (DBReferenceError) while hosts or instances map to it."""
    with _begin() as conn:
        _delete_or_raise(conn, exception.CellMappingNotFound(uuid=cell_uuid), cells,
                         cells.c.uuid == cell_uuid)


def _with_cells(conn, rows):
    """Attach each row's ``cell_mapping`` (a dict, or None when ``cell_id`` is None)."""
    ids = {row['cell_id'] for row in rows if row['cell_id'] is not None}
    found = {cell['id']: cell for cell in utils.fetch_all(conn, cells, cells.c.id.in_(ids))}
    for row in rows:
        row['cell_mapping'] = found.get(row['cell_id'])
    return rows


# -- host mappings --------------------------------------------------------------------------------

def _host_mapping(conn, host):
    row = utils.fetch(conn, host_mappings, host_mappings.c.host == host)
    return None if row is None else _with_cells(conn, [row])[0]


@utils.writer
def _host_mapping_insert(host, cell_id):
    with _begin() as conn:
        return _with_cells(conn, [utils.insert(conn, host_mappings,
                                               {'host': host, 'cell_id': cell_id})])[0]


def _host_mapping_exists(host):
    """``HostMappingExists`` naming the cell ``host`` is mapped to (None if gone meanwhile)."""
    with _begin() as conn:
        existing = _host_mapping(conn, host) or {'cell_mapping': None}
    return exception.HostMappingExists(name=host,
                                       cell_uuid=(existing['cell_mapping'] or {}).get('uuid'))


@_admin_only
def host_mapping_create(context, host, cell_id):
    """Map ``host`` to cell ``cell_id``; ``HostMappingExists`` names the cell it is already in."""
    with utils.duplicate_as(lambda error: _host_mapping_exists(host)):
        return _host_mapping_insert(host, cell_id)


@_admin_only
def host_mapping_get_by_host(context, host):
    with _begin() as conn:
        row = _host_mapping(conn, host)
    if row is None:
        raise exception.HostMappingNotFound(name=host)
    return row


@_admin_only
def host_mapping_get_all(context, cell_id=None):
    where = [] if cell_id is None else [host_mappings.c.cell_id == cell_id]
    with _begin() as conn:
        return _with_cells(conn, utils.fetch_all(conn, host_mappings, *where))


def changes_marker():
    """A marker that stays equal while nothing is committed to the API database, or None
    when the backend gives none (see ``minisched.db.markers``)."""
    return markers.current(engines.configured_url(engines.API))


def host_mapping_get_host_cells(context, since=None):
    """``{host: cell uuid}`` of every mapping (created at/after ``since`` when given): what
    the scheduler needs to know which hosts are schedulable, in one cheap query."""
    with _begin() as conn:
        if since is None:
            rows = conn.execute(_HOST_CELLS)
        else:
            rows = conn.execute(_HOST_CELLS_CHANGED, {'since': since})
        return {row.host: row.uuid for row in rows}


_HOST_CELLS = sa.select(host_mappings.c.host, cells.c.uuid).join(
    cells, cells.c.id == host_mappings.c.cell_id)
_HOST_CELLS_CHANGED = _HOST_CELLS.where(utils.changed_since(host_mappings,
                                                            sa.bindparam('since')))


@_admin_only
@utils.writer
def host_mapping_update(context, mapping_id, values, host=None):
    """Update host mapping ``mapping_id`` (its ``cell_id``, its ``host``) and return it;
    ``HostMappingNotFound`` names ``host``, ``HostMappingExists`` the cell of a new host
    that is mapped already."""
    with utils.duplicate_as(lambda error: _host_mapping_exists(values.get('host'))), \
            _begin() as conn:
        row = _update_or_raise(conn, exception.HostMappingNotFound(name=host or mapping_id),
                               host_mappings, [host_mappings.c.id == mapping_id], values)
        return _with_cells(conn, [row])[0]


@_admin_only
@utils.writer
def host_mapping_destroy(context, host):
    with _begin() as conn:
        _delete_or_raise(conn, exception.HostMappingNotFound(name=host), host_mappings,
                         host_mappings.c.host == host)


# -- instance mappings ----------------------------------------------------------------------------

def _instance_mapping_where(instance_uuid):
    return [instance_mappings.c.instance_uuid == instance_uuid]


@_user_or_admin
@utils.writer
def instance_mapping_create(context, values):
    ms_context.authorize_project_context(context, values.get('project_id'))
    exists = exception.InstanceMappingExists(uuid=values.get('instance_uuid'))
    with utils.duplicate_as(lambda error: exists), _begin() as conn:
        return _with_cells(conn, [utils.insert(conn, instance_mappings, values)])[0]


def _own_instance_mapping(conn, context, instance_uuid):
    return _own_or_raise(conn, context, exception.InstanceMappingNotFound(uuid=instance_uuid),
                         instance_mappings, _instance_mapping_where(instance_uuid),
                         _project_only(context, instance_mappings))


@_user_or_admin
def instance_mapping_get_by_instance_uuid(context, instance_uuid):
    with _begin() as conn:
        return _with_cells(conn, [_own_instance_mapping(conn, context, instance_uuid)])[0]


def _claim_cell(conn, context, instance_uuid, cell_id):
    """Point an unplaced instance's mapping at ``cell_id``. True when done, False when the
    mapping already names a cell, None when there is no mapping (in the context's scope).

    The conditional UPDATE is the one place where a build request is taken: when a message is
    delivered twice, only one delivery can map the instance (see the conductor).
    """
    scope = [*_instance_mapping_where(instance_uuid), *_project_only(context, instance_mappings)]
    if utils.update(conn, instance_mappings, [*scope, instance_mappings.c.cell_id.is_(None)],
                    {'cell_id': cell_id}):
        return True
    return False if utils.fetch(conn, instance_mappings, *scope) is not None else None


@_user_or_admin
@utils.writer
def instance_mapping_claim_cell(context, instance_uuid, cell_id):
    """:func:`_claim_cell`; raises InstanceMappingNotFound when there is no mapping at all."""
    with _begin() as conn:
        claimed = _claim_cell(conn, context, instance_uuid, cell_id)
        if claimed is None:
            _own_instance_mapping(conn, context, instance_uuid)  # raises, hidden if need be
        return claimed


@_user_or_admin
def instance_mapping_get_all_by_cell(context, cell_id):
    with _begin() as conn:
        rows = utils.fetch_all(conn, instance_mappings, instance_mappings.c.cell_id == cell_id,
                               *_project_only(context, instance_mappings))
        return _with_cells(conn, rows)


@_user_or_admin
@utils.writer
def instance_mapping_update(context, instance_uuid, values):
    if 'project_id' in values:
        ms_context.authorize_project_context(context, values['project_id'])
    with _begin() as conn:
        _own_instance_mapping(conn, context, instance_uuid)
        row = _update_or_raise(conn, exception.InstanceMappingNotFound(uuid=instance_uuid),
                               instance_mappings, _instance_mapping_where(instance_uuid), values)
        return _with_cells(conn, [row])[0]


@_user_or_admin
@utils.writer
def instance_mapping_destroy(context, instance_uuid):
    with _begin() as conn:
        _own_instance_mapping(conn, context, instance_uuid)
        _delete_or_raise(conn, exception.InstanceMappingNotFound(uuid=instance_uuid),
                         instance_mappings, *_instance_mapping_where(instance_uuid))


# -- flavors --------------------------------------------------------------------------------------

def _with_specs(conn, rows):
    specs = {row['id']: {} for row in rows}
    stmt = sa.select(flavor_specs).where(flavor_specs.c.flavor_id.in_(list(specs)))
    for spec in conn.execute(stmt):
        specs[spec.flavor_id][spec.key] = spec.value
    for row in rows:
        row['extra_specs'] = specs[row['id']]
    return rows


def _granted(project_id):
    """Ids of the flavors ``project_id`` was given access to."""
    return sa.select(flavor_projects.c.flavor_id).where(
        flavor_projects.c.project_id == project_id)


def _flavor_visible(context):
    """Nova's flavor query: an admin's context sees every flavor, any other the public ones
    and those its project was given access to."""
    if context is None or context.is_admin:
        return []
    return [sa.or_(flavors.c.is_public == sa.true(),
                   flavors.c.id.in_(_granted(context.project_id)))]


def _flavor(context, error, *where):
    with _begin() as conn:
        row = utils.fetch(conn, flavors, *where, *_flavor_visible(context),
                          order_by=(flavors.c.id,))
        if row is None:
            raise error
        return _with_specs(conn, [row])[0]


@_admin_only
@utils.writer
def flavor_create(context, values, extra_specs=None, projects=None):
    """Create a flavor with its extra specs and the projects given access to it."""
    exists = exception.FlavorExists(name=values.get('name'))
    with utils.duplicate_as(lambda error: exists), _begin() as conn:
        row = utils.insert(conn, flavors, values)
        _set_pairs(conn, flavor_specs, flavor_specs.c.flavor_id, row['id'], extra_specs or {})
        for project_id in sorted(set(projects or ())):
            conn.execute(sa.insert(flavor_projects).values(flavor_id=row['id'],
                                                           project_id=project_id))
        return _with_specs(conn, [row])[0]


def flavor_get(context, flavor_id):
    return _flavor(context, exception.FlavorNotFound(flavor_id=flavor_id),
                   flavors.c.id == flavor_id)


def flavor_get_by_flavor_id(context, flavorid):
    return _flavor(context, exception.FlavorNotFound(flavor_id=flavorid),
                   flavors.c.flavorid == flavorid)


def flavor_get_by_name(context, name):
    return _flavor(context, exception.FlavorNotFoundByName(flavor_name=name),
                   flavors.c.name == name)


def _flavor_filters(context, filters):
    """Nova's ``FlavorList.get_all`` filters: ``min_memory_mb``, ``min_root_gb``, ``disabled``,
    ``name`` (a regular expression, searched) and ``is_public`` (True also keeps the flavors
    the context's project was given access to; None keeps all)."""
    where = []
    if 'min_memory_mb' in filters:
        where.append(flavors.c.memory_mb >= filters['min_memory_mb'])
    if 'min_root_gb' in filters:
        where.append(flavors.c.root_gb >= filters['min_root_gb'])
    if 'disabled' in filters:
        where.append(flavors.c.disabled == bool(filters['disabled']))
    if 'name' in filters:
        where.append(flavors.c.name.regexp_match(filters['name']))
    if filters.get('is_public') is not None:
        public = flavors.c.is_public == bool(filters['is_public'])
        if filters['is_public'] and context is not None and context.project_id is not None:
            public = sa.or_(public, flavors.c.id.in_(_granted(context.project_id)))
        where.append(public)
    return where


def _after(columns, marker_row, descending):
    """Rows after ``marker_row`` in the order of ``columns`` (all ascending or descending)."""
    clauses = []
    for index, column in enumerate(columns):
        equal = [other == marker_row[other.key] for other in columns[:index]]
        value = marker_row[column.key]
        clauses.append(sa.and_(*equal, column < value if descending else column > value))
    return sa.or_(*clauses)


def flavor_get_all(context, filters=None, sort_key='flavorid', sort_dir='asc', limit=None,
                   marker=None):
    """The flavors ``context`` sees that match ``filters``, sorted by ``sort_key`` then id
    (both ``sort_dir``), paged by ``limit`` and ``marker`` (the flavor id of the last flavor
    of the previous page; ``MarkerNotFound`` when the context sees no such flavor)."""
    if sort_key not in flavors.c or sort_dir not in ('asc', 'desc'):
        raise exception.Invalid(reason='cannot sort flavors by %r %r' % (sort_key, sort_dir))
    columns = [flavors.c[sort_key]] + ([flavors.c.id] if sort_key != 'id' else [])
    descending = sort_dir == 'desc'
    visible = _flavor_visible(context)
    stmt = (sa.select(flavors).where(*visible, *_flavor_filters(context, filters or {}))
            .order_by(*(c.desc() if descending else c.asc() for c in columns)))
    with _begin() as conn:
        if marker is not None:
            marker_row = utils.fetch(conn, flavors, flavors.c.flavorid == marker, *visible)
            if marker_row is None:
                raise exception.MarkerNotFound(marker=marker)
            stmt = stmt.where(_after(columns, marker_row, descending))
        if limit is not None:
            stmt = stmt.limit(limit)
        return _with_specs(conn, utils.to_dicts(conn.execute(stmt)))


@_admin_only
@utils.writer
def flavor_destroy(context, flavorid=None, flavor_id=None):
    """Delete the flavor of id ``flavor_id`` (else of flavor id ``flavorid``) with its extra
    specs and project access; returns it as it was."""
    where = flavors.c.id == flavor_id if flavor_id is not None else flavors.c.flavorid == flavorid
    with _begin() as conn:
        flavor = _fetch_or_raise(conn, exception.FlavorNotFound(
            flavor_id=flavor_id if flavor_id is not None else flavorid), flavors, where)
        flavor = _with_specs(conn, [flavor])[0]
        for child in (flavor_specs, flavor_projects):
            conn.execute(sa.delete(child).where(child.c.flavor_id == flavor['id']))
        conn.execute(sa.delete(flavors).where(flavors.c.id == flavor['id']))
        return flavor


@_admin_only
@utils.upserter
def flavor_extra_specs_update(context, flavor_id, specs):
    """Set extra specs of flavor ``flavor_id`` (None deletes a key); returns them all."""
    with _begin() as conn:
        _fetch_or_raise(conn, exception.FlavorNotFound(flavor_id=flavor_id), flavors,
                        flavors.c.id == flavor_id)
        _set_pairs(conn, flavor_specs, flavor_specs.c.flavor_id, flavor_id, specs)
        return _pairs(conn, flavor_specs, flavor_specs.c.flavor_id, flavor_id)


def flavor_get_projects(context, flavorid):
    """The projects given access to the flavor of flavor id ``flavorid``, oldest first."""
    with _begin() as conn:
        flavor = _fetch_or_raise(conn, exception.FlavorNotFound(flavor_id=flavorid), flavors,
                                 flavors.c.flavorid == flavorid)
        return _children(conn, flavor_projects, flavor_projects.c.flavor_id, [flavor['id']],
                         'project_id')[flavor['id']]


@_admin_only
@utils.writer
def flavor_add_project(context, flavor_id, project_id):
    """Give ``project_id`` access to the flavor of id ``flavor_id``."""
    exists = exception.FlavorAccessExists(flavor_id=flavor_id, project_id=project_id)
    with utils.duplicate_as(lambda error: exists), _begin() as conn:
        _fetch_or_raise(conn, exception.FlavorNotFound(flavor_id=flavor_id), flavors,
                        flavors.c.id == flavor_id)
        conn.execute(sa.insert(flavor_projects).values(flavor_id=flavor_id,
                                                       project_id=project_id))


@_admin_only
@utils.writer
def flavor_remove_project(context, flavor_id, project_id):
    """Take the access of ``project_id`` to the flavor of id ``flavor_id`` away."""
    with _begin() as conn:
        _delete_or_raise(conn, exception.FlavorAccessNotFound(flavor_id=flavor_id,
                                                              project_id=project_id),
                         flavor_projects, flavor_projects.c.flavor_id == flavor_id,
                         flavor_projects.c.project_id == project_id)


# -- aggregates -----------------------------------------------------------------------------------

def _with_hosts_and_metadata(conn, rows):
    ids = [row['id'] for row in rows]
    hosts = _children(conn, aggregate_hosts, aggregate_hosts.c.aggregate_id, ids, 'host')
    metadata = {agg_id: {} for agg_id in ids}
    stmt = sa.select(aggregate_metadata).where(aggregate_metadata.c.aggregate_id.in_(ids))
    for item in conn.execute(stmt):
        metadata[item.aggregate_id][item.key] = item.value
    for row in rows:
        row['hosts'], row['metadata'] = hosts[row['id']], metadata[row['id']]
    return rows


def _aggregate(conn, aggregate_id, *where):
    error = exception.AggregateNotFound(aggregate_id=aggregate_id)
    return _with_hosts_and_metadata(conn, [_fetch_or_raise(conn, error, aggregates, *where)])[0]


def _aggregate_by_id(conn, aggregate_id):
    return _aggregate(conn, aggregate_id, aggregates.c.id == aggregate_id)


def _aggregate_exists(values):
    return lambda error: exception.AggregateNameExists(aggregate_name=values.get('name'))


@_admin_only
@utils.writer
def aggregate_create(context, values, metadata=None):
    values = _with_uuid(values)
    with utils.duplicate_as(_aggregate_exists(values)), _begin() as conn:
        row = utils.insert(conn, aggregates, values)
        _set_pairs(conn, aggregate_metadata, aggregate_metadata.c.aggregate_id, row['id'],
                   metadata or {})
        return _aggregate_by_id(conn, row['id'])


def aggregate_get(context, aggregate_id):
    with _begin() as conn:
        return _aggregate_by_id(conn, aggregate_id)


def aggregate_get_by_uuid(context, aggregate_uuid):
    with _begin() as conn:
        return _aggregate(conn, aggregate_uuid, aggregates.c.uuid == aggregate_uuid)


def aggregate_get_all(context):
    with _begin() as conn:
        return _with_hosts_and_metadata(conn, utils.fetch_all(conn, aggregates))


def aggregate_get_by_host(context, host, key=None):
    """Aggregates ``host`` belongs to (only those with metadata ``key`` if given)."""
    where = [aggregates.c.id.in_(sa.select(aggregate_hosts.c.aggregate_id)
                                 .where(aggregate_hosts.c.host == host))]
    if key is not None:
        where.append(aggregates.c.id.in_(sa.select(aggregate_metadata.c.aggregate_id)
                                         .where(aggregate_metadata.c.key == key)))
    with _begin() as conn:
        return _with_hosts_and_metadata(conn, utils.fetch_all(conn, aggregates, *where))


def _aggregates_by_metadata(where):
    """The aggregates with a metadata item matching ``where``; as Nova's query (a join on the
    metadata that also fills it), each one's ``metadata`` holds those items only, its
    ``hosts`` all its hosts."""
    matching = {}
    stmt = sa.select(aggregate_metadata).where(*where).order_by(aggregate_metadata.c.id)
    with _begin() as conn:
        for item in conn.execute(stmt):
            matching.setdefault(item.aggregate_id, {})[item.key] = item.value
        rows = _with_hosts_and_metadata(conn, utils.fetch_all(
            conn, aggregates, aggregates.c.id.in_(list(matching))))
    for row in rows:
        row['metadata'] = matching[row['id']]
    return rows


def aggregate_get_by_metadata(context, key=None, value=None):
    """Aggregates with a metadata item of ``key`` (any value), of ``value`` (any key) or both
    (see ``_aggregates_by_metadata``)."""
    if key is None and value is None:
        raise ValueError('aggregate_get_by_metadata needs a key, a value or both')
    where = [] if key is None else [aggregate_metadata.c.key == key]
    if value is not None:
        where.append(aggregate_metadata.c.value == value)
    return _aggregates_by_metadata(where)


def aggregate_get_non_matching_by_metadata_keys(context, ignored_keys, key_prefix, value):
    """Aggregates with an item of ``value`` whose key starts with ``key_prefix`` and is not
    one of ``ignored_keys`` (see ``_aggregates_by_metadata``)."""
    if not key_prefix:
        raise ValueError('key_prefix mandatory field.')
    where = [aggregate_metadata.c.value == value,
             aggregate_metadata.c.key.startswith(key_prefix, autoescape=True)]
    if ignored_keys:
        where.append(aggregate_metadata.c.key.not_in(list(ignored_keys)))
    return _aggregates_by_metadata(where)


@_admin_only
@utils.writer
def aggregate_update(context, aggregate_id, values):
    with utils.duplicate_as(_aggregate_exists(values)), _begin() as conn:
        _update_or_raise(conn, exception.AggregateNotFound(aggregate_id=aggregate_id),
                         aggregates, [aggregates.c.id == aggregate_id], values)
        return _aggregate_by_id(conn, aggregate_id)


@_admin_only
@utils.upserter
def aggregate_metadata_update(context, aggregate_id, metadata):
    """Set metadata keys of an aggregate (None deletes a key); returns all its metadata."""
    with _begin() as conn:
        _aggregate_by_id(conn, aggregate_id)
        _set_pairs(conn, aggregate_metadata, aggregate_metadata.c.aggregate_id, aggregate_id,
                   metadata)
        return _pairs(conn, aggregate_metadata, aggregate_metadata.c.aggregate_id, aggregate_id)


@_admin_only
@utils.writer
def aggregate_host_add(context, aggregate_id, host):
    """Add ``host`` to an aggregate; returns the aggregate."""
    exists = exception.AggregateHostExists(aggregate_id=aggregate_id, host=host)
    with utils.duplicate_as(lambda error: exists), _begin() as conn:
        _aggregate_by_id(conn, aggregate_id)
        conn.execute(sa.insert(aggregate_hosts).values(aggregate_id=aggregate_id, host=host))
        return _aggregate_by_id(conn, aggregate_id)


@_admin_only
@utils.writer
def aggregate_host_delete(context, aggregate_id, host):
    with _begin() as conn:
        _delete_or_raise(conn, exception.AggregateHostNotFound(aggregate_id=aggregate_id,
                                                               host=host),
                         aggregate_hosts, aggregate_hosts.c.aggregate_id == aggregate_id,
                         aggregate_hosts.c.host == host)


@_admin_only
@utils.writer
def aggregate_destroy(context, aggregate_id):
    with _begin() as conn:
        _aggregate_by_id(conn, aggregate_id)
        for child in (aggregate_hosts, aggregate_metadata):
            conn.execute(sa.delete(child).where(child.c.aggregate_id == aggregate_id))
        conn.execute(sa.delete(aggregates).where(aggregates.c.id == aggregate_id))


# -- instance groups ------------------------------------------------------------------------------

def _with_members(conn, rows):
    found = _children(conn, group_members, group_members.c.group_id, [row['id'] for row in rows],
                      'instance_uuid')
    for row in rows:
        row['members'] = found[row['id']]
    return rows


def _group(conn, context, group_uuid):
    """The group (with its members) in ``context``'s scope, else InstanceGroupNotFound."""
    error = exception.InstanceGroupNotFound(group_uuid=group_uuid)
    row = _own_or_raise(conn, context, error, groups, [groups.c.uuid == group_uuid],
                        _project_only(context, groups))
    return _with_members(conn, [row])[0]


def _add_members(conn, group_id, instance_uuids):
    present = set(_children(conn, group_members, group_members.c.group_id, [group_id],
                            'instance_uuid')[group_id])
    for instance_uuid in dict.fromkeys(instance_uuids):
        if instance_uuid not in present:
            conn.execute(sa.insert(group_members).values(group_id=group_id,
                                                   instance_uuid=instance_uuid))


@_user_or_admin
@utils.writer
def instance_group_create(context, values, members=None):
    ms_context.authorize_project_context(context, values.get('project_id'))
    values = _with_uuid(values)
    exists = exception.InstanceGroupExists(group_uuid=values['uuid'])
    with utils.duplicate_as(lambda error: exists), _begin() as conn:
        row = utils.insert(conn, groups, values)
        _add_members(conn, row['id'], members or [])
        return _group(conn, context, row['uuid'])


@_user_or_admin
def instance_group_get(context, group_uuid):
    with _begin() as conn:
        return _group(conn, context, group_uuid)


@_user_or_admin
def instance_group_get_by_instance(context, instance_uuid):
    """The group ``instance_uuid`` is a member of (``InstanceGroupNotFound`` if none, or if
    it is another project's than a user context's)."""
    member_of = (sa.select(group_members.c.group_id)
                 .where(group_members.c.instance_uuid == instance_uuid))
    with _begin() as conn:
        row = _own_or_raise(conn, context, exception.InstanceGroupNotFound(
            group_uuid=instance_uuid), groups, [groups.c.id.in_(member_of)],
            _project_only(context, groups))
        return _with_members(conn, [row])[0]


@_user_or_admin
def instance_group_get_by_name(context, name):
    """The group of that name in ``context``'s project (Nova's ``get_by_name``); names are
    not unique across projects, and the oldest wins within one."""
    error = exception.InstanceGroupNotFound(group_uuid=name)
    with _begin() as conn:
        row = utils.fetch(conn, groups, groups.c.name == name,
                          groups.c.project_id == context.project_id, order_by=(groups.c.id,))
        if row is None:
            raise error
        return _with_members(conn, [row])[0]


@_user_or_admin
def instance_group_get_all(context, project_id=None):
    """Every group (of ``project_id`` when given); a user context sees its project's only."""
    where = [] if project_id is None else [groups.c.project_id == project_id]
    where += _project_only(context, groups)
    with _begin() as conn:
        return _with_members(conn, utils.fetch_all(conn, groups, *where))


@_user_or_admin
@utils.upserter
def instance_group_members_add(context, group_uuid, instance_uuids):
    """Add the instances not yet members; returns the group."""
    with _begin() as conn:
        group = _group(conn, context, group_uuid)
        _add_members(conn, group['id'], instance_uuids)
        return _group(conn, context, group_uuid)


@_user_or_admin
@utils.writer
def instance_group_update(context, group_uuid, values):
    if 'project_id' in values:
        ms_context.authorize_project_context(context, values['project_id'])
    with _begin() as conn:
        _group(conn, context, group_uuid)
        _update_or_raise(conn, exception.InstanceGroupNotFound(group_uuid=group_uuid), groups,
                         [groups.c.uuid == group_uuid], values)
        return _group(conn, context, group_uuid)


@_user_or_admin
@utils.writer
def instance_group_destroy(context, group_uuid):
    with _begin() as conn:
        group = _group(conn, context, group_uuid)
        conn.execute(sa.delete(group_members).where(group_members.c.group_id == group['id']))
        conn.execute(sa.delete(groups).where(groups.c.id == group['id']))


# -- request specs --------------------------------------------------------------------------------

def _spec_where(instance_uuid):
    return [request_specs.c.instance_uuid == instance_uuid]


def _own_spec(conn, context, instance_uuid):
    return _own_or_raise(conn, context,
                         exception.RequestSpecNotFound(instance_uuid=instance_uuid),
                         request_specs, _spec_where(instance_uuid), _spec_project_only(context))


@_user_or_admin
@utils.writer
def request_spec_create(context, instance_uuid, spec):
    exists = exception.RequestSpecExists(instance_uuid=instance_uuid)
    with utils.duplicate_as(lambda error: exists), _begin() as conn:
        return utils.insert(conn, request_specs, {'instance_uuid': instance_uuid, 'spec': spec})


@_user_or_admin
def request_spec_get_by_instance_uuid(context, instance_uuid):
    with _begin() as conn:
        return _own_spec(conn, context, instance_uuid)


@_user_or_admin
def request_spec_get_by_instance_uuids(context, instance_uuids):
    """The specs of those of ``instance_uuids`` that have one (and ``context`` may see)."""
    if not instance_uuids:
        return []
    with _begin() as conn:
        return utils.fetch_all(conn, request_specs,
                               request_specs.c.instance_uuid.in_(list(instance_uuids)),
                               *_spec_project_only(context))


@_user_or_admin
@utils.writer
def request_spec_update(context, instance_uuid, spec):
    with _begin() as conn:
        _own_spec(conn, context, instance_uuid)
        return _update_or_raise(
            conn, exception.RequestSpecNotFound(instance_uuid=instance_uuid), request_specs,
            _spec_where(instance_uuid), {'spec': spec})


@_user_or_admin
@utils.writer
def request_spec_destroy(context, instance_uuid):
    with _begin() as conn:
        _own_spec(conn, context, instance_uuid)
        _delete_or_raise(conn, exception.RequestSpecNotFound(instance_uuid=instance_uuid),
                         request_specs, *_spec_where(instance_uuid))


# -- build requests -------------------------------------------------------------------------------

def _build_request_where(instance_uuid):
    return [build_requests.c.instance_uuid == instance_uuid]


def _own_build_request(conn, context, instance_uuid):
    return _own_or_raise(conn, context, exception.BuildRequestNotFound(uuid=instance_uuid),
                         build_requests, _build_request_where(instance_uuid),
                         _project_only(context, build_requests))


@_user_or_admin
@utils.writer
def build_request_create(context, values):
    ms_context.authorize_project_context(context, values.get('project_id'))
    exists = exception.BuildRequestAlreadyExists(uuid=values.get('instance_uuid'))
    with utils.duplicate_as(lambda error: exists), _begin() as conn:
        return utils.insert(conn, build_requests, values)


@_user_or_admin
def build_request_get_all(context):
    with _begin() as conn:
        return utils.fetch_all(conn, build_requests, *_project_only(context, build_requests))


@_user_or_admin
def build_request_get_by_instance_uuid(context, instance_uuid):
    with _begin() as conn:
        return _own_build_request(conn, context, instance_uuid)


@_user_or_admin
def build_request_exists(context, instance_uuid):
    """Whether the build request of ``instance_uuid`` exists (for a user context: in its
    project). One indexed read of the row's id; the instance it holds is not read."""
    with _begin() as conn:
        return utils.exists(conn, build_requests, *_build_request_where(instance_uuid),
                            *_project_only(context, build_requests))


@_user_or_admin
@utils.writer
def build_request_update(context, instance_uuid, values):
    """Update the build request of ``instance_uuid``; returns its row."""
    with _begin() as conn:
        _own_build_request(conn, context, instance_uuid)
        return _update_or_raise(conn, exception.BuildRequestNotFound(uuid=instance_uuid),
                                build_requests, _build_request_where(instance_uuid), values)


@_user_or_admin
@utils.writer
def build_request_destroy(context, instance_uuid):
    with _begin() as conn:
        _own_build_request(conn, context, instance_uuid)
        _delete_or_raise(conn, exception.BuildRequestNotFound(uuid=instance_uuid),
                         build_requests, *_build_request_where(instance_uuid))


#: What :func:`build_request_take` found.
TAKEN, PLACED, GONE = 'taken', 'placed', 'gone'


@_user_or_admin
@utils.writer
def build_request_take(context, instance_uuid, cell_id):
    """Take the build request of an instance just created in cell ``cell_id``, in one
    transaction: point its unplaced instance mapping at the cell (:func:`_claim_cell`),
    then delete the build request (Nova's conductor saves the mapping and destroys the build
    request: two transactions, and a read of the build request). Rows of another project
    than a user context's are taken as absent, so that the answer does not tell whether
    they exist.

    :param cell_id: None when there are no cells (no mapping to point)
    :returns: TAKEN; PLACED when the mapping already named a cell (another delivery placed
        the instance: nothing changed); GONE when there is no build request (the user
        deleted the instance meanwhile; the mapping, if any, is taken all the same)
    """
    with _begin() as conn:
        # No mapping at all (None): nothing to take; the build request decides.
        if cell_id is not None and _claim_cell(conn, context, instance_uuid, cell_id) is False:
            return PLACED
        deleted = conn.execute(sa.delete(build_requests).where(
            *_build_request_where(instance_uuid),
            *_project_only(context, build_requests))).rowcount
        return TAKEN if deleted else GONE


# -- the rows of one create -----------------------------------------------------------------------

@_user_or_admin
@utils.writer
def build_batch_create(context, specs, requests, mappings, group_uuid=None):
    """Write the rows of one create in one transaction: all of them, or none.

    :param specs: request spec values (``instance_uuid``, ``spec``), one per instance
    :param requests: build request values, one per instance
    :param mappings: instance mapping values, one per instance
    :param group_uuid: the server group the instances join, or None
    :returns: ``(build request rows, request spec rows)``, in the order given, with what the
        database set (ids, times) and the instance uuid and project: not the JSON the caller
        wrote from its objects

    Nova's ``_provision_instances`` writes them row by row and deletes what it wrote when a
    later write fails; that deletion cannot run when the database connection is what failed
    (a create cut 1 s in left hundreds of build requests no conductor would ever see). A
    transaction holds then too: the database rolls back what it was not told to commit.
    """
    for values in list(requests) + list(mappings):
        ms_context.authorize_project_context(context, values.get('project_id'))
    uuids = [values['instance_uuid'] for values in requests]
    exists = exception.BuildRequestAlreadyExists(uuid=uuids[0] if uuids else None)
    with utils.duplicate_as(lambda error: exists), _begin() as conn:
        written = {}
        for table, rows in ((request_specs, specs), (build_requests, requests),
                            (instance_mappings, mappings)):
            if rows:
                written[table] = _insert_rows(conn, table, list(rows),
                                              _WRITTEN.get(table, ()))
        if group_uuid is not None:
            _add_members(conn, _group(conn, context, group_uuid)['id'], uuids)
        return tuple(written.get(table) or _by_instance(conn, table, uuids)
                     for table in (build_requests, request_specs))


#: The columns of a create's rows its objects take back (``build_batch_create``).
_WRITTEN = {table: [table.c[name] for name in ('id', 'instance_uuid', 'project_id',
                                               'created_at', 'updated_at') if name in table.c]
            for table in (build_requests, request_specs)}


def _insert_rows(conn, table, rows, columns):
    """Insert ``rows``; with ``columns``, return them for each row in the order given where
    the backend returns what a many-row INSERT wrote (one statement: PostgreSQL, SQLite,
    MariaDB), else None."""
    if columns and conn.dialect.insert_executemany_returning_sort_by_parameter_order:
        return utils.to_dicts(conn.execute(sa.insert(table).returning(
            *columns, sort_by_parameter_order=True), rows))
    conn.execute(sa.insert(table), rows)
    return None


def _by_instance(conn, table, uuids):
    """The :data:`_WRITTEN` columns of the rows of ``table`` of these instances, in the
    order of ``uuids``."""
    found = {}
    for start in range(0, len(uuids), utils.IDS_PER_QUERY):
        chunk = uuids[start:start + utils.IDS_PER_QUERY]
        for row in conn.execute(sa.select(*_WRITTEN[table]).where(
                table.c.instance_uuid.in_(chunk))):
            found[row.instance_uuid] = dict(row._mapping)
    return [found[uuid] for uuid in uuids]


class _Taken(Exception):
    """Rolls back a withdrawal: a conductor took one of the build requests."""


@_user_or_admin
@utils.writer
def build_batch_withdraw(context, instance_uuids):
    """Delete what :func:`build_batch_create` wrote for these instances, in one transaction,
    unless a conductor took one of their build requests already: then nothing is deleted
    and False is returned (the message got through; the build stands)."""
    try:
        with _begin() as conn:
            for start in range(0, len(instance_uuids), utils.IDS_PER_QUERY):
                chunk = list(instance_uuids[start:start + utils.IDS_PER_QUERY])
                deleted = conn.execute(sa.delete(build_requests).where(
                    build_requests.c.instance_uuid.in_(chunk),
                    *_project_only(context, build_requests))).rowcount
                if deleted != len(set(chunk)):
                    raise _Taken()
                for table in (instance_mappings, request_specs):
                    conn.execute(sa.delete(table).where(table.c.instance_uuid.in_(chunk)))
                conn.execute(sa.delete(group_members).where(
                    group_members.c.instance_uuid.in_(chunk)))
    except _Taken:
        return False
    return True
