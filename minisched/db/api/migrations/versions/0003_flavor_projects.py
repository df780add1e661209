"""Projects given access to private flavors (Nova's ``flavor_projects``).

A flavor that is not public is usable by the projects listed here only: ``Flavor.add_access``
and ``remove_access`` write them, a user's context reads the public flavors and those its
project was given.

Revision ID: 9c1f4a7d2e60
Revises: 7a4c1e8f2b35
Create Date: 2026-11-28 00:00:00
"""
import sqlalchemy as sa
from alembic import op

from minisched.db.utils import DateTime

revision = '9c1f4a7d2e60'
down_revision = '7a4c1e8f2b35'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'flavor_projects',
        sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
        sa.Column('created_at', DateTime),
        sa.Column('updated_at', DateTime),
        sa.Column('flavor_id', sa.Integer, sa.ForeignKey('flavors.id'), nullable=False),
        sa.Column('project_id', sa.String(255), nullable=False),
        sa.UniqueConstraint('flavor_id', 'project_id',
                            name='uniq_flavor_projects0flavor_id0project_id'),
        mysql_engine='InnoDB', mysql_charset='utf8')
