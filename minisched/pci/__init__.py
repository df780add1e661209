"""PCI passthrough: device specs, aliases and requests, and the per-host device pools."""
