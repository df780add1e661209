"""Initial cell database schema: services, compute nodes, instances, faults, actions, events.

Every table is spelled out here rather than derived from the models, so that later revisions
stack on a fixed starting point.

Revision ID: 8c1f4a2d9e01
Revises:
Create Date: 2025-01-01 00:00:00
"""
import sqlalchemy as sa
from alembic import op

from minisched.db.utils import DateTime, MediumText

revision = '8c1f4a2d9e01'
down_revision = None
branch_labels = None
depends_on = None

S36 = sa.String(36)
S255 = sa.String(255)


def _create(name, *columns, soft_delete=False):
    deleted = [sa.Column('deleted_at', DateTime), sa.Column('deleted', sa.Integer)]
    op.create_table(
        name,
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('created_at', DateTime),
        sa.Column('updated_at', DateTime),
        *columns,
        *(deleted if soft_delete else []),
        mysql_engine='InnoDB', mysql_charset='utf8')


def upgrade():
    _create(
        'services',
        sa.Column('uuid', S36),
        sa.Column('host', S255),
        sa.Column('binary', S255),
        sa.Column('topic', S255),
        sa.Column('report_count', sa.Integer, nullable=False),
        sa.Column('disabled', sa.Boolean),
        sa.Column('disabled_reason', S255),
        sa.Column('last_seen_up', DateTime),
        sa.Column('forced_down', sa.Boolean),
        sa.Column('version', sa.Integer),
        sa.UniqueConstraint('uuid', name='uniq_services0uuid'),
        sa.UniqueConstraint('host', 'binary', 'deleted',
                            name='uniq_services0host0binary0deleted'),
        sa.UniqueConstraint('host', 'topic', 'deleted',
                            name='uniq_services0host0topic0deleted'),
        soft_delete=True)
    op.create_index('services_updated_at_idx', 'services', ['updated_at'])

    _create(
        'compute_nodes',
        sa.Column('uuid', S36),
        sa.Column('service_id', sa.Integer),
        sa.Column('host', S255),
        sa.Column('vcpus', sa.Integer, nullable=False),
        sa.Column('memory_mb', sa.Integer, nullable=False),
        sa.Column('local_gb', sa.Integer, nullable=False),
        sa.Column('vcpus_used', sa.Integer, nullable=False),
        sa.Column('memory_mb_used', sa.Integer, nullable=False),
        sa.Column('local_gb_used', sa.Integer, nullable=False),
        sa.Column('hypervisor_type', S255),
        sa.Column('hypervisor_version', sa.Integer),
        sa.Column('hypervisor_hostname', S255),
        sa.Column('free_ram_mb', sa.Integer),
        sa.Column('free_disk_gb', sa.Integer),
        sa.Column('current_workload', sa.Integer),
        sa.Column('running_vms', sa.Integer),
        sa.Column('cpu_info', sa.Text),
        sa.Column('disk_available_least', sa.Integer),
        sa.Column('host_ip', sa.String(39)),
        sa.Column('supported_instances', sa.Text),
        sa.Column('metrics', sa.Text),
        sa.Column('pci_stats', sa.Text),
        sa.Column('extra_resources', sa.Text),
        sa.Column('stats', sa.Text),
        sa.Column('numa_topology', sa.Text),
        sa.Column('ram_allocation_ratio', sa.Float),
        sa.Column('cpu_allocation_ratio', sa.Float),
        sa.Column('disk_allocation_ratio', sa.Float),
        sa.Column('mapped', sa.Integer),
        sa.UniqueConstraint('uuid', 'deleted', name='uniq_compute_nodes0uuid0deleted'),
        sa.UniqueConstraint('host', 'hypervisor_hostname', 'deleted',
                            name='uniq_compute_nodes0host0hypervisor_hostname0deleted'),
        soft_delete=True)
    op.create_index('compute_nodes_updated_at_idx', 'compute_nodes', ['updated_at'])
    op.create_index('compute_nodes_host_idx', 'compute_nodes', ['host'])

    _create(
        'instances',
        sa.Column('uuid', S36, nullable=False),
        sa.Column('host', S255),
        sa.Column('node', S255),
        sa.Column('launched_on', S255),
        sa.Column('vm_state', S255),
        sa.Column('task_state', S255),
        sa.Column('power_state', sa.Integer),
        sa.Column('project_id', S255),
        sa.Column('user_id', S255),
        sa.Column('availability_zone', S255),
        sa.Column('image_ref', S255),
        sa.Column('os_type', S255),
        sa.Column('hostname', S255),
        sa.Column('display_name', S255),
        sa.Column('memory_mb', sa.Integer),
        sa.Column('vcpus', sa.Integer),
        sa.Column('root_gb', sa.Integer),
        sa.Column('ephemeral_gb', sa.Integer),
        sa.Column('instance_type_id', sa.Integer),
        sa.Column('flavor', MediumText),
        sa.Column('system_metadata', MediumText),
        sa.Column('instance_metadata', MediumText),
        sa.Column('launched_at', DateTime),
        sa.Column('terminated_at', DateTime),
        sa.Column('scheduled_at', DateTime),
        sa.Column('locked', sa.Boolean),
        sa.Column('cleaned', sa.Integer),
        sa.UniqueConstraint('uuid', name='uniq_instances0uuid'),
        soft_delete=True)
    op.create_index('instances_host_idx', 'instances', ['host'])
    op.create_index('instances_host_node_idx', 'instances', ['host', 'node'])
    op.create_index('instances_vm_state_idx', 'instances', ['vm_state'])

    _create(
        'instance_faults',
        sa.Column('instance_uuid', S36),
        sa.Column('code', sa.Integer),
        sa.Column('message', S255),
        sa.Column('details', sa.Text),
        sa.Column('host', S255))
    op.create_index('instance_faults_instance_uuid_idx', 'instance_faults', ['instance_uuid'])

    _create(
        'instance_actions',
        sa.Column('action', S255),
        sa.Column('instance_uuid', S36),
        sa.Column('request_id', S255),
        sa.Column('user_id', S255),
        sa.Column('project_id', S255),
        sa.Column('start_time', DateTime),
        sa.Column('finish_time', DateTime),
        sa.Column('message', S255))
    op.create_index('instance_actions_instance_uuid_idx', 'instance_actions', ['instance_uuid'])

    _create(
        'instance_actions_events',
        sa.Column('event', S255),
        sa.Column('action_id', sa.Integer, sa.ForeignKey('instance_actions.id')),
        sa.Column('start_time', DateTime),
        sa.Column('finish_time', DateTime),
        sa.Column('result', S255),
        sa.Column('traceback', sa.Text),
        sa.Column('host', S255),
        sa.Column('details', sa.Text))
