"""Instances keep every field of Nova 34's Instance.

The fields Nova's API, metadata service and virt drivers set (descriptions, key and user
data, access addresses, boot devices, ...) are columns as in Nova's ``instances`` table; the
objects Nova keeps in ``instance_extra`` and tables of their own (info cache, security
groups, key pairs, tags, trusted certificates, CPU model, device metadata, migration
context, resources, the flavors of a resize) are the JSON of their primitive, one column
each, as the 0003 revision keeps the NUMA topology and PCI requests.

Revision ID: 9e3a7c5b1d24
Revises: 2b7e6d1f0c55
Create Date: 2026-11-28 00:00:00
"""
import sqlalchemy as sa
from alembic import op

from minisched.db.utils import MediumText

revision = '9e3a7c5b1d24'
down_revision = '2b7e6d1f0c55'
branch_labels = None
depends_on = None

S255 = sa.String(255)

COLUMNS = (
    ('access_ip_v4', sa.String(39)),
    ('access_ip_v6', sa.String(39)),
    ('architecture', S255),
    ('auto_disk_config', sa.Boolean),
    ('cell_name', S255),
    ('compute_id', sa.BigInteger),
    ('config_drive', S255),
    ('default_ephemeral_device', S255),
    ('default_swap_device', S255),
    ('disable_terminate', sa.Boolean),
    ('display_description', sa.Text),
    ('ephemeral_key_uuid', sa.String(36)),
    ('hidden', sa.Boolean),
    ('kernel_id', S255),
    ('key_data', sa.Text),
    ('key_name', S255),
    ('launch_index', sa.Integer),
    ('locked_by', S255),
    ('progress', sa.Integer),
    ('ramdisk_id', S255),
    ('reservation_id', S255),
    ('root_device_name', S255),
    ('shutdown_terminate', sa.Boolean),
    ('user_data', MediumText),
    ('vm_mode', S255),
)

OBJECT_COLUMNS = ('info_cache', 'security_groups', 'keypairs', 'tags', 'trusted_certs',
                  'vcpu_model', 'device_metadata', 'migration_context', 'resources',
                  'old_flavor', 'new_flavor')


def upgrade():
    for name, type_ in COLUMNS:
        op.add_column('instances', sa.Column(name, type_))
    for name in OBJECT_COLUMNS:
        op.add_column('instances', sa.Column(name, MediumText))
