"""Reading and writing the files of snapshot and replay without trusting them.

A file is read only when it is a regular file of bounded size (a FIFO would block, a device
such as ``/dev/zero`` never ends), as UTF-8 JSON without ``NaN`` or ``Infinity``, nested no
deeper than :data:`MAX_DEPTH`. A file is written whole or not at all: to a temporary file
next to it, renamed over it once everything is on disk. Every failure is an exception of
the caller's kind naming the path and the reason, which ``minisched-manage`` prints as one
line. Text from a file is passed through :func:`printable` before it reaches a terminal.
"""
import errno
import fcntl
import json
import math
import os
import stat
import sys
import tempfile

#: Nesting of JSON objects and arrays, at most (a request spec nests about ten deep).
MAX_DEPTH = 32
#: The size of a snapshot, at most (10,000 hosts take 16 MiB, an instance about 300 bytes).
MAX_SNAPSHOT_BYTES = 512 * 1024 * 1024
#: The size of a mix file, at most.
MAX_MIX_BYTES = 1024 * 1024
#: The size of the trace files of one replay together, at most (the recorder rotates its
#: files at 64 MiB; 100,000 recorded requests take about 220 MiB).
MAX_TRACE_BYTES = 256 * 1024 * 1024
#: The length of one trace line, at most.
MAX_LINE_BYTES = 4 * 1024 * 1024


def printable(text):
    """``text`` with every character that is not printable (escape sequences, control
    characters, line breaks) written as a Python escape: a name read from a file cannot
    move the cursor, recolour the terminal or start a line of its own."""
    text = str(text)
    if text.isprintable():
        return text
    return ''.join(c if c.isprintable() else c.encode('unicode_escape').decode('ascii')
                   for c in text)


def open_regular(path, error, limit, what):
    """A binary file object of ``path``, a regular file of at most ``limit`` bytes;
    ``error(path=..., reason=...)`` otherwise. Opening never blocks (``O_NONBLOCK``: a FIFO
    is refused after it is opened, not waited on)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise error(path=path, reason=exc.strerror or str(exc))
    try:
        mode = os.fstat(fd)
        if stat.S_ISDIR(mode.st_mode):
            raise error(path=path, reason='is a directory')
        if not stat.S_ISREG(mode.st_mode):
            raise error(path=path, reason='not a regular file (%s): a %s is read from a '
                                          'file' % (_kind(mode.st_mode), what))
        if mode.st_size > limit:
            raise error(path=path, reason='%d bytes, more than the %d a %s may have'
                                          % (mode.st_size, limit, what))
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, 'rb')
    except BaseException:
        os.close(fd)
        raise


def _kind(mode):
    for test, name in ((stat.S_ISFIFO, 'a FIFO'), (stat.S_ISCHR, 'a character device'),
                       (stat.S_ISBLK, 'a block device'), (stat.S_ISSOCK, 'a socket')):
        if test(mode):
            return name
    return 'not a file'


def read_json(path, error, limit, what):
    """The JSON document of the file ``path`` (see :func:`open_regular` and :func:`loads`)."""
    try:
        with open_regular(path, error, limit, what) as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise error(path=path, reason=exc.strerror or str(exc))
    if len(data) > limit:  # grew since it was looked at
        raise error(path=path, reason='more than the %d bytes a %s may have' % (limit, what))
    try:
        return loads(data)
    except ValueError as exc:
        raise error(path=path, reason='not JSON, or cut short (%s)' % exc)


def loads(data):
    """``data`` (bytes or text) as JSON; ValueError when it is not UTF-8 JSON, holds NaN,
    Infinity or a number past a float's range, or nests deeper than :data:`MAX_DEPTH`."""
    if isinstance(data, bytes):
        try:
            data = data.decode('utf-8')
        except UnicodeDecodeError as exc:
            raise ValueError('not UTF-8 text: %s' % exc)
    try:
        value = json.loads(data, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise ValueError('nested deeper than %d levels' % MAX_DEPTH)
    if depth(value) > MAX_DEPTH:
        raise ValueError('nested deeper than %d levels' % MAX_DEPTH)
    return value


def _no_constant(name):
    raise ValueError('%s is not a JSON number' % name)


def _finite(text):
    value = float(text)
    if not math.isfinite(value):
        raise ValueError('%s is out of range' % text[:40])
    return value


def depth(value):
    """The nesting of ``value``'s lists and dicts (a scalar is 0), without recursing."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        deepest = max(deepest, level)
        if level > MAX_DEPTH:
            return level
        stack.extend((child, level + 1) for child in item
                     if isinstance(child, (dict, list)))
    return deepest


def write_text(path, text, error):
    """Write ``text`` to ``path`` whole: a regular file (or a new one) through a temporary
    file renamed over it, so that a full disk leaves the old file or none, never half a new
    one; anything else that exists (``/dev/stdout``, a pipe with a reader) directly.
    ``error(path=..., reason=...)`` for any failure."""
    data = text.encode('utf-8')
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise error(path=path, reason=exc.strerror or str(exc))
    if mode is not None and stat.S_ISDIR(mode):
        raise error(path=path, reason='is a directory')
    try:
        if mode is None or stat.S_ISREG(mode):
            _replace(path, data)
        else:
            _write_to(path, data)
    except OSError as exc:
        raise error(path=path, reason=exc.strerror or str(exc))


def _replace(path, data):
    directory = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(dir=directory, prefix='.%s.' % os.path.basename(path),
                                     suffix='.tmp')
    try:
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o644 & ~_umask())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _write_to(path, data):
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads
            raise OSError(exc.errno, 'a FIFO with no reader')
        raise
    with os.fdopen(fd, 'wb') as handle:
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        handle.write(data)
        handle.flush()


def write_stdout(text, error):
    """Write ``text`` to standard output; ``error(path='standard output', reason=...)`` when
    it cannot be (``> /dev/full``), after which what is left unwritten goes nowhere (else
    the interpreter's last flush would fail again, with a traceback). A reader that went
    away (BrokenPipeError) is left to the command's caller."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        raise error(path='standard output', reason=exc.strerror or str(exc))
