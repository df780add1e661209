"""minisched.db.markers: a change marker per SQLite file, None where none can be had."""
import os
import subprocess
import sys

import pytest
import sqlalchemy as sa

from minisched import exception
from minisched.db import engines
from minisched.db import markers


@pytest.fixture(autouse=True)
def fresh_watchers():
    markers.forget_all()
    yield
    markers.forget_all()


def _make_file(path):
    with sa.create_engine('sqlite:///%s' % path, poolclass=sa.pool.NullPool).begin() as conn:
        conn.execute(sa.text('PRAGMA journal_mode=WAL'))
        conn.execute(sa.text('CREATE TABLE t (v INTEGER)'))
    return 'sqlite:///%s' % path


def _insert(url, value):
    with sa.create_engine(url, poolclass=sa.pool.NullPool).begin() as conn:
        conn.execute(sa.text('INSERT INTO t VALUES (%d)' % value))


def test_marker_stays_equal_while_nothing_is_committed(tmp_path):
    url = _make_file(tmp_path / 'cell.db')
    first = markers.current(url)
    assert first is not None
    assert markers.current(url) == first
    with sa.create_engine(url, poolclass=sa.pool.NullPool).connect() as conn:
        conn.execute(sa.text('SELECT * FROM t')).fetchall()  # reads change nothing
    assert markers.current(url) == first


def test_commit_of_another_connection_changes_the_marker(tmp_path):
    url = _make_file(tmp_path / 'cell.db')
    before = markers.current(url)
    _insert(url, 1)
    after = markers.current(url)
    assert after != before
    assert markers.current(url) == after


def test_commit_of_another_process_changes_the_marker(tmp_path):
    url = _make_file(tmp_path / 'cell.db')
    before = markers.current(url)
    code = ('import sqlite3; c = sqlite3.connect(%r); c.execute("INSERT INTO t VALUES (7)"); '
            'c.commit()' % str(tmp_path / 'cell.db'))
    subprocess.run([sys.executable, '-c', code], check=True)
    assert markers.current(url) != before


def test_uncommitted_write_does_not_change_the_marker(tmp_path):
    url = _make_file(tmp_path / 'cell.db')
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    before = markers.current(url)
    with engine.connect() as conn:
        trans = conn.begin()
        conn.execute(sa.text('INSERT INTO t VALUES (1)'))
        assert markers.current(url) == before
        trans.rollback()
    assert markers.current(url) == before


def test_replaced_file_gives_a_new_marker_and_missing_file_none(tmp_path):
    path = tmp_path / 'cell.db'
    url = _make_file(path)
    before = markers.current(url)
    os.rename(path, tmp_path / 'moved.db')
    assert markers.current(url) is None  # the caller's own query meets the error
    _make_file(path)
    replaced = markers.current(url)
    assert replaced is not None and replaced != before


@pytest.mark.parametrize('url', ['postgresql+psycopg2://u:p@127.0.0.1:1/x',
                                 'mysql+pymysql://root@127.0.0.1:1/x', 'sqlite://',
                                 'not a url at all'])
def test_backends_without_a_marker_answer_none_without_connecting(url):
    assert markers.current(url) is None


def test_refused_where_database_access_is_blocked(tmp_path):
    url = _make_file(tmp_path / 'cell.db')
    engines.block_db_access('minisched-compute')
    try:
        with pytest.raises(exception.DBNotAllowed):
            markers.current(url)
    finally:
        engines.unblock_db_access()
