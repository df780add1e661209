"""Version of the minisched package, as services report it."""
from importlib import metadata

try:
    version_string = metadata.version('minisched')
except metadata.PackageNotFoundError:  # running from a source tree
    version_string = '0.1.0'

#: Bumped whenever a service's RPC or object behaviour changes (Nova's SERVICE_VERSION).
SERVICE_VERSION = 1
