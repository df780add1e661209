"""API database: ``models`` (tables), ``api`` (functions, dicts out), ``migrations``."""
