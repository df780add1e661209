"""Index ``updated_at`` and ``created_at`` of host mappings.

The scheduler reads the host mappings created or updated since its last refresh on every
request; without these indexes each read scanned the whole table.

Revision ID: 7a4c1e8f2b35
Revises: 3b7e5d0a6f02
Create Date: 2026-11-22 00:00:00
"""
from alembic import op

revision = '7a4c1e8f2b35'
down_revision = '3b7e5d0a6f02'
branch_labels = None
depends_on = None


def upgrade():
    op.create_index('host_mappings_updated_at_idx', 'host_mappings', ['updated_at'])
    op.create_index('host_mappings_created_at_idx', 'host_mappings', ['created_at'])
