"""Tables of a cell database (SQLAlchemy Core), as the API functions query them.

The schema itself is created by the alembic migrations next door; tests check that migrating
to head yields exactly these tables. ``services``, ``compute_nodes`` and ``instances`` are
soft-deleted: ``deleted`` is 0 while the row lives and its own ``id`` afterwards, which is why
their unique constraints include ``deleted``. JSON-ish columns are Text, stored untouched.
"""
import sqlalchemy as sa

from minisched.db import utils

metadata = sa.MetaData()

S255 = sa.String(255)
S36 = sa.String(36)


def _table(name, *columns, soft_delete=False):
    return utils.table(metadata, name, *columns, soft_delete=soft_delete)


services = _table(
    'services',
    sa.Column('uuid', S36),
    sa.Column('host', S255),
    sa.Column('binary', S255),
    sa.Column('topic', S255),
    sa.Column('report_count', sa.Integer, nullable=False, default=0),
    sa.Column('disabled', sa.Boolean, default=False),
    sa.Column('disabled_reason', S255),
    sa.Column('last_seen_up', utils.DateTime),
    sa.Column('forced_down', sa.Boolean, default=False),
    sa.Column('version', sa.Integer, default=0),
    utils.unique('services', 'uuid'),
    utils.unique('services', 'host', 'binary', 'deleted'),
    utils.unique('services', 'host', 'topic', 'deleted'),
    sa.Index('services_updated_at_idx', 'updated_at'),
    sa.Index('services_created_at_idx', 'created_at'),
    soft_delete=True,
)

compute_nodes = _table(
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
    sa.Column('mapped', sa.Integer, default=0),
    utils.unique('compute_nodes', 'uuid', 'deleted'),
    utils.unique('compute_nodes', 'host', 'hypervisor_hostname', 'deleted'),
    sa.Index('compute_nodes_updated_at_idx', 'updated_at'),
    sa.Index('compute_nodes_created_at_idx', 'created_at'),
    sa.Index('compute_nodes_host_idx', 'host'),
    soft_delete=True,
)

instances = _table(
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
    sa.Column('flavor', utils.MediumText),
    sa.Column('system_metadata', utils.MediumText),
    sa.Column('instance_metadata', utils.MediumText),
    sa.Column('launched_at', utils.DateTime),
    sa.Column('terminated_at', utils.DateTime),
    sa.Column('scheduled_at', utils.DateTime),
    sa.Column('locked', sa.Boolean, default=False),
    sa.Column('cleaned', sa.Integer, default=0),
    sa.Column('numa_topology', utils.MediumText),
    sa.Column('pci_requests', utils.MediumText),
    sa.Column('pci_devices', utils.MediumText),
    sa.Column('access_ip_v4', sa.String(39)),
    sa.Column('access_ip_v6', sa.String(39)),
    sa.Column('architecture', S255),
    sa.Column('auto_disk_config', sa.Boolean),
    sa.Column('cell_name', S255),
    sa.Column('compute_id', sa.BigInteger),
    sa.Column('config_drive', S255),
    sa.Column('default_ephemeral_device', S255),
    sa.Column('default_swap_device', S255),
    sa.Column('disable_terminate', sa.Boolean),
    sa.Column('display_description', sa.Text),
    sa.Column('ephemeral_key_uuid', S36),
    sa.Column('hidden', sa.Boolean),
    sa.Column('kernel_id', S255),
    sa.Column('key_data', sa.Text),
    sa.Column('key_name', S255),
    sa.Column('launch_index', sa.Integer),
    sa.Column('locked_by', S255),
    sa.Column('progress', sa.Integer),
    sa.Column('ramdisk_id', S255),
    sa.Column('reservation_id', S255),
    sa.Column('root_device_name', S255),
    sa.Column('shutdown_terminate', sa.Boolean),
    sa.Column('user_data', utils.MediumText),
    sa.Column('vm_mode', S255),
    # The JSON of the objects Nova keeps in instance_extra and tables of their own.
    *[sa.Column(name, utils.MediumText) for name in (
        'info_cache', 'security_groups', 'keypairs', 'tags', 'trusted_certs', 'vcpu_model',
        'device_metadata', 'migration_context', 'resources', 'old_flavor', 'new_flavor')],
    utils.unique('instances', 'uuid'),
    sa.Index('instances_host_idx', 'host'),
    sa.Index('instances_host_node_idx', 'host', 'node'),
    sa.Index('instances_vm_state_idx', 'vm_state'),
    soft_delete=True,
)

instance_faults = _table(
    'instance_faults',
    sa.Column('instance_uuid', S36),
    sa.Column('code', sa.Integer),
    sa.Column('message', S255),
    sa.Column('details', sa.Text),
    sa.Column('host', S255),
    sa.Index('instance_faults_instance_uuid_idx', 'instance_uuid'),
)

instance_actions = _table(
    'instance_actions',
    sa.Column('action', S255),
    sa.Column('instance_uuid', S36),
    sa.Column('request_id', S255),
    sa.Column('user_id', S255),
    sa.Column('project_id', S255),
    sa.Column('start_time', utils.DateTime),
    sa.Column('finish_time', utils.DateTime),
    sa.Column('message', S255),
    sa.Index('instance_actions_instance_uuid_idx', 'instance_uuid'),
)

instance_actions_events = _table(
    'instance_actions_events',
    sa.Column('event', S255),
    sa.Column('action_id', sa.Integer, sa.ForeignKey('instance_actions.id')),
    sa.Column('start_time', utils.DateTime),
    sa.Column('finish_time', utils.DateTime),
    sa.Column('result', S255),
    sa.Column('traceback', sa.Text),
    sa.Column('host', S255),
    sa.Column('details', sa.Text),
)
