"""An opt-in trace of what each process spends on RPC and the database, message by message.

Off unless the environment variable ``MINISCHED_TRACE_DIR`` names a directory when this module
is first imported (or :func:`enable` is called). Off, the call sites in :mod:`minisched.rpc`,
:mod:`minisched.messaging.incoming`, :mod:`minisched.db.engines` and :mod:`minisched.service` test
:data:`ENABLED` and do nothing else; no hook is installed and no file written.

On, every process records:

* **handled**: what it worked on, by *cause*, *method* and *kind*. ``call``, ``cast`` and
  ``fanout`` are RPC messages (``method`` is ``<topic>.[<namespace>.]<method>``, with the
  object and its method for the conductor's object calls: ``conductor.object_action(
  Instance.save)``); ``periodic`` a periodic task (``compute.update_available_resource``);
  ``task`` a unit of work a caller named with :func:`task`; ``thread`` a thread that minisched
  code started while handling one of these (a compute's build thread), named as its parent
  (``threading.Thread.start`` is wrapped while tracing; the RPC layer's pooled threads and
  timers, and threads libraries start, never inherit).
  Per record: count, errors, worked time (total and a histogram), CPU, and for RPC messages
  the time queued (send to dispatch) as total and histogram.
* **outgoing**: RPC sent through :class:`minisched.rpc.Client`, by cause, the *handler* being
  run when it was sent (a ``method`` of handled, or ``-``), *target* (``<topic>.[<namespace>.]
  <method>``, as above) and kind (``call``, ``cast``, ``fanout``): count, errors, latency (a
  call until its answer; a cast until it is handed to the broker).
* **db**: statements run on the engines of :mod:`minisched.db.engines` (hooked by
  :mod:`minisched.messaging.trace_db`), by cause, handler and *statement* (``SELECT
  instances``, ``UPDATE compute_nodes``, ``INSERT ... [many]``): count, errors, time from
  before to after the cursor's execute. Under eventlet psycopg2 waits for
  the server cooperatively (eventlet installs its wait callback), so that time includes the
  wait for a busy process to resume the green thread, not only the database's.
* **transactions**: by cause and handler: begins, commits, rollbacks, time from begin to its
  end, pool checkouts and new connections.

**Causes.** A message carries the cause of its sender (``trace_cause`` in the request
context's dict, next to ``trace_sent`` and ``trace_kind``); a message sent outside any
handling is its own cause (its ``target``), a periodic task or a :func:`task` is the cause
of what it sends. So everything a boot sets off (the conductor's scheduling, the compute's
build, the compute's object calls back to the conductor, the scheduler's instance updates)
carries the cause of the client's task, while service state reports
(``conductor.object_action(Service.save)``) and periodic tasks carry their own.

**Queued time** is the receiver's wall clock at dispatch less ``trace_sent``, the sender's
``time.time()`` when oslo.messaging serialized the context (after the arguments, before the
JSON encoding and the publish). The context's own ``timestamp`` is not a send time: it is when
the request began, carried unchanged from the client through every hop. ``time.time()`` has
sub-microsecond resolution here; across machines the figure is only as good as their clock
synchronisation. Queued thus covers encoding, publishing, the broker, delivery, decoding of the
envelope and the wait for a free executor thread; worked covers the decoding of the arguments,
the method and the encoding of its result (the reply is sent after).

**CPU.** Under eventlet (the services) every green thread shares one OS thread, so
``time.thread_time()`` around a handler would count every other green thread that ran while it
waited. Instead a greenlet switch hook charges the thread's CPU time between two switches to
the record of the green thread that was running: a handler's CPU is its own, plus that of the
call threads working for it (:func:`adopted`) and of the threads it started. Without eventlet,
each OS thread's ``thread_time()`` is read when it starts or stops working for a record. The
CPU of a process outside every record (the hub, kombu's I/O and heartbeats, timers, the
executor before dispatch) is its total (``resource.getrusage``) less the records' CPU.

**Files.** One JSON file per process, ``<service>-<pid>.json`` in the directory, rewritten
(atomically) every :data:`WRITE_SECONDS` and at exit; a forked worker starts from zero with a
file of its own (oslo.service's workers leave by ``os._exit``: their file is as of its last
periodic write). Every figure is cumulative, so two snapshots subtract (``trace_files.delta``)
and processes add up (``trace_files.merge``)::

    {"format": 1, "service": "minisched-conductor", "pid": 123, "host": "node1",
     "started": <time.time() when tracing began in this process>,
     "written": <time.time() of this write>,
     "cpu_user_s": 1.2, "cpu_sys_s": 0.3,      # the process's, since it started
     "cpu_accounting": "greenlet" | "thread",
     "handled": [{"cause", "method", "kind", "count", "errors", "total_s", "cpu_s",
                  "queued_count", "queued_total_s", "hist", "queued_hist"}],
     "outgoing": [{"cause", "handler", "target", "kind", "count", "errors", "total_s",
                   "hist"}],
     "db": [{"cause", "handler", "statement", "count", "errors", "total_s"}],
     "transactions": [{"cause", "handler", "begins", "commits", "rollbacks", "total_s",
                       "checkouts", "connects"}]}

A histogram maps bucket ``b`` (a string) to a count: bucket 0 holds times up to 1 us, bucket
``b > 0`` times in ``(2**((b-1)/8), 2**(b/8)]`` us (9% wide); :func:`percentile` reads them.
"""
import atexit
import functools
import json
import math
import os
import re
import resource
import socket
import sys
import threading
import time

#: The environment variable naming the directory of the trace files.
ENV_VAR = 'MINISCHED_TRACE_DIR'
#: Seconds between two writes of a process's file.
WRITE_SECONDS = 2.0
#: Version of the file format.
FORMAT = 1

#: True while tracing: the call sites elsewhere test it and do nothing more when it is False.
ENABLED = False

#: Fields that identify a record of each section; every other field adds up.
KEYS = {'handled': ('cause', 'method', 'kind'),
        'outgoing': ('cause', 'handler', 'target', 'kind'),
        'db': ('cause', 'handler', 'statement'),
        'transactions': ('cause', 'handler')}
#: Handler and cause of work done outside any handling (timers, start-up).
NONE = '-'

#: Modules whose threads never inherit the record of the code that started them: they serve
#: many handlings in turn (call threads, the call monitor, timers of the RPC layer).
_NO_INHERIT = frozenset({'minisched.rpc', 'minisched.messaging.incoming',
                         'minisched.messaging.call_monitor', 'minisched.messaging.incoming_log',
                         'minisched.messaging.large_messages',
                         'minisched.messaging.monitored_dispatcher',
                         'minisched.messaging.trace', 'minisched.messaging.trace_db',
                         'minisched.service'})

_state = {'directory': None, 'service': None, 'pid': None, 'started': None,
          'writer': None, 'file': None, 'green': False}
_data = {section: {} for section in KEYS}
_frames = {}    # thread or green thread ident -> _Frame being worked for
_sending = {}   # ident -> _Send whose message is being serialized
_segments = {}  # ident -> thread_time() when its current frame last started to run
_green = {'last': 0.0, 'os_thread': None, 'previous_hook': None}
_original_start = threading.Thread.start


# -- records ---------------------------------------------------------------------------------

class _Timing:
    """Count, errors and time of one record; the histogram of its times."""

    __slots__ = ('count', 'errors', 'total', 'hist', 'cpu', 'queued_count', 'queued_total',
                 'queued_hist', 'begins', 'commits', 'rollbacks', 'checkouts', 'connects')

    def __init__(self):
        self.count = self.errors = self.queued_count = 0
        self.begins = self.commits = self.rollbacks = self.checkouts = self.connects = 0
        self.total = self.cpu = self.queued_total = 0.0
        self.hist = {}
        self.queued_hist = {}

    def add(self, seconds, failed=False):
        self.count += 1
        self.total += seconds
        if failed:
            self.errors += 1
        bucket = _bucket(seconds)
        self.hist[bucket] = self.hist.get(bucket, 0) + 1

    def add_queued(self, seconds):
        self.queued_count += 1
        self.queued_total += seconds
        bucket = _bucket(seconds)
        self.queued_hist[bucket] = self.queued_hist.get(bucket, 0) + 1


def _record(section, key):
    table = _data[section]
    record = table.get(key)
    if record is None:
        record = table.setdefault(key, _Timing())
    return record


def _bucket(seconds):
    micro = seconds * 1e6
    return 0 if micro <= 1.0 else int(math.ceil(math.log2(micro) * 8))


def _bucket_value(bucket):
    """The seconds a bucket stands for: its geometric middle (1 us for bucket 0)."""
    bucket = int(bucket)
    return 1e-6 if bucket <= 0 else 2 ** ((bucket - 0.5) / 8) * 1e-6


class _Frame:
    """What a thread is working for: the record its CPU goes to, the cause and the handler
    name of what it sends and runs."""

    __slots__ = ('cause', 'label', 'record')

    def __init__(self, cause, label, record):
        self.cause = cause
        self.label = label
        self.record = record


def _ident():
    return threading.get_ident()  # looked up each time: eventlet patches it (green threads)


def _switch_frame(frame):
    """Make ``frame`` (or None) the current thread's; returns the one it replaces. The CPU
    the thread used since the last change goes to the frame it replaces."""
    ident = _ident()
    old = _frames.get(ident)
    if _state['green']:
        if _real_ident() == _green['os_thread']:
            now = time.thread_time()
            if old is not None:
                old.record.cpu += now - _green['last']
            _green['last'] = now
    else:
        now = time.thread_time()
        start = _segments.get(ident)
        if old is not None and start is not None:
            old.record.cpu += now - start
        if frame is None:
            _segments.pop(ident, None)
        else:
            _segments[ident] = now
    if frame is None:
        _frames.pop(ident, None)
    else:
        _frames[ident] = frame
    return old


def _attribution():
    frame = _frames.get(_ident())
    return (frame.cause, frame.label) if frame is not None else (NONE, NONE)


# -- greenlet CPU accounting -----------------------------------------------------------------

def _real_ident():
    return _green['real_get_ident']()


def _on_switch(event, args):
    if event in ('switch', 'throw'):
        now = time.thread_time()
        frame = _frames.get(id(args[0]))
        if frame is not None:
            frame.record.cpu += now - _green['last']
        _green['last'] = now
    previous = _green['previous_hook']
    if previous is not None:
        previous(event, args)


def _eventlet_patched():
    if 'eventlet' not in sys.modules:
        return False
    from eventlet import patcher
    return patcher.is_monkey_patched('thread')


def _install_green_accounting():
    import greenlet
    from eventlet import patcher
    _green['real_get_ident'] = patcher.original('_thread').get_ident
    _green['os_thread'] = _real_ident()
    _green['last'] = time.thread_time()
    _green['previous_hook'] = greenlet.settrace(_on_switch)
    _state['green'] = True


def _remove_green_accounting():
    if _state['green']:
        import greenlet
        greenlet.settrace(_green['previous_hook'])
        _state['green'] = False


# -- threads started while handling ----------------------------------------------------------

def _start(thread):
    """``threading.Thread.start`` while tracing: a thread that minisched code (not the RPC
    layer's pools and timers) starts while working for a record works for it too."""
    frame = _frames.get(_ident())
    if frame is not None:
        starter = sys._getframe(1).f_globals.get('__name__', '')
        if starter.startswith('minisched.') and starter not in _NO_INHERIT:
            thread.run = functools.partial(_run_inherited, frame, thread.run)
    return _original_start(thread)


def carried(func):
    """``func``, to run on a pool's thread, working for the record the calling thread works
    for (as a thread that minisched code starts does): a compute's build on the LONG_TASK
    pool counts for the ``build_and_run_instance`` that spawned it. ``func`` itself while
    not tracing or outside every record."""
    if not ENABLED:
        return func
    frame = _frames.get(_ident())
    if frame is None:
        return func
    return functools.partial(_run_inherited, frame, func)


def _run_inherited(parent, run, *args, **kwargs):
    record = _record('handled', (parent.cause, parent.label, 'thread'))
    previous = _switch_frame(_Frame(parent.cause, parent.label, record))
    started = time.perf_counter()
    failed = True
    try:
        result = run(*args, **kwargs)
        failed = False
        return result
    finally:
        _switch_frame(previous)
        record.add(time.perf_counter() - started, failed)


# -- what a process handles ------------------------------------------------------------------

_METHOD = re.compile(r'^[A-Za-z_][A-Za-z0-9_]{0,79}$')


def _object_name(value):
    name = getattr(value, 'obj_name', None)
    if callable(name):
        return name()
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and key.endswith('_object.name'):
                return item
    return None


def label_of(topic, namespace, method, args):
    """``<topic>.[<namespace>.]<method>``, plus ``(<object>.<method>)`` for the conductor's
    object calls; ``args`` are the message's (objects or their primitives)."""
    if not isinstance(method, str) or not _METHOD.match(method):
        method = '(malformed)'
    label = '%s.%s%s' % (topic or '?', '%s.' % namespace if isinstance(namespace, str) and
                         _METHOD.match(namespace) else '', method)
    if method in ('object_action', 'object_class_action_versions') and isinstance(args, dict):
        objname = args.get('objname') or _object_name(args.get('objinst'))
        objmethod = args.get('objmethod')
        if (isinstance(objname, str) and _METHOD.match(objname) and
                isinstance(objmethod, str) and _METHOD.match(objmethod)):
            label += '(%s.%s)' % (objname, objmethod)
    return label


class _Handling:
    """One incoming message being dispatched (see :func:`receive`)."""

    __slots__ = ('record', 'previous', 'started', 'failed')

    def __init__(self, record, frame, queued):
        self.record = record
        self.failed = False
        if queued is not None:
            record.add_queued(max(queued, 0.0))
        self.previous = _switch_frame(frame)
        self.started = time.perf_counter()

    def done(self):
        elapsed = time.perf_counter() - self.started
        _switch_frame(self.previous)
        self.record.add(elapsed, self.failed)


def receive(topic, incoming):
    """Start recording the dispatch of ``incoming`` (an oslo.messaging incoming message) by
    the RPC server of ``topic``; call ``done()`` on the result when it is over (after
    setting ``failed`` when it raised)."""
    received = time.time()
    _ensure_writer()
    message = incoming.message if isinstance(incoming.message, dict) else {}
    ctxt = incoming.ctxt if isinstance(incoming.ctxt, dict) else {}
    label = label_of(topic, message.get('namespace'), message.get('method'),
                     message.get('args'))
    kind = ctxt.get('trace_kind')
    if kind not in ('call', 'cast', 'fanout'):
        kind = 'call' if getattr(incoming, 'reply_q', None) else 'cast'
    cause = ctxt.get('trace_cause')
    if not isinstance(cause, str) or len(cause) > 200:
        cause = label
    sent = ctxt.get('trace_sent')
    queued = received - sent if isinstance(sent, float) else None
    record = _record('handled', (cause, label, kind))
    return _Handling(record, _Frame(cause, label, record), queued)


class _Task:
    """A named piece of work (:func:`task`, :func:`traced_periodic_tasks`)."""

    __slots__ = ('label', 'kind', 'frame', 'previous', 'started')

    def __init__(self, label, kind):
        self.label = label
        self.kind = kind

    def __enter__(self):
        _ensure_writer()
        outer = _frames.get(_ident())
        cause = outer.cause if outer is not None else self.label
        record = _record('handled', (cause, self.label, self.kind))
        self.frame = _Frame(cause, self.label, record)
        self.previous = _switch_frame(self.frame)
        self.started = time.perf_counter()
        return self

    def __exit__(self, exc_type, exc, tb):
        elapsed = time.perf_counter() - self.started
        _switch_frame(self.previous)
        self.frame.record.add(elapsed, exc_type is not None)


class _Nothing:
    """A context manager that does nothing (what :func:`task` and :func:`adopted` give
    while tracing is off)."""

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        return None


_NOTHING = _Nothing()


def task(label):
    """A context manager recording the block as work of its own, named ``label``: the cause
    of what it sends (unless it runs inside other recorded work, whose cause it keeps)."""
    return _Task(label, 'task') if ENABLED else _NOTHING


def traced_periodic_tasks(topic, tasks):
    """oslo.service's ``(name, function)`` periodic task list, each run recorded as work of
    its own, named ``<topic>.<name>`` (kind ``periodic``); a task already traced stays as is."""
    return [(name, function if getattr(function, '_trace_label', None) else
             _periodic('%s.%s' % (topic, name), function)) for name, function in tasks]


def _periodic(label, function):
    @functools.wraps(function)
    def run(manager, context, *args, **kwargs):
        with _Task(label, 'periodic'):
            return function(manager, context, *args, **kwargs)
    run._trace_label = label
    return run


# -- what a process sends --------------------------------------------------------------------

class _Send:
    """One RPC message sent (:func:`send`): a context manager timing it in the caller's
    thread; :meth:`adopted` in the thread that serializes and sends it."""

    __slots__ = ('frame', 'cause', 'handler', 'record', 'kind', 'started', 'previous')

    def __init__(self, target, method, args, kind):
        _ensure_writer()
        self.frame = _frames.get(_ident())
        label = label_of(target.topic, target.namespace, method, args)
        if self.frame is not None:
            self.cause, self.handler = self.frame.cause, self.frame.label
        else:
            self.cause, self.handler = label, NONE
        self.kind = kind
        self.record = _record('outgoing', (self.cause, self.handler, label, kind))

    def __enter__(self):
        ident = _ident()
        self.previous = _sending.get(ident)
        _sending[ident] = self
        self.started = time.perf_counter()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.record.add(time.perf_counter() - self.started, exc_type is not None)
        ident = _ident()
        if self.previous is None:
            _sending.pop(ident, None)
        else:
            _sending[ident] = self.previous

    def adopted(self):
        return _Adopted(self)


class _Adopted:
    """The thread running it works for the send's frame and serializes the send's message."""

    __slots__ = ('send', 'previous_frame', 'previous_send')

    def __init__(self, send):
        self.send = send

    def __enter__(self):
        ident = _ident()
        self.previous_send = _sending.get(ident)
        _sending[ident] = self.send
        self.previous_frame = _switch_frame(self.send.frame)
        return self

    def __exit__(self, exc_type, exc, tb):
        _switch_frame(self.previous_frame)
        ident = _ident()
        if self.previous_send is None:
            _sending.pop(ident, None)
        else:
            _sending[ident] = self.previous_send


def send(target, method, args, call=False):
    """A :class:`_Send` for ``method`` to ``target`` (an oslo.messaging Target) with
    ``args``: use it as a context manager around the send, in the caller's thread."""
    kind = 'call' if call else ('fanout' if target.fanout else 'cast')
    return _Send(target, method, args, kind)


def adopted(sent):
    """Context manager: the calling thread serializes and sends ``sent`` (a :func:`send`
    result, or None while tracing is off) and works for its sender meanwhile."""
    return _NOTHING if sent is None else _Adopted(sent)


def stamp(values):
    """Add the send time, and the cause and kind of the message being sent by this thread,
    to ``values`` (a request context's dict, as it goes on the wire)."""
    values['trace_sent'] = time.time()
    sending = _sending.get(_ident())
    if sending is not None:
        values['trace_cause'] = sending.cause
        values['trace_kind'] = sending.kind


# -- files -----------------------------------------------------------------------------------

def _safe_name(name):
    return re.sub(r'[^A-Za-z0-9_.-]', '_', name) or 'python'


def _default_service():
    """``minisched-<command>`` for ``python -m minisched.cmd.<command>``, else the module or
    script that runs (``multi_compute``, ``minisched-conductor``...)."""
    spec = getattr(sys.modules.get('__main__'), '__spec__', None)
    name = getattr(spec, 'name', None)
    if name:
        if name.startswith('minisched.cmd.'):
            return 'minisched-' + name.rsplit('.', 1)[-1]
        if name.endswith('.__main__'):
            name = name[:-len('.__main__')]
        return _safe_name(name.rsplit('.', 1)[-1])
    script = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else 'python'
    return _safe_name(script[:-3] if script.endswith('.py') else script)


def set_service(name):
    """Name this process's file after ``name`` (a service binary: ``minisched-compute``)."""
    _state['service'] = _safe_name(name)


def _path():
    return os.path.join(_state['directory'], '%s-%d.json' % (_state['service'], _state['pid']))


def _rows(section):
    keys = KEYS[section]
    rows = []
    for key, record in list(_data[section].items()):
        row = dict(zip(keys, key))
        if section == 'transactions':
            row.update(begins=record.begins, commits=record.commits,
                       rollbacks=record.rollbacks, total_s=record.total,
                       checkouts=record.checkouts, connects=record.connects)
        else:
            row.update(count=record.count, errors=record.errors, total_s=record.total)
        if section in ('handled', 'outgoing'):
            row['hist'] = {str(b): n for b, n in list(record.hist.items())}
        if section == 'handled':
            row.update(cpu_s=record.cpu, queued_count=record.queued_count,
                       queued_total_s=record.queued_total,
                       queued_hist={str(b): n for b, n in list(record.queued_hist.items())})
        rows.append(row)
    return rows


def snapshot():
    """This process's figures so far, as written to its file."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result = {'format': FORMAT, 'service': _state['service'], 'pid': _state['pid'],
              'host': socket.gethostname(), 'started': _state['started'],
              'written': time.time(), 'cpu_user_s': usage.ru_utime, 'cpu_sys_s': usage.ru_stime,
              'cpu_accounting': 'greenlet' if _state['green'] else 'thread'}
    for section in KEYS:
        result[section] = _rows(section)
    return result


def flush():
    """Write this process's file now (atomically); returns its path, None when off."""
    if not ENABLED or _state['pid'] != os.getpid():
        return None
    path = _path()
    os.makedirs(_state['directory'], exist_ok=True)
    temporary = '%s.%d.tmp' % (path, os.getpid())
    with open(temporary, 'w') as handle:
        json.dump(snapshot(), handle, separators=(',', ':'))
    os.replace(temporary, path)
    old = _state['file']
    if old is not None and old != path:  # the service was named since the last write
        try:
            os.unlink(old)
        except OSError:
            pass
    _state['file'] = path
    return path


def _ensure_writer():
    if _state['writer'] is not None:
        return
    token = _state['writer'] = object()
    thread = threading.Thread(target=_write_loop, args=(token,), daemon=True,
                              name='trace-writer')
    _original_start(thread)


def _write_loop(token):
    """Write every WRITE_SECONDS until tracing stops or restarts (``token`` replaced)."""
    while ENABLED and _state['writer'] is token:
        time.sleep(WRITE_SECONDS)
        if not ENABLED or _state['writer'] is not token:
            break  # stopped while asleep: its directory may be gone already
        try:
            flush()
        except Exception:  # a full disk must not stop the service: the next write may work
            pass


def _at_exit():
    try:
        flush()
    except Exception:
        pass


def _reset():
    for table in _data.values():
        table.clear()
    _frames.clear()
    _sending.clear()
    _segments.clear()
    _state.update(pid=os.getpid(), started=time.time(), writer=None, file=None)
    _green['last'] = time.thread_time()
    if _state['green']:
        _green['os_thread'] = _real_ident()


def _after_fork():
    if ENABLED:
        _reset()


def enable(directory, service=None):
    """Start tracing in this process into ``directory`` (``service`` names its file; by
    default the command that runs). Figures recorded before are dropped."""
    global ENABLED
    _state.update(directory=directory)
    set_service(service or _state['service'] or _default_service())
    _reset()
    if not ENABLED:
        ENABLED = True
        threading.Thread.start = _start
        if _eventlet_patched():
            _install_green_accounting()
    _ensure_writer()


def disable():
    """Stop tracing in this process (its file stays as last written)."""
    global ENABLED
    if not ENABLED:
        return
    ENABLED = False
    threading.Thread.start = _original_start
    _remove_green_accounting()
    _reset()


os.register_at_fork(after_in_child=_after_fork)
atexit.register(_at_exit)
if os.environ.get(ENV_VAR):
    enable(os.environ[ENV_VAR])
