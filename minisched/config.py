"""Command-line and config-file parsing shared by every minisched command."""
import re
import ssl
import sys

from oslo_config import cfg
from oslo_log import log as logging

from minisched import conf as ms_conf
from minisched import exception
from minisched import monkey_patch
from minisched import rpc
from minisched.messaging import incoming
from minisched.messaging import wire
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
    option, before any service starts; so does a TLS file of ``[oslo_messaging_rabbit]``
    that cannot be used (see :func:`tls_file_problems`).
    """
    register_log_opts(CONF)
    withdraw_shell_completion(CONF)
    rpc.set_defaults()
    prog = argv[0].rsplit('/', 1)[-1] if argv else 'minisched'
    default_config_dirs = None
    if default_config_files is None:
        default_config_files = monkey_patch.env_config_files(argv[1:])  # or None
        default_config_dirs = monkey_patch.env_config_dirs(default_config_files)
    try:
        CONF(argv[1:], project='minisched', prog=prog, version=version.version_string,
             default_config_files=default_config_files,
             default_config_dirs=default_config_dirs)
    except cfg.Error as exc:
        fail(prog, str(exc).splitlines()[0])
    # The wire profile's exchange and durability, also for commands that set up RPC later
    # (minisched-manage's rpc tap reads the exchange without it).
    wire.of(CONF).set_defaults(CONF)
    if init_rpc:
        try:
            rpc.init(CONF)
        except (rpc.TransportURLError, incoming.PrivateHookMissing) as exc:
            fail(prog, str(exc))
    check_values(CONF, prog)
    for problem in tls_file_problems(CONF):
        fail(prog, problem)


#: Where oslo.config looks for ``minisched.conf`` (and ``<prog>.conf``) when no
#: ``--config-file`` is given, as for every OpenStack service (``cfg.find_config_files``),
#: and for a ``minisched.conf.d`` directory (``cfg.find_config_dirs``).
SEARCHED_DIRS = ('~/.minisched/', '~/', '/etc/minisched/', '/etc/')


def config_sources(conf):
    """The configuration files and directories ``conf`` was read from: the ones given with
    ``--config-file``/``--config-dir``, else the ones found in :data:`SEARCHED_DIRS`."""
    dirs = conf.config_dir or []
    return list(conf.config_file or []) + ([dirs] if isinstance(dirs, str) else list(dirs))


def withdraw_shell_completion(conf):
    """Withdraw oslo.config's ``--shell_completion``: the templates it reads are not
    installed with oslo.config, so it only ever ended in a traceback. It is neither listed
    in ``--help`` nor acted on (oslo.config looks for it in the arguments before parsing)."""
    if 'shell_completion' in conf:
        conf.unregister_opt(conf._shell_completion_opt)
    conf.supported_shell_completion = ()


def fail(prog, message, status=1):
    """Exit with ``status`` (1; argparse's 2 for a command line it cannot parse) after one
    line on stderr."""
    sys.stderr.write('%s: error: %s\n' % (prog, message))
    sys.exit(status)


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


def tls_file_problems(conf):
    """``['<option> <path>: <why>']`` for each TLS file of ``[oslo_messaging_rabbit]`` that
    is set while ``ssl`` is on but cannot be used: missing, unreadable, or not in a form
    OpenSSL loads (a CA file that holds no certificate, a certificate without its key...).
    Empty when ``ssl`` is off or the rabbit driver's options are not registered.

    oslo.messaging opens these files only when it connects, and retries that for ever with
    ``[Errno 2] No such file or directory`` and no file name."""
    try:
        rabbit = conf.oslo_messaging_rabbit
        if not rabbit.ssl:
            return []
        paths = {name: rabbit[name] for name in incoming.TLS_FILE_OPTIONS}
    except (cfg.NoSuchOptError, AttributeError):
        return []
    problems = []
    for name, path in paths.items():
        if not path:
            continue
        try:
            with open(path, 'rb'):
                pass
        except OSError as exc:
            problems.append('[oslo_messaging_rabbit] %s %s: %s'
                            % (name, path, exc.strerror or exc))
    if problems:
        return problems
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if paths['ssl_ca_file']:
        try:
            context.load_verify_locations(cafile=paths['ssl_ca_file'])
        except (ssl.SSLError, ValueError) as exc:
            problems.append('[oslo_messaging_rabbit] ssl_ca_file %s: no CA certificate '
                            'loads from it: %s' % (paths['ssl_ca_file'], exc))
    if paths['ssl_cert_file']:
        try:
            # A key that needs a passphrase fails here instead of prompting for one.
            context.load_cert_chain(paths['ssl_cert_file'], paths['ssl_key_file'] or None,
                                    password=lambda: b'')
        except (ssl.SSLError, ValueError) as exc:
            problems.append('[oslo_messaging_rabbit] ssl_cert_file %s with ssl_key_file %s: '
                            'the certificate and its key do not load: %s'
                            % (paths['ssl_cert_file'], paths['ssl_key_file'] or '(unset)',
                               exc))
    return problems
