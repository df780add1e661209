"""A private, throwaway RabbitMQ node that a test may stop and start again.

Why: the shared broker (``127.0.0.1:5672``) serves every test running at the same time, so a
test that needs "the broker is down for 20 s" cannot stop it. ``TcpProxy`` fakes an outage
for one cluster's connections; this module gives a real one: a node of its own (own name,
ports, Erlang cookie, database and logs in a temporary directory), started from the RabbitMQ
installed on this machine::

    broker = PrivateBroker()
    broker.start()          # rabbit://guest:guest@127.0.0.1:<port>/ accepts connections
    broker.stop_app()       # the outage
    broker.start_app()      # the recovery
    broker.close()          # node killed, temporary directory removed

The node is a :class:`minisched.localcluster.rabbit_node.Node` (what ``minisched-cluster
--rabbit-nodes`` uses too, through :class:`minisched.localcluster.rabbit_node.Cluster`, which joins
several); this module adds the temporary directory, the ``guest`` URL and the pytest fixture.

What ``stop_app()`` / ``start_app()`` (``rabbitmqctl stop_app`` / ``start_app``) mean for
clients: on ``stop_app`` every connection is closed by the broker (``CONNECTION_FORCED``) and
the AMQP port refuses new connections, while the Erlang node keeps running (``ctl()`` still
works). Durable queues and their persistent messages are kept on disk; messages delivered but
not acknowledged go back to their queue, marked redelivered. On ``start_app`` the port accepts
connections again, durable queues are back with those messages, and non-durable queues (with
their messages) are gone. Clients have to reconnect and declare again what they need.

The ``private_broker`` fixture (one node per test module) skips the test when no node can be
started here, or fails it when ``CI=true``. Import it into the test module::

    from tests.functional.private_broker import private_broker  # noqa: F401
"""
import itertools
import os
import shutil
import tempfile

import pytest

from minisched.localcluster import rabbit_node

PACKAGE_SCRIPTS = rabbit_node.PACKAGE_SCRIPTS
CTL_TIMEOUT = rabbit_node.CTL_TIMEOUT
LOG_TAIL_LINES = rabbit_node.LOG_TAIL_LINES
BrokerError = rabbit_node.BrokerError
_free_port = rabbit_node.free_port

_instances = itertools.count()


class PrivateBroker(rabbit_node.Node):
    """A RabbitMQ node of this process's own: ``start()``, ``stop_app()``, ``start_app()``,
    ``close()``.

    ``url``, ``port`` (AMQP, on 127.0.0.1) and ``nodename`` identify it; ``ctl(*args)`` runs
    ``rabbitmqctl`` against it. The ``guest`` user may log in, as it may over loopback on any
    fresh node. Its files go to a new temporary directory (``tmpdir``) at ``start()``;
    subclasses add to them by overriding ``_write_files``.
    """

    def __init__(self):
        super().__init__(None, name='minisched-test-%d-%d' % (os.getpid(), next(_instances)))
        self.tmpdir = None

    @property
    def url(self):
        return 'rabbit://guest:guest@127.0.0.1:%d/' % self.port

    def start(self, timeout=60):
        """Start the node; return once its AMQP port accepts and the app is running.

        Raises BrokerError (the node's output is in ``log_path``, see ``log_tail()``); call
        ``close()`` afterwards in any case.
        """
        assert self.tmpdir is None, 'already started'
        self.tmpdir = self.directory = self.cookie_home = tempfile.mkdtemp(
            prefix='minisched-rabbit-')
        self.watchdog_paths = (self.tmpdir,)  # removed too if this process dies first
        super().start(timeout)

    def prepare(self):
        self._write_files()

    def _write_files(self):
        """Write the node's files into ``tmpdir`` (ports chosen here)."""
        super().prepare()

    def close(self):
        """Kill the node (it is thrown away: no clean shutdown) and remove its directory.

        Idempotent.
        """
        super().close()
        tmpdir, self.tmpdir = self.tmpdir, None
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)

    def _path(self, name):
        return self.path(name)


@pytest.fixture(scope='module')
def private_broker():
    """A started PrivateBroker for the test module, closed after it.

    When no node can be started, the test is skipped, or failed when ``CI=true``.
    """
    broker = PrivateBroker()
    try:
        broker.start()
    except (BrokerError, OSError) as exc:
        tail = broker.log_tail()
        broker.close()
        _unavailable('no private RabbitMQ node: %s\n--- its output:\n%s' % (exc, tail))
    try:
        yield broker
    finally:
        broker.close()


def _unavailable(message):
    if os.environ.get('CI', '').lower() == 'true':
        pytest.fail(message)
    pytest.skip(message)
