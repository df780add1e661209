"""Build requests keep the block device mappings and tags their instance was asked with.

Nova's ``build_requests`` rows hold them as the JSON of a BlockDeviceMappingList and a
TagList next to the instance; so do minisched's.

Revision ID: 4f8b2e6a9c17
Revises: 9c1f4a7d2e60
Create Date: 2026-11-28 00:00:00
"""
import sqlalchemy as sa
from alembic import op

from minisched.db.utils import MediumText

revision = '4f8b2e6a9c17'
down_revision = '9c1f4a7d2e60'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('build_requests', sa.Column('block_device_mappings', MediumText))
    op.add_column('build_requests', sa.Column('tags', sa.Text))
