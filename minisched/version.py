"""Version of the minisched package, and the service version its services report."""
from importlib import metadata

try:
    version_string = metadata.version('minisched')
except metadata.PackageNotFoundError:  # running from a source tree
    version_string = '0.1.0'

#: The service version every minisched service reports, in Nova's numbering (Nova 34's
#: ``SERVICE_VERSION_HISTORY``): 71, whose compute speaks compute RPC 6.5 and listens on a
#: second topic, ``compute-alt``, as minisched's compute does. Nova 34's later versions
#: say a compute can do what minisched's cannot (72: live migration with vTPM; 73: the
#: OWNER_NOVA trait on its resource providers; 74: cold migration with shares), and a Nova
#: service reading 74 would ask for it. minisched's services reported 1 before, with
#: compute RPC 5.0 (in Nova's history, 1 means 4.4: see :func:`compute_rpc_version`).
SERVICE_VERSION = 71

#: ``(first service version, compute RPC version)`` at each change of the compute RPC
#: version in Nova 34's service version history; a version between two entries has the
#: compute RPC version of the entry before it.
COMPUTE_RPC_HISTORY = (
    (0, '4.0'), (1, '4.4'), (2, '4.5'), (3, '4.6'), (5, '4.7'), (6, '4.8'), (7, '4.9'),
    (8, '4.10'), (9, '4.11'), (11, '4.12'), (13, '4.13'), (18, '4.14'), (19, '4.15'),
    (20, '4.16'), (21, '4.17'), (23, '4.18'), (26, '4.19'), (27, '4.20'), (28, '4.21'),
    (29, '4.22'), (30, '5.0'), (37, '5.1'), (39, '5.2'), (40, '5.3'), (41, '5.4'),
    (42, '5.5'), (43, '5.6'), (44, '5.7'), (45, '5.8'), (46, '5.9'), (47, '5.10'),
    (50, '5.11'), (53, '5.12'), (54, '5.13'), (56, '6.0'), (64, '6.1'), (66, '6.2'),
    (67, '6.3'), (68, '6.4'), (71, '6.5'),
)


def compute_rpc_version(service_version):
    """The compute RPC version a compute of ``service_version`` takes (this code's newest,
    6.5, for a newer service than it knows)."""
    found = None
    for first, rpc_version in COMPUTE_RPC_HISTORY:
        if first > service_version:
            break
        found = rpc_version
    return found
