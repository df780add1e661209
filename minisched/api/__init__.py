"""What nova-api decides at its edge, for minisched's callers (it has no REST API)."""
