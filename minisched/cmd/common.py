"""Start-up sequence shared by the service commands (Nova's cmd/common.py + config.py)."""
import os
import signal
import sys
import time

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


#: Seconds between two attempts to reach the database at start-up: the first pause, and
#: the most it grows to (doubling after each failed attempt).
DB_RETRY_FIRST_SECONDS = 1
DB_RETRY_MAX_SECONDS = 30


def check_database(prog, database='main'):
    """Wait for the database this service registers in, then check its schema.

    Exits with one line on stderr (as for a bad option) on what only the operator can fix:
    a configured URL SQLAlchemy cannot use (see ``engines.url_problem``), a database with no
    minisched schema or an older one than this code's. Its workers would otherwise fail at
    start and be started again, forever. A newer schema is logged and accepted.

    A database that does not answer (server down, refused, unknown host, login refused...)
    is waited for: one WARNING per attempt naming it (password masked) and the error, the
    pause doubling from DB_RETRY_FIRST_SECONDS to DB_RETRY_MAX_SECONDS. The launcher runs
    this before it forks, so with several workers only it waits. SIGTERM or SIGINT while it
    waits ends the process at once with status 0.
    """
    from minisched.objects import cell_mapping
    for problem in engines.configured_url_problems():
        config.fail(prog, problem)
    missing = unconfigured_sqlite(database)
    if missing:
        # SQLite would create an empty file there, and the next message would ask for a
        # 'db sync' of a database no other command knows about.
        config.fail(prog, 'no configuration file (none given with --config-file or '
                          '--config-dir, no minisched.conf in %s) and no database at %s: give '
                          '--config-file with the deployment\'s [database] connection and '
                          '[api_database] connection (minisched-cluster up writes one)'
                    % (', '.join(config.SEARCHED_DIRS), missing))
    url = engines.configured_url(database)
    where = '%s %s' % (engines.OPTIONS[database], cell_mapping.mask_url(url))
    current, head, known = _wait_for_revision(url, database, where)
    sync = 'minisched-manage %s sync' % ('db' if database == 'main' else 'api_db')
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


def unconfigured_sqlite(database):
    """The embedded SQLite file of ``database`` when no configuration file was read and that
    file does not exist (the service would create it empty), else None."""
    from oslo_config import cfg
    from sqlalchemy.engine import url as sa_url
    try:
        if config.config_sources(CONF):
            return None
    except cfg.NoSuchOptError:  # CONF not parsed from a command line: embedded, configured
        return None
    url = sa_url.make_url(engines.configured_url(database))
    path = url.database
    if url.get_backend_name() != 'sqlite' or not path or path == ':memory:':
        return None
    return None if os.path.exists(path) else path


class _StopWaiting(SystemExit):
    """SIGTERM or SIGINT arrived while waiting for the database.

    A SystemExit, so that no ``except Exception`` of the database libraries on the way
    swallows it, and eventlet's hub hands it on to the waiting code."""


def _stop_waiting(signum, frame):
    raise _StopWaiting(signum)


def _read_revision(url, database):
    """``revisions.status`` of the database at ``url``; an error of the database libraries
    (unreachable, refused, timed out...) is returned, not raised."""
    from oslo_db import exception as db_exc
    from sqlalchemy import exc as sa_exc

    from minisched.db import revisions
    try:
        engine = engines.startup_engine(url, database)
        try:
            return revisions.status(engine, database), None
        finally:
            engine.dispose()
    except (db_exc.DBError, sa_exc.SQLAlchemyError, OSError) as exc:
        return None, exc


def _wait_for_revision(url, database, where):
    """``(current, head, known)`` of the database at ``url``, once it answers."""
    status, error = _read_revision(url, database)
    if error is None:
        return status
    handlers = {signum: signal.signal(signum, _stop_waiting)
                for signum in (signal.SIGTERM, signal.SIGINT)}
    started = time.monotonic()
    attempt, pause = 1, DB_RETRY_FIRST_SECONDS
    try:
        while error is not None:
            # Logged outside any except block: oslo.log would append the whole error again.
            LOG.warning('Waiting for the database: %s did not answer (attempt %d): %s; '
                        'retrying in %d s', where, attempt, exception.first_line(error), pause)
            time.sleep(pause)
            attempt, pause = attempt + 1, min(pause * 2, DB_RETRY_MAX_SECONDS)
            status, error = _read_revision(url, database)
    except _StopWaiting as stop:
        LOG.info('Stopping on signal %d while waiting for the database.', stop.code)
        sys.exit(0)
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    LOG.info('%s answered after %d attempts (%.0f s); starting.', where, attempt,
             time.monotonic() - started)
    return status


def block_db_access(binary):
    """Make every DB call in this process fail loudly; objects go through the conductor."""
    from minisched.conductor import rpcapi as conductor_rpcapi
    engines.block_db_access(binary)
    objects_base.MinischedObject.indirection_api = conductor_rpcapi.ConductorAPI(CONF)
