"""Change markers: has anything been committed to a database since I last looked?

The scheduler refreshes its host states on every request. For an SQLite file (the embedded
default) ``PRAGMA data_version`` answers that question in microseconds: asked twice on the same
connection, its value differs exactly when another connection, in any process, committed to
the file in between. :func:`current` keeps one read-only connection per file and process for
asking it, and returns a marker that compares equal only while nothing was committed; the
caller skips its queries when the marker it read before its last queries is still current.

Other backends have no such cheap question: :func:`current` returns None (unknown) and the
caller runs its (indexed) queries as before. None is also the answer when the file is gone or
cannot be opened, so the caller's queries then meet the error themselves.
"""
import os
import sqlite3
import threading

from sqlalchemy.engine import url as sa_url

from minisched.db import engines

_lock = threading.Lock()
_watchers = {}  # (pid, url) -> _FileWatcher


def current(url):
    """A marker of the database at ``url`` that stays equal while nothing is committed to
    it, or None when no such marker can be had (not an SQLite file, file missing)."""
    engines.check_allowed()
    key = (os.getpid(), url)  # sqlite3 connections must not cross a fork
    watcher = _watchers.get(key)
    if watcher is None:
        path = _sqlite_path(url)
        if path is None:
            return None
        with _lock:
            watcher = _watchers.setdefault(key, _FileWatcher(path))
    return watcher.marker()


def forget_all():
    """Close every watcher of this process (tests that drop or replace databases)."""
    with _lock:
        watchers = [w for (pid, _url), w in _watchers.items() if pid == os.getpid()]
        _watchers.clear()
    for watcher in watchers:
        watcher.close()


def _sqlite_path(url):
    try:
        parsed = sa_url.make_url(url)
    except Exception:
        return None
    if parsed.get_backend_name() != 'sqlite' or parsed.database in (None, '', ':memory:'):
        return None
    return os.path.abspath(parsed.database)


class _FileWatcher:
    """A read-only connection to one SQLite file, reopened when the path names another file."""

    def __init__(self, path):
        self.path = path
        self._lock = threading.Lock()
        self._conn = None
        self._identity = None
        self._generation = 0  # data_version values of different connections never compare

    def marker(self):
        try:
            stat = os.stat(self.path)
        except OSError:
            self.close()
            return None
        identity = (stat.st_dev, stat.st_ino)
        with self._lock:
            try:
                if self._conn is None or identity != self._identity:
                    self._reopen(identity)
                version = self._conn.execute('PRAGMA data_version').fetchone()[0]
            except sqlite3.Error:
                self._close_locked()
                return None
            return self._generation, version

    def _reopen(self, identity):
        self._close_locked()
        self._conn = sqlite3.connect('file:%s?mode=ro' % self.path, uri=True,
                                     check_same_thread=False, isolation_level=None)
        self._identity = identity
        self._generation += 1

    def close(self):
        with self._lock:
            self._close_locked()

    def _close_locked(self):
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
        self._conn = None
        self._identity = None
