"""Command-line and config-file parsing shared by every minisched command."""
import re
import sys

from oslo_config import cfg
from oslo_log import log as logging

from minisched import conf as ms_conf
from minisched import exception
from minisched import rpc
from minisched import version

CONF = ms_conf.CONF

_log_registered = False

#: oslo.log's default levels, plus alembic's at WARN: at INFO it logs each plugin it sets up
#: when ``alembic.command`` is first imported (1.17 and later) and its migration context's
#: set-up each time a service reads its schema revision, which say nothing to an operator.
DEFAULT_LOG_LEVELS = logging.get_default_log_levels() + ['alembic=WARN']


def set_lib_defaults():
    """minisched's defaults of library options (also the sample config's, through the
    ``oslo.config.opts.defaults`` entry point)."""
    logging.set_defaults(default_log_levels=DEFAULT_LOG_LEVELS)


def register_log_opts(conf):
    global _log_registered
    if not _log_registered:
        logging.register_options(conf)
        set_lib_defaults()
        _log_registered = True


def parse_args(argv, default_config_files=None, init_rpc=True):
    """Parse ``argv`` into CONF, validate every value, then set up RPC.

    A bad value or a missing required option exits with status 1 and one line naming the
    option, before any service starts.
    """
    register_log_opts(CONF)
    rpc.set_defaults()
    prog = argv[0].rsplit('/', 1)[-1] if argv else 'minisched'
    try:
        CONF(argv[1:], project='minisched', prog=prog, version=version.version_string,
             default_config_files=default_config_files)
    except cfg.Error as exc:
        fail(prog, str(exc).splitlines()[0])
    if init_rpc:
        try:
            rpc.init(CONF)
        except rpc.TransportURLError as exc:
            fail(prog, str(exc))
    check_values(CONF, prog)


def fail(prog, message):
    """Exit with status 1 after one line on stderr."""
    sys.stderr.write('%s: error: %s\n' % (prog, message))
    sys.exit(1)


def check_values(conf, prog):
    """Read every registered option once so that a bad value fails now, naming the option."""
    for name in list(conf.keys()):
        try:
            value = conf[name]
        except cfg.RequiredOptError as exc:
            fail(prog, 'missing required option %s' % exc)
        except (cfg.ConfigFileValueError, ValueError) as exc:
            fail(prog, 'invalid value for [DEFAULT] %s: %s' % (name, _first_line(exc)))
        if isinstance(value, cfg.ConfigOpts.GroupAttr):
            for opt_name in list(value.keys()):
                try:
                    value[opt_name]
                except cfg.RequiredOptError:
                    fail(prog, 'missing required option [%s] %s' % (name, opt_name))
                except (cfg.ConfigFileValueError, ValueError) as exc:
                    fail(prog, 'invalid value for [%s] %s: %s' % (name, opt_name,
                                                                  _first_line(exc)))


def _first_line(exc):
    # oslo.config says "from LocationInfo(location=..., detail='/etc/x.conf')": name the file.
    return re.sub(r"from LocationInfo\(.*?detail='([^']*)'\)", r'in \1',
                  exception.first_line(exc))
