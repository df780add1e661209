"""Start-up sequence shared by the service commands (Nova's cmd/common.py + config.py)."""
import sys

from oslo_log import log as logging
from oslo_reports import guru_meditation_report as gmr
from oslo_reports import opts as gmr_opts

from minisched import config
from minisched.db import engines
from minisched import objects
from minisched.objects import base as objects_base
from minisched import version

CONF = config.CONF
LOG = logging.getLogger(__name__)


def setup_service(argv=None):
    """Parse options, set up logging, objects, the DB layer and the Guru Meditation report."""
    argv = list(sys.argv if argv is None else argv)
    gmr_opts.set_defaults(CONF)
    config.parse_args(argv)
    logging.setup(CONF, 'minisched')
    objects.register_all()
    engines.configure(CONF)
    gmr.TextGuruMeditation.setup_autorun(version, conf=CONF)
    return CONF


def block_db_access(binary):
    """Make every DB call in this process fail loudly; objects go through the conductor."""
    from minisched.conductor import rpcapi as conductor_rpcapi
    engines.block_db_access(binary)
    objects_base.MinischedObject.indirection_api = conductor_rpcapi.ConductorAPI(CONF)
