"""etc/minisched/logging.conf.sample loads as oslo.log loads it and formats with context."""
import configparser
import io
import logging
import logging.config
import os

from oslo_config import cfg
from oslo_log import log

from minisched import context
from tests.unit import base

_SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))), 'etc', 'minisched', 'logging.conf.sample')


def _logger_names():
    parser = configparser.ConfigParser()
    parser.read(_SAMPLE)
    return [parser['logger_%s' % key.strip()].get('qualname')
            for key in parser['loggers']['keys'].split(',') if key.strip() != 'root']


class TestLoggingSample(base.TestCase):

    def setUp(self):
        super().setUp()
        self._save_logging_state()

    def _save_logging_state(self):
        saved = []
        for name in [None] + _logger_names():
            logger = logging.getLogger(name)
            saved.append((logger, logger.level, list(logger.handlers), logger.propagate,
                          logger.disabled))

        def restore():
            for logger, level, handlers, propagate, disabled in saved:
                for handler in logger.handlers:
                    if handler not in handlers:
                        handler.close()
                logger.setLevel(level)
                logger.handlers = handlers
                logger.propagate = propagate
                logger.disabled = disabled

        self.addCleanup(restore)

    def test_loads_like_oslo_log_and_configures_minisched(self):
        logging.config.fileConfig(_SAMPLE, disable_existing_loggers=False)
        logger = logging.getLogger('minisched')
        self.assertEqual(logging.INFO, logger.level)
        self.assertFalse(logger.propagate)
        self.assertEqual(logging.WARNING, logging.getLogger().level)
        formatter = logger.handlers[0].formatter
        self.assertEqual('ContextFormatter', type(formatter).__name__)

    def test_context_formatter_adds_the_request_id(self):
        logging.config.fileConfig(_SAMPLE, disable_existing_loggers=False)
        formatter = logging.getLogger('minisched').handlers[0].formatter
        # The formatter reads oslo.log's format options; give it a private ConfigOpts.
        formatter.conf = cfg.ConfigOpts()
        log.register_options(formatter.conf)
        formatter.conf([], project='minisched', default_config_files=[],
                       default_config_dirs=[])
        ctxt = context.RequestContext(user_id='u1', project_id='p1', overwrite=False)
        record = logging.LogRecord('minisched.test', logging.INFO, __file__, 1,
                                   'hello %s', ('world',), None)
        record.context = ctxt
        line = formatter.format(record)
        self.assertIn('hello world', line)
        self.assertIn(ctxt.request_id, line)

    def test_every_logger_section_is_well_formed(self):
        parser = configparser.ConfigParser()
        parser.read(_SAMPLE)
        handlers = {h.strip() for h in parser['handlers']['keys'].split(',')}
        for key in parser['loggers']['keys'].split(','):
            section = parser['logger_%s' % key.strip()]
            self.assertIn(section['level'], ('DEBUG', 'INFO', 'WARNING', 'ERROR'))
            for handler in section['handlers'].split(','):
                self.assertIn(handler.strip(), handlers, key)
        stream = io.StringIO()
        parser.write(stream)  # round-trips as plain INI
