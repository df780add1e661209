"""Tables of the API database (SQLAlchemy Core), as the API functions query them.

One API database per deployment: where each cell, host and instance lives, flavors (with the
projects given access to private ones), aggregates, instance groups, request specs and build
requests. Rows are hard-deleted. The schema is created by the alembic migrations next door;
tests check that migrating to head yields these tables.
"""
import sqlalchemy as sa

from minisched.db import utils

metadata = sa.MetaData()

S255 = sa.String(255)
S36 = sa.String(36)


def _table(name, *columns):
    return utils.table(metadata, name, *columns)


def _fk(column, target, nullable=True):
    return sa.Column(column, sa.Integer, sa.ForeignKey(target), nullable=nullable)


cell_mappings = _table(
    'cell_mappings',
    sa.Column('uuid', S36, nullable=False),
    sa.Column('name', S255),
    sa.Column('transport_url', sa.Text),
    sa.Column('database_connection', sa.Text),
    sa.Column('disabled', sa.Boolean, default=False),
    utils.unique('cell_mappings', 'uuid'),
)

host_mappings = _table(
    'host_mappings',
    _fk('cell_id', 'cell_mappings.id', nullable=False),
    sa.Column('host', S255, nullable=False),
    utils.unique('host_mappings', 'host'),
    sa.Index('host_mappings_updated_at_idx', 'updated_at'),
    sa.Index('host_mappings_created_at_idx', 'created_at'),
)

instance_mappings = _table(
    'instance_mappings',
    sa.Column('instance_uuid', S36, nullable=False),
    _fk('cell_id', 'cell_mappings.id'),
    sa.Column('project_id', S255),
    sa.Column('user_id', S255),
    sa.Column('queued_for_delete', sa.Boolean, default=False),
    utils.unique('instance_mappings', 'instance_uuid'),
)

flavors = _table(
    'flavors',
    sa.Column('flavorid', S255, nullable=False),
    sa.Column('name', S255, nullable=False),
    sa.Column('memory_mb', sa.Integer, nullable=False),
    sa.Column('vcpus', sa.Integer, nullable=False),
    sa.Column('root_gb', sa.Integer),
    sa.Column('ephemeral_gb', sa.Integer),
    sa.Column('swap', sa.Integer, nullable=False, default=0),
    sa.Column('rxtx_factor', sa.Float, default=1.0),
    sa.Column('vcpu_weight', sa.Integer),
    sa.Column('disabled', sa.Boolean, default=False),
    sa.Column('is_public', sa.Boolean, default=True),
    sa.Column('description', sa.Text),
    utils.unique('flavors', 'flavorid'),
    utils.unique('flavors', 'name'),
)

flavor_extra_specs = _table(
    'flavor_extra_specs',
    _fk('flavor_id', 'flavors.id', nullable=False),
    sa.Column('key', S255, nullable=False),
    sa.Column('value', S255),
    utils.unique('flavor_extra_specs', 'flavor_id', 'key'),
)

flavor_projects = _table(
    'flavor_projects',
    _fk('flavor_id', 'flavors.id', nullable=False),
    sa.Column('project_id', S255, nullable=False),
    utils.unique('flavor_projects', 'flavor_id', 'project_id'),
)

aggregates = _table(
    'aggregates',
    sa.Column('uuid', S36, nullable=False),
    sa.Column('name', S255),
    utils.unique('aggregates', 'uuid'),
    utils.unique('aggregates', 'name'),
)

aggregate_hosts = _table(
    'aggregate_hosts',
    _fk('aggregate_id', 'aggregates.id', nullable=False),
    sa.Column('host', S255),
    utils.unique('aggregate_hosts', 'host', 'aggregate_id'),
)

aggregate_metadata = _table(
    'aggregate_metadata',
    _fk('aggregate_id', 'aggregates.id', nullable=False),
    sa.Column('key', S255, nullable=False),
    sa.Column('value', S255),
    utils.unique('aggregate_metadata', 'aggregate_id', 'key'),
)

instance_groups = _table(
    'instance_groups',
    sa.Column('uuid', S36, nullable=False),
    sa.Column('name', S255),
    sa.Column('user_id', S255),
    sa.Column('project_id', S255),
    sa.Column('policy', S255),
    sa.Column('rules', sa.Text),
    utils.unique('instance_groups', 'uuid'),
)

instance_group_member = _table(
    'instance_group_member',
    _fk('group_id', 'instance_groups.id', nullable=False),
    sa.Column('instance_uuid', S36),
    utils.unique('instance_group_member', 'group_id', 'instance_uuid'),
)

request_specs = _table(
    'request_specs',
    sa.Column('instance_uuid', S36, nullable=False),
    sa.Column('spec', utils.MediumText, nullable=False),
    utils.unique('request_specs', 'instance_uuid'),
)

build_requests = _table(
    'build_requests',
    sa.Column('instance_uuid', S36, nullable=False),
    sa.Column('project_id', S255),
    sa.Column('instance', utils.MediumText),
    sa.Column('block_device_mappings', utils.MediumText),
    sa.Column('tags', sa.Text),
    utils.unique('build_requests', 'instance_uuid'),
)
