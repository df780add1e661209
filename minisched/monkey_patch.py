"""Choose the concurrency backend of a minisched process: native threads or eventlet.

As Nova 34 (2026.2) does in ``nova/monkey_patch.py``: each command module calls
:func:`patch` as its very first statement, with its own default (``'threading'`` for the
three services and ``minisched-cluster``, ``'eventlet'`` for ``minisched-manage``, as
nova-manage). The choice, strongest first:

1. the environment variable ``OS_MINISCHED_DISABLE_EVENTLET_PATCHING``: ``1``, ``true`` or
   ``yes`` (any case) choose native threading; any other non-empty value chooses eventlet;
2. ``[DEFAULT] concurrency_backend`` in the files named by ``--config-file`` and
   ``--config-dir`` (or found by oslo.config's default search for project ``minisched``):
   ``threading`` or ``eventlet``; ``auto`` (the default) keeps the command's own default;
3. the command's default.

Eventlet: the standard library is monkey-patched before anything else is imported
(psycopg2 included, so PostgreSQL queries wait cooperatively), oslo.service runs on its
eventlet backend and oslo.messaging's RPC servers on its eventlet executor. Threading:
nothing is patched, any later ``import eventlet`` fails (so no library can switch to green
threads behind the process's back), oslo.service runs on its threading backend and the RPC
servers on oslo.messaging's threading executor.

This module imports nothing but the standard library at module level, and oslo.config only
to read the one option: importing it never imports eventlet.
"""
import os
import sys

#: The environment variable that wins over ``[DEFAULT] concurrency_backend``.
ENV = 'OS_MINISCHED_DISABLE_EVENTLET_PATCHING'
#: The configuration file of a command given neither ``--config-file`` nor ``--config-dir``
#: (before oslo.config's default search), with the ``.d`` directory beside it if there is
#: one; ``minisched-cluster up``'s env file exports it.
CONFIG_FILE_ENV = 'MINISCHED_CONFIG_FILE'
#: Values of :data:`ENV` that choose native threading; any other non-empty one, eventlet.
THREADING_VALUES = ('1', 'true', 'yes')
BACKENDS = ('threading', 'eventlet')

_PATCHED = False
_BACKEND = None


class PoisonEventletImport:
    """A ``sys.meta_path`` finder refusing eventlet: in native threading mode nothing may
    import it (futurist and oslo.service only try, and fall back)."""

    def find_spec(self, fullname, path, target=None):
        if fullname == 'eventlet' or fullname.startswith('eventlet.'):
            raise ImportError('minisched runs with native threads in this process '
                              '(concurrency_backend): eventlet may not be imported')
        return None


def config_file_args(argv):
    """Only the ``--config-file``/``--config-dir`` arguments of ``argv`` (both forms): the
    rest (sub-commands, their options) is unknown to the early parser."""
    found = []
    args = iter(argv)
    for arg in args:
        if arg in ('--config-file', '--config-dir'):
            found.append(arg)
            value = next(args, None)
            if value is not None:
                found.append(value)
        elif arg.startswith(('--config-file=', '--config-dir=')):
            found.append(arg)
    return found


def env_config_files(argv, environ=None):
    """``[path]`` from :data:`CONFIG_FILE_ENV` when ``argv`` names no configuration file or
    directory, else None (the arguments, or oslo.config's default search, decide)."""
    path = (os.environ if environ is None else environ).get(CONFIG_FILE_ENV, '').strip()
    if not path or config_file_args(argv):
        return None
    return [path]


def env_config_dirs(files):
    """``[<file>.d]`` for the file :func:`env_config_files` found, when that directory exists
    (oslo.config's ``<project>.conf.d`` beside ``<project>.conf``: ``minisched-cluster``'s
    operator files), else None."""
    directory = files[0] + '.d' if files else None
    return [directory] if directory and os.path.isdir(directory) else None


def backend_from_config(argv=None):
    """``[DEFAULT] concurrency_backend`` of the config files ``argv`` names (default: this
    process's arguments), read before anything else; ``'auto'`` when unset.

    The option is declared here again, on a private ConfigOpts, as Nova's early parse does:
    the real one (``minisched.conf.default``) comes with imports that must not happen yet.
    A value out of its choices, or an unreadable file, stops the process with one line on
    stderr, as a bad option does later in start-up."""
    from oslo_config import cfg

    conf = cfg.ConfigOpts()
    conf.register_opt(cfg.StrOpt('concurrency_backend', default='auto',
                                 choices=('auto',) + BACKENDS))
    argv = sys.argv[1:] if argv is None else argv
    args = config_file_args(argv)
    from_env = env_config_files(argv)
    if from_env:
        args = ['--config-file', from_env[0]]
        for directory in env_config_dirs(from_env) or []:
            args += ['--config-dir', directory]
    prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else 'minisched'
    try:
        conf(args, project='minisched', prog=prog, validate_default_values=True)
        return conf.concurrency_backend
    except cfg.ConfigFilesNotFoundError as exc:  # not this option's fault: the file's
        sys.stderr.write('%s: error: %s%s\n' % (
            prog, exc, ' (%s)' % CONFIG_FILE_ENV if from_env else ''))
        sys.exit(1)
    except (cfg.Error, ValueError) as exc:
        sys.stderr.write('%s: error: [DEFAULT] concurrency_backend: %s\n'
                         % (prog, str(exc).splitlines()[0]))
        sys.exit(1)


def choose(default, environ=None, argv=None):
    """The backend a command whose own default is ``default`` runs with (see the module)."""
    if default not in BACKENDS:
        raise ValueError('the default backend is one of %s, not %r' % (BACKENDS, default))
    env = (os.environ if environ is None else environ).get(ENV, '').strip().lower()
    if env:
        return 'threading' if env in THREADING_VALUES else 'eventlet'
    configured = backend_from_config(argv)
    return default if configured == 'auto' else configured


def patch(backend='eventlet'):
    """Set this process's backend (see the module); the first call decides, later ones
    return what it chose. Call it before anything but the standard library is imported."""
    global _BACKEND, _PATCHED
    if _BACKEND is not None:
        return _BACKEND
    chosen = choose(backend)
    if chosen == 'eventlet':
        import warnings

        # eventlet's notice goes to stderr at import; the service logs its own (log_choice).
        warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
        import eventlet

        eventlet.monkey_patch()
        _PATCHED = True
        _init_service_backend('EVENTLET')
    else:
        poison_eventlet()
        _init_service_backend('THREADING')
    _BACKEND = chosen
    return chosen


def poison_eventlet():
    """Refuse every later import of eventlet; an eventlet already imported is a bug of the
    command (something came before :func:`patch`) and stops it at once."""
    if 'eventlet' in sys.modules:
        raise RuntimeError('minisched was asked to run with native threads (%s=%r, '
                           '[DEFAULT] concurrency_backend), but eventlet was imported '
                           'before the backend was chosen: this is a bug'
                           % (ENV, os.environ.get(ENV, '')))
    if not any(isinstance(finder, PoisonEventletImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, PoisonEventletImport())


def _init_service_backend(name):
    from oslo_service import backend

    backend.init_backend(getattr(backend.BackendType, name))


def embed():
    """For a process that embeds minisched rather than running one of its commands (a test
    runner, a benchmark, a tool): run native threads here, whatever the environment says,
    without patching or poisoning anything and without touching the environment that the
    services it starts inherit. A later :func:`patch` (a command module imported by the
    embedding process) then changes nothing. A no-op once a backend was chosen."""
    global _BACKEND
    if _BACKEND is None:
        _BACKEND = 'threading'


def register_default():
    """Make oslo.service's backend, where nothing chose one, follow this process: its
    threading backend unless eventlet monkey-patched the process (oslo.service's own
    default is eventlet, even in a process that never patched)."""
    from oslo_service import backend as service_backend

    def _follow_process():
        return getattr(service_backend.BackendType, backend().upper())

    service_backend.register_backend_default_hook(_follow_process)


def is_patched():
    """True when this process runs on eventlet's green threads."""
    return _PATCHED


def backend():
    """``'eventlet'`` or ``'threading'``: the backend this process runs with (a process that
    never called :func:`patch`, such as a test runner or an embedding tool, runs native
    threads unless something else monkey-patched it)."""
    if _BACKEND is not None:
        return _BACKEND
    if 'eventlet' in sys.modules:
        from eventlet import patcher

        if patcher.is_monkey_patched('thread'):
            return 'eventlet'
    return 'threading'


def log_choice(logger):
    """Say which backend this process runs with: once, when its services are launched
    (after the start-up checks, whose failures are one line; the choice itself is made
    before logging is set up)."""
    if backend() == 'eventlet':
        logger.info('Service is starting with the eventlet backend.')
        logger.warning('The eventlet concurrency backend is deprecated, as in Nova: run with '
                       'native threads ([DEFAULT] concurrency_backend = threading or auto, '
                       'and %s unset).', ENV)
    else:
        logger.info('Service is starting with native threading.')
