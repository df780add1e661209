"""Cell ("main") database: ``models`` (tables), ``api`` (functions, dicts out), ``migrations``."""
