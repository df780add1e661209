"""Record each select_destinations a worker answers, for ``minisched-manage scheduler replay``.

With ``[scheduler] record_requests_to = DIR``, every request is appended to
``DIR/requests-<pid>.jsonl`` as one JSON line: the RequestSpec as it arrived (its primitive),
the instance uuids, and the answer (host and node per instance, or NoValidHost with its
reason). A file that a record would take past ``MAX_BYTES`` is rotated first (``.1`` is
the newest older one, ``BACKUPS`` are kept). Recording must never fail a request: any
error is logged, as one WARNING the first time, and the request is answered as usual.

A file holds whole lines only: a record is written with one ``write`` at the end of the
file, and a write that fails part way (a full disk) is cut off again (``ftruncate`` to where
the line began); a file found not ending in a line break when it is opened (the process was
killed mid-write, or the cut failed too) loses its partial last line first. Recording then
resumes on a clean line once space is back, and every line of the file replays.
"""
import errno
import itertools
import json
import logging
import os
import threading

from oslo_utils import timeutils

LOG = logging.getLogger(__name__)

VERSION = 1
MAX_BYTES = 64 * 1024 * 1024
BACKUPS = 9
PREFIX = 'requests-'
SUFFIX = '.jsonl'


class RequestRecorder:
    """Appends requests and answers to a rotating file of this process in ``directory``."""

    def __init__(self, directory, max_bytes=MAX_BYTES, backups=BACKUPS):
        self.directory = directory
        self.max_bytes = max_bytes
        self.backups = backups
        self._lock = threading.Lock()
        self._fd = None
        self._pid = None
        self._sequence = itertools.count()
        self._warned = False

    @classmethod
    def from_conf(cls, conf):
        """A recorder when ``[scheduler] record_requests_to`` is set, else None."""
        directory = conf.scheduler.record_requests_to
        return cls(directory) if directory else None

    def start(self, spec_obj, instance_uuids, return_alternates):
        """What to keep of a request before it is scheduled (scheduling changes the spec);
        None when that failed."""
        try:
            return {'version': VERSION, 'request_spec': spec_obj.obj_to_primitive(),
                    'instance_uuids': list(instance_uuids) if instance_uuids else None,
                    'return_alternates': bool(return_alternates)}
        except Exception as exc:
            self._failed(exc)
            return None

    def finish(self, started, selections=None, error=None):
        """Append the request ``started`` with its answer: ``selections`` (per instance, the
        chosen Selection first) or ``error`` (the NoValidHost raised)."""
        if started is None:
            return
        try:
            record = dict(started, time=timeutils.utcnow().isoformat())
            if error is not None:
                record['error'] = {'type': type(error).__name__,
                                   'reason': error.format_message()}
            else:
                record['answer'] = [{'host': sel[0].service_host, 'nodename': sel[0].nodename}
                                    for sel in selections]
            self._append(record)
        except Exception as exc:
            self._failed(exc)

    def _append(self, record):
        with self._lock:
            fd = self._open()
            record['pid'], record['sequence'] = self._pid, next(self._sequence)
            line = (json.dumps(record, sort_keys=True, default=str) + '\n').encode('utf-8')
            start = os.fstat(fd).st_size
            if start and start + len(line) > self.max_bytes:
                self._rotate()  # before: no file grows past max_bytes but for one record
                fd, start = self._open(), 0
            _write_line(fd, line, start)

    def _path(self):
        return os.path.join(self.directory, '%s%d%s' % (PREFIX, self._pid, SUFFIX))

    def _open(self):
        if self._pid != os.getpid():  # a worker forked from the process that made this
            self._fd = None
            self._pid = os.getpid()
        if self._fd is None:
            os.makedirs(self.directory, exist_ok=True)
            fd = os.open(self._path(), os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC,
                         0o644)
            try:
                _drop_partial_line(fd)
            except OSError:
                os.close(fd)
                raise
            self._fd = fd
        return self._fd

    def _close(self):
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None

    def _rotate(self):
        self._close()
        path = self._path()
        for index in range(self.backups - 1, 0, -1):
            if os.path.exists('%s.%d' % (path, index)):
                os.replace('%s.%d' % (path, index), '%s.%d' % (path, index + 1))
        if self.backups:
            os.replace(path, path + '.1')
        else:
            os.remove(path)

    def _failed(self, exc):
        with self._lock:
            self._close()  # opened again next time: the directory may be back
        if not self._warned:
            self._warned = True
            LOG.warning('Cannot record scheduler requests to %s (%s: %s); requests are '
                        'answered as usual and not recorded. Set [scheduler] '
                        'record_requests_to to a writable directory, or unset it.',
                        self.directory, type(exc).__name__, exc)
        else:
            LOG.debug('Request not recorded: %s', exc)


def _write_line(fd, line, start):
    """Append ``line`` (bytes) to ``fd``, which ends at ``start``: all of it, or none of it
    (what a failed write left is cut off before the error goes on)."""
    done = 0
    try:
        while done < len(line):
            written = os.write(fd, line[done:])
            if not written:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            done += written
    except BaseException:
        if done:
            os.ftruncate(fd, start)
        raise


def _drop_partial_line(fd):
    """Cut the file ``fd`` back to its last line break (nothing when it ends in one)."""
    size = os.fstat(fd).st_size
    if not size or os.pread(fd, 1, size - 1) == b'\n':
        return
    end = size
    while end > 0:
        begin = max(0, end - 65536)
        chunk = os.pread(fd, end - begin, begin)
        cut = chunk.rfind(b'\n')
        if cut >= 0:
            os.ftruncate(fd, begin + cut + 1)
            return
        end = begin
    os.ftruncate(fd, 0)
