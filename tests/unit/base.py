"""Base class of unit tests: isolated config with ``self.flags``, objects registered."""
import unittest

from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslo_utils.fixture import uuidsentinel

from minisched import conf as _conf  # noqa: F401  (registers every option)
from minisched import objects

objects.register_all()

uuids = uuidsentinel


class TestCase(unittest.TestCase):
    """Unit test base: ``self.conf`` is the global CONF, reset after each test."""

    def setUp(self):
        super().setUp()
        self._config_fixture = config_fixture.Config(cfg.CONF)
        self._config_fixture.setUp()
        self.addCleanup(self._config_fixture.cleanUp)
        self.conf = cfg.CONF
        self.conf([], project='minisched', default_config_files=[], default_config_dirs=[])

    def flags(self, group=None, **kw):
        """Override options for this test only."""
        for name, value in kw.items():
            self._config_fixture.config(group=group, **{name: value})
