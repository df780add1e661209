"""Start-up sequence shared by the service commands (Nova's cmd/common.py + config.py)."""
import sys

from oslo_log import log as logging
from oslo_reports import guru_meditation_report as gmr
from oslo_reports import opts as gmr_opts

from minisched import config
from minisched import exception
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


def check_database(prog, database='main'):
    """Exit with one line on stderr (as for a bad option) when a configured database URL is
    one SQLAlchemy cannot use, or when the database this service registers in has no
    minisched schema or an older one than this code's: its workers would otherwise fail at
    start and be started again, forever. A database that does not answer is left to the
    service's own start-up (it may come back); a newer schema is logged and accepted."""
    from sqlalchemy import exc as sa_exc
    from oslo_db import exception as db_exc

    from minisched.db import revisions
    from minisched.objects import cell_mapping
    for problem in engines.configured_url_problems():
        config.fail(prog, problem)
    url = engines.configured_url(database)
    try:
        current, head, known = revisions.status(engines.engine_for_url(url, database), database)
    except (db_exc.DBError, sa_exc.SQLAlchemyError) as exc:
        LOG.warning('Could not read the schema revision of %s: %s', cell_mapping.mask_url(url),
                    exception.first_line(exc))
        return
    finally:
        engines.dispose_all()  # no connection of this process's to hand down to its workers
    sync = 'minisched-manage %s sync' % ('db' if database == 'main' else 'api_db')
    where = '%s %s' % (engines.OPTIONS[database], cell_mapping.mask_url(url))
    if current is None:
        problem = '%s has no minisched schema: run \'%s\' first' % (where, sync)
    elif not known:
        LOG.warning('%s is at schema revision %s, which this minisched (newest %s) does not '
                    'know: a newer release migrated it', where, current, head)
        return
    elif current != head:
        problem = ('%s is at schema revision %s and this minisched needs %s: run \'%s\''
                   % (where, current, head, sync))
    else:
        return
    config.fail(prog, problem)


def block_db_access(binary):
    """Make every DB call in this process fail loudly; objects go through the conductor."""
    from minisched.conductor import rpcapi as conductor_rpcapi
    engines.block_db_access(binary)
    objects_base.MinischedObject.indirection_api = conductor_rpcapi.ConductorAPI(CONF)
