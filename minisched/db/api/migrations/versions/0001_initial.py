"""Initial API database schema: cell/host/instance mappings, flavors, aggregates, groups, specs.

Every table is spelled out here rather than derived from the models, so that later revisions
stack on a fixed starting point.

Revision ID: 3b7e5d0a6f02
Revises:
Create Date: 2025-01-01 00:00:00
"""
import sqlalchemy as sa
from alembic import op

from minisched.db.utils import DateTime, MediumText

revision = '3b7e5d0a6f02'
down_revision = None
branch_labels = None
depends_on = None

S36 = sa.String(36)
S255 = sa.String(255)


def _create(name, *columns):
    op.create_table(
        name,
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('created_at', DateTime),
        sa.Column('updated_at', DateTime),
        *columns,
        mysql_engine='InnoDB', mysql_charset='utf8')


def _fk(column, target, nullable=True):
    return sa.Column(column, sa.Integer, sa.ForeignKey(target), nullable=nullable)


def upgrade():
    _create(
        'cell_mappings',
        sa.Column('uuid', S36, nullable=False),
        sa.Column('name', S255),
        sa.Column('transport_url', sa.Text),
        sa.Column('database_connection', sa.Text),
        sa.Column('disabled', sa.Boolean),
        sa.UniqueConstraint('uuid', name='uniq_cell_mappings0uuid'))

    _create(
        'host_mappings',
        _fk('cell_id', 'cell_mappings.id', nullable=False),
        sa.Column('host', S255, nullable=False),
        sa.UniqueConstraint('host', name='uniq_host_mappings0host'))

    _create(
        'instance_mappings',
        sa.Column('instance_uuid', S36, nullable=False),
        _fk('cell_id', 'cell_mappings.id'),
        sa.Column('project_id', S255),
        sa.Column('user_id', S255),
        sa.Column('queued_for_delete', sa.Boolean),
        sa.UniqueConstraint('instance_uuid', name='uniq_instance_mappings0instance_uuid'))

    _create(
        'flavors',
        sa.Column('flavorid', S255, nullable=False),
        sa.Column('name', S255, nullable=False),
        sa.Column('memory_mb', sa.Integer, nullable=False),
        sa.Column('vcpus', sa.Integer, nullable=False),
        sa.Column('root_gb', sa.Integer),
        sa.Column('ephemeral_gb', sa.Integer),
        sa.Column('swap', sa.Integer, nullable=False),
        sa.Column('rxtx_factor', sa.Float),
        sa.Column('vcpu_weight', sa.Integer),
        sa.Column('disabled', sa.Boolean),
        sa.Column('is_public', sa.Boolean),
        sa.Column('description', sa.Text),
        sa.UniqueConstraint('flavorid', name='uniq_flavors0flavorid'),
        sa.UniqueConstraint('name', name='uniq_flavors0name'))

    _create(
        'flavor_extra_specs',
        _fk('flavor_id', 'flavors.id', nullable=False),
        sa.Column('key', S255, nullable=False),
        sa.Column('value', S255),
        sa.UniqueConstraint('flavor_id', 'key', name='uniq_flavor_extra_specs0flavor_id0key'))

    _create(
        'aggregates',
        sa.Column('uuid', S36, nullable=False),
        sa.Column('name', S255),
        sa.UniqueConstraint('uuid', name='uniq_aggregates0uuid'),
        sa.UniqueConstraint('name', name='uniq_aggregates0name'))

    _create(
        'aggregate_hosts',
        _fk('aggregate_id', 'aggregates.id', nullable=False),
        sa.Column('host', S255),
        sa.UniqueConstraint('host', 'aggregate_id', name='uniq_aggregate_hosts0host0aggregate_id'))

    _create(
        'aggregate_metadata',
        _fk('aggregate_id', 'aggregates.id', nullable=False),
        sa.Column('key', S255, nullable=False),
        sa.Column('value', S255),
        sa.UniqueConstraint('aggregate_id', 'key', name='uniq_aggregate_metadata0aggregate_id0key'))

    _create(
        'instance_groups',
        sa.Column('uuid', S36, nullable=False),
        sa.Column('name', S255),
        sa.Column('user_id', S255),
        sa.Column('project_id', S255),
        sa.Column('policy', S255),
        sa.Column('rules', sa.Text),
        sa.UniqueConstraint('uuid', name='uniq_instance_groups0uuid'))

    _create(
        'instance_group_member',
        _fk('group_id', 'instance_groups.id', nullable=False),
        sa.Column('instance_uuid', S36),
        sa.UniqueConstraint('group_id', 'instance_uuid',
                            name='uniq_instance_group_member0group_id0instance_uuid'))

    _create(
        'request_specs',
        sa.Column('instance_uuid', S36, nullable=False),
        sa.Column('spec', MediumText, nullable=False),
        sa.UniqueConstraint('instance_uuid', name='uniq_request_specs0instance_uuid'))

    _create(
        'build_requests',
        sa.Column('instance_uuid', S36, nullable=False),
        sa.Column('project_id', S255),
        sa.Column('instance', MediumText),
        sa.UniqueConstraint('instance_uuid', name='uniq_build_requests0instance_uuid'))
