"""minisched.config.check_values: a bad value in a config file stops the command, naming it."""
import contextlib
import io
import os
import tempfile

from oslo_config import cfg

from minisched import config
from minisched.conf import opts
from tests.unit import base


class TestCheckValues(base.TestCase):

    def _conf(self, text):
        """A private ConfigOpts with every minisched option, reading ``text`` as its file."""
        fd, path = tempfile.mkstemp(suffix='.conf')
        self.addCleanup(os.unlink, path)
        with os.fdopen(fd, 'w') as f:
            f.write(text)
        conf = cfg.ConfigOpts()
        for module in opts._MODULES:
            module.register_opts(conf)
        conf(['--config-file', path], project='minisched', default_config_files=[],
             default_config_dirs=[])
        self.addCleanup(conf.reset)
        return conf

    def _check(self, conf):
        """Run check_values; return (exit code or None, stderr lines)."""
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            try:
                config.check_values(conf, 'minisched-test')
            except SystemExit as exc:
                return exc.code, stderr.getvalue().splitlines()
        return None, stderr.getvalue().splitlines()

    def test_good_config_passes(self):
        conf = self._conf('[DEFAULT]\nreport_interval = 5\nservice_down_time = 30\n'
                          '[scheduler]\nmax_attempts = 2\n'
                          '[notifications]\nnotification_format = versioned\n')
        self.assertEqual((None, []), self._check(conf))
        self.assertEqual((5, 2), (conf.report_interval, conf.scheduler.max_attempts))

    def test_empty_config_passes(self):
        self.assertEqual((None, []), self._check(self._conf('')))

    def test_bad_int_in_default_exits_1_naming_the_option(self):
        code, lines = self._check(self._conf('[DEFAULT]\nreport_interval = often\n'))
        self.assertEqual(1, code)
        self.assertEqual(1, len(lines), lines)
        self.assertTrue(lines[0].startswith(
            'minisched-test: error: invalid value for [DEFAULT] report_interval: '), lines[0])
        self.assertIn('often', lines[0])

    def test_bad_int_in_a_group_names_the_group(self):
        code, lines = self._check(self._conf('[scheduler]\nmax_attempts = three\n'))
        self.assertEqual(1, code)
        self.assertEqual(1, len(lines), lines)
        self.assertIn('invalid value for [scheduler] max_attempts', lines[0])

    def test_int_below_minimum_exits_1(self):
        code, lines = self._check(self._conf('[scheduler]\nmax_attempts = 0\n'))
        self.assertEqual(1, code)
        self.assertIn('[scheduler] max_attempts', lines[0])

    def test_bad_choice_exits_1_naming_the_option(self):
        code, lines = self._check(self._conf('[notifications]\nnotification_format = xml\n'))
        self.assertEqual(1, code)
        self.assertEqual(1, len(lines), lines)
        self.assertIn('invalid value for [notifications] notification_format', lines[0])
        self.assertIn("'xml'", lines[0])

    def test_bad_choice_in_default_exits_1(self):
        code, lines = self._check(self._conf('[DEFAULT]\nservicegroup_driver = mc\n'))
        self.assertEqual(1, code)
        self.assertIn('[DEFAULT] servicegroup_driver', lines[0])

    def test_bad_bool_and_float_exit_1(self):
        for text, name in (('[DEFAULT]\nenable_new_services = maybe\n', 'enable_new_services'),
                           ('[filter_scheduler]\nram_weight_multiplier = lots\n',
                            '[filter_scheduler] ram_weight_multiplier')):
            code, lines = self._check(self._conf(text))
            self.assertEqual(1, code, text)
            self.assertIn(name, lines[0])

    def test_unknown_options_and_groups_are_ignored(self):
        conf = self._conf('[DEFAULT]\nno_such_option = 1\n[no_such_group]\nx = y\n')
        self.assertEqual((None, []), self._check(conf))
