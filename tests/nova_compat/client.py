"""The pytest side's handle on a Nova test server (:mod:`tests.nova_compat.server`).

Each pytest process (each xdist worker) starts one server when it collects the Nova tests,
reads the list of test ids from it, and has it run each test it is given, so that the Nova
tests spread over the workers like any others. Nothing of Nova is imported here.
"""
import atexit
import importlib.metadata
import importlib.util
import json
import os
import select
import subprocess
import sys
import tempfile
import time

#: The Nova release whose tests these are (the ``nova-tests`` extra pins it).
NOVA_VERSION = '34.0.0'
#: Modules the server needs besides minisched's own dependencies (the ``nova-tests`` extra).
REQUIRED = ('nova', 'oslotest', 'testtools', 'wsgi_intercept')
STARTUP_SECONDS = 180
TEST_SECONDS = 120
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def missing():
    """Why the Nova tests cannot run in this environment, or None when they can."""
    absent = [name for name in REQUIRED if importlib.util.find_spec(name) is None]
    if absent:
        return ('%s not installed: pip install -e ".[test,nova-tests]"'
                % ', '.join(absent))
    version = importlib.metadata.version('nova')
    if version != NOVA_VERSION:
        return 'nova %s is installed; these are the tests of nova %s' % (version,
                                                                        NOVA_VERSION)
    return None


class ServerError(Exception):
    """The server died, hung or answered nonsense; the text ends with what it printed."""


class NovaTestServer:
    """One ``python -m tests.nova_compat.server`` process (restarted after a failure)."""

    def __init__(self):
        self._proc = None
        self._buffer = b''
        self._stderr = None
        self.ids = self._start()
        atexit.register(self.stop)

    def _start(self):
        self._stderr = tempfile.TemporaryFile()
        self._buffer = b''
        self._proc = subprocess.Popen(
            [sys.executable, '-m', 'tests.nova_compat.server'], cwd=_ROOT,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr)
        return json.loads(self._read_line(STARTUP_SECONDS, 'starting'))['ids']

    def run(self, test_id):
        """Run one Nova test: ``(outcome, text)``, outcome one of passed, failed, error or
        skipped (see the server's docstring)."""
        if self._proc is None:
            self._start()
        try:
            self._proc.stdin.write(test_id.encode() + b'\n')
            self._proc.stdin.flush()
            answer = json.loads(self._read_line(TEST_SECONDS, 'running %s' % test_id))
        except (OSError, ValueError, ServerError) as exc:
            self.stop()  # the next test gets a fresh server
            raise ServerError(str(exc)) from None
        return answer['outcome'], answer['text']

    def _read_line(self, seconds, doing):
        deadline = time.monotonic() + seconds
        out = self._proc.stdout.fileno()
        while b'\n' not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ServerError(self._report('no answer within %d s while %s'
                                               % (seconds, doing)))
            ready, _, _ = select.select([out], [], [], left)
            if ready:
                chunk = os.read(out, 65536)
                if not chunk:
                    self._proc.wait()
                    raise ServerError(self._report('the server exited (status %s) while %s'
                                                   % (self._proc.returncode, doing)))
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b'\n')
        return line.decode()

    def _report(self, what):
        self._stderr.seek(0)
        tail = self._stderr.read().decode(errors='replace')[-6000:]
        return 'Nova test server: %s. Its last output:\n%s' % (what, tail)

    def stop(self):
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()  # the server ends at the end of its input
            proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        proc.stdout.close()
