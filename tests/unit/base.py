"""Base class of unit tests: isolated config with ``self.flags``, objects registered."""
import importlib
import os
import tempfile
import unittest
from unittest import mock

import oslo_messaging as messaging
from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslo_utils.fixture import uuidsentinel

from minisched import conf as _conf  # noqa: F401  (registers every option)
from minisched.conf import opts as conf_opts
from minisched import monkey_patch
from minisched import objects
from minisched import rpc
from minisched.servicegroup import outages

objects.register_all()

uuids = uuidsentinel


def import_without_eventlet(name):
    """Import ``name``, a ``minisched.cmd`` module, into this test process, which keeps
    native threads: the process embeds minisched (``monkey_patch.embed()`` in
    tests/conftest.py), so the module's own ``monkey_patch.patch()`` changes nothing."""
    monkey_patch.embed()
    return importlib.import_module(name)


class TestCase(unittest.TestCase):
    """Unit test base: ``self.conf`` is the global CONF, reset after each test."""

    def setUp(self):
        super().setUp()
        self._config_fixture = config_fixture.Config(cfg.CONF)
        self._config_fixture.setUp()
        self.addCleanup(self._config_fixture.cleanUp)
        self.conf = cfg.CONF
        self.conf([], project='minisched', default_config_files=[], default_config_dirs=[])
        # No Placement answers a unit test: the path without it, unless a test asks for it.
        self.flags(enabled=False, group='placement')
        # This process's outages (servicegroup.outages) are the test's own.
        patcher = mock.patch.object(outages, 'OWN', outages.Outages())
        patcher.start()
        self.addCleanup(patcher.stop)

    def private_conf(self, text=''):
        """A ConfigOpts of this test's own with every minisched option, reading ``text`` as
        its one config file (as a service parses its files)."""
        fd, path = tempfile.mkstemp(suffix='.conf')
        self.addCleanup(os.unlink, path)
        with os.fdopen(fd, 'w') as f:
            f.write(text)
        conf = cfg.ConfigOpts()
        for module in conf_opts._MODULES:
            module.register_opts(conf)
        conf(['--config-file', path], project='minisched', default_config_files=[],
             default_config_dirs=[])
        self.addCleanup(conf.reset)
        return conf

    def flags(self, group=None, **kw):
        """Override options for this test only."""
        for name, value in kw.items():
            self._config_fixture.config(group=group, **{name: value})

    def use_fake_transport(self):
        """Point ``minisched.rpc`` at oslo.messaging's in-memory driver for this test: RPC
        clients can be built and casts sent; notifications go nowhere."""
        transport = messaging.get_rpc_transport(self.conf, url='fake:/')
        self.addCleanup(transport.cleanup)
        notifier = messaging.Notifier(transport, driver='noop')
        for name, value in (('TRANSPORT', transport), ('NOTIFICATION_TRANSPORT', transport),
                            ('NOTIFIER', notifier)):
            patcher = mock.patch.object(rpc, name, value)
            patcher.start()
            self.addCleanup(patcher.stop)
