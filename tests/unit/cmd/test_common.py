"""minisched.cmd.common.check_database: wait for the database, stop only on what the operator
must fix."""
import logging
import os
import signal
import time
from unittest import mock

import pytest
import sqlalchemy as sa

from minisched.db import engines
from minisched.db import revisions
from tests.unit import base

common = base.import_without_eventlet('minisched.cmd.common')

URL = 'postgresql+psycopg2://minisched:s3cret@db.example:5432/minisched'
MASKED = 'postgresql+psycopg2://minisched:****@db.example:5432/minisched'
HEAD = revisions.known('main')[0]
UNREACHABLE = sa.exc.OperationalError('SELECT 1', {}, Exception(
    'connection to server failed: Connection refused\n\tIs the server running?'))


@pytest.fixture
def database(monkeypatch):
    """``answers(*outcomes)``: what each attempt to read the revision gives (an exception:
    the database did not answer); the pauses taken between attempts are in ``pauses``."""
    monkeypatch.setattr(engines, 'configured_url_problems', lambda: [])
    monkeypatch.setattr(engines, 'configured_url', lambda database: URL)
    state = {'outcomes': [], 'pauses': []}

    def read_revision(url, database):
        assert url == URL
        outcome = state['outcomes'].pop(0)
        return (None, outcome) if isinstance(outcome, Exception) else (outcome, None)
    monkeypatch.setattr(common, '_read_revision', read_revision)
    monkeypatch.setattr(common.time, 'sleep', state['pauses'].append)

    def answers(*outcomes):
        state['outcomes'][:] = outcomes
        return state
    return answers


def _at(revision):
    return revision, HEAD, True


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_waits_with_one_warning_per_attempt_then_starts(database, caplog):
    state = database(UNREACHABLE, UNREACHABLE, UNREACHABLE, _at(HEAD))
    with caplog.at_level(logging.INFO):
        common.check_database('minisched-conductor')
    assert state['pauses'] == [1, 2, 4]
    assert _warnings(caplog) == [
        'Waiting for the database: [database] connection %s did not answer (attempt %d): '
        '(builtins.Exception) connection to server failed: Connection refused; retrying in '
        '%d s' % (MASKED, attempt, pause) for attempt, pause in ((1, 1), (2, 2), (3, 4))]
    assert 's3cret' not in caplog.text
    assert '[database] connection %s answered after 4 attempts' % MASKED in caplog.text


def test_the_pause_doubles_up_to_30_seconds(database):
    state = database(*[UNREACHABLE] * 8, _at(HEAD))
    common.check_database('minisched-scheduler')
    assert state['pauses'] == [1, 2, 4, 8, 16, 30, 30, 30]


def test_a_database_answering_at_once_is_not_waited_for(database, caplog):
    state = database(_at(HEAD))
    with caplog.at_level(logging.INFO):
        common.check_database('minisched-conductor')
    assert state['pauses'] == [] and caplog.text == ''


def test_no_schema_once_it_answers_exits_1_with_one_line(database, capsys):
    database(UNREACHABLE, _at(None))
    with pytest.raises(SystemExit) as exited:
        common.check_database('minisched-conductor')
    assert exited.value.code == 1
    assert capsys.readouterr().err.splitlines() == [
        "minisched-conductor: error: [database] connection %s has no minisched schema: run "
        "'minisched-manage db sync' first" % MASKED]


def test_an_unusable_url_exits_1_without_waiting(database, monkeypatch, capsys):
    state = database(UNREACHABLE)
    monkeypatch.setattr(engines, 'configured_url_problems', lambda: [
        'invalid value for [database] connection: Can\'t load plugin: nosuchdb'])
    with pytest.raises(SystemExit) as exited:
        common.check_database('minisched-conductor')
    assert exited.value.code == 1 and state['pauses'] == []
    assert len(capsys.readouterr().err.splitlines()) == 1


def test_sigterm_while_waiting_exits_0_at_once(database, monkeypatch, caplog):
    before = signal.getsignal(signal.SIGTERM)
    state = database(UNREACHABLE, UNREACHABLE)

    def sleep(seconds):
        state['pauses'].append(seconds)
        os.kill(os.getpid(), signal.SIGTERM)  # the handler check_database installed runs
        time.sleep(5)                         # and ends this sleep at once
    monkeypatch.setattr(common.time, 'sleep', sleep)
    started = time.monotonic()
    with caplog.at_level(logging.INFO), pytest.raises(SystemExit) as exited:
        common.check_database('minisched-conductor')
    assert exited.value.code == 0 and time.monotonic() - started < 2
    assert state['pauses'] == [1]
    assert 'Stopping on signal 15 while waiting for the database.' in caplog.text
    assert signal.getsignal(signal.SIGTERM) is before


def test_reading_the_revision_reports_an_unreachable_server_without_raising():
    with mock.patch.object(engines, 'CONNECT_TIMEOUT', 2):
        status, error = common._read_revision(
            'postgresql+psycopg2://u:p@127.0.0.1:1/nothing', 'main')
    assert status is None and isinstance(error, sa.exc.OperationalError)
    assert engines._engines == {}  # a throwaway engine, disposed of


def test_reading_the_revision_of_an_empty_sqlite_file(tmp_path):
    status, error = common._read_revision('sqlite:///%s' % (tmp_path / 'new.sqlite'), 'main')
    assert error is None and status[:2] == (None, HEAD)
