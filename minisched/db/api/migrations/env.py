"""Alembic environment of the API database; the shared logic is in minisched.db.migration."""
from alembic import context

from minisched.db import migration
from minisched.db.api import models

migration.run_migrations(context, models.metadata)
