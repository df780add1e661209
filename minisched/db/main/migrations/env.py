"""Alembic environment of the cell database; the shared logic is in minisched.db.migration."""
from alembic import context

from minisched.db import migration
from minisched.db.main import models

migration.run_migrations(context, models.metadata)
