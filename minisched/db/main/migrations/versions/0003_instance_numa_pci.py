"""Instances remember their NUMA topology, PCI requests and PCI devices.

Nova keeps these in ``instance_extra`` (and devices in ``pci_devices``); minisched keeps one
row per instance, so they are three JSON columns of ``instances``: the fitted
``InstanceNUMATopology`` (with the host CPUs pinned for it), the ``InstancePCIRequests`` the
flavor asked for, and the ``PciDeviceList`` the compute's claim handed out. The compute's
resource tracker rebuilds its NUMA and PCI usage from them, as it does CPU and RAM usage.

Revision ID: 2b7e6d1f0c55
Revises: 5d2e9b7c4a13
Create Date: 2026-11-25 00:00:00
"""
import sqlalchemy as sa
from alembic import op

from minisched.db.utils import MediumText

revision = '2b7e6d1f0c55'
down_revision = '5d2e9b7c4a13'
branch_labels = None
depends_on = None


def upgrade():
    for name in ('numa_topology', 'pci_requests', 'pci_devices'):
        op.add_column('instances', sa.Column(name, MediumText))
